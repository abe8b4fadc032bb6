// Every server setting, once: its flag, environment variable, config-file key, default and
// meaning. The CLI's options, --help and the precedence rules are all built from this table.
import { readFileSync } from 'node:fs';
import {
  DEFAULT_BODY_LIMITS,
  DEFAULT_GROUP_LIMITS,
  DEFAULT_PRIMARY_KEY_CACHE_ENTRIES,
  DEFAULT_RECORD_CACHE_ENTRIES,
  DEFAULT_REPLICA_CHECK_INTERVAL_MS,
  DEFAULT_REPLICA_MAX_LAG_MS,
  DEFAULT_REPLICA_WAIT_MS,
  DEFAULT_PREPARED_READS_PER_CONNECTION,
  DEFAULT_VERSION_CACHE_BYTES,
  type ReplicaConfig,
  type StoreShape,
  redactUrl,
} from '../engine/index.js';
import { DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_PIPELINE_CALLS } from '../grpc/server.js';

interface SettingDefinition<T> {
  /**
   * `store`: what the data is and where it lives; every server of a store must agree, and
   * `shameless plan` takes these too. `server`: how this one process serves.
   */
  scope: 'store' | 'server';
  flag: string;
  env: string;
  description: string;
  defaultValue: T;
  parse(text: string): T;
}

const integer =
  (min: number, max = Number.MAX_SAFE_INTEGER) =>
  (text: string): number => {
    const value = Number(text);
    if (!Number.isInteger(value) || value < min || value > max) {
      throw new Error(`expected an integer from ${min} to ${max}, got ${JSON.stringify(text)}`);
    }
    return value;
  };
const text = (value: string) => value;
const boolean = (value: string): boolean => {
  const word = value.trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(word)) return true;
  if (['false', '0', 'no', 'off'].includes(word)) return false;
  throw new Error(`expected true or false, got ${JSON.stringify(value)}`);
};
// host:port, the host a name, an IPv4 address or a bracketed IPv6 one. Checked here so that a
// typo is named as the flag's, not met later as a bind error or the loopback rule's refusal.
const HOST_PORT = /^(\[[0-9a-fA-F:.]+\]|[^\s:[\]]+):(\d{1,5})$/;
const hostPort =
  (others: { empty?: boolean; grpcForms?: boolean } = {}) =>
  (value: string): string => {
    if (others.empty && value === '') return value;
    // What grpc-js binds besides: a Unix socket, and host:port after a resolver scheme.
    if (others.grpcForms && /^unix(-abstract)?:./.test(value)) return value;
    const address = others.grpcForms ? value.replace(/^(dns|ipv4|ipv6):(\/\/\/)?/, '') : value;
    const match = HOST_PORT.exec(address);
    if (!match || Number(match[2]) > 65535) {
      throw new Error(
        `expected host:port with a port from 0 to 65535 (e.g. 127.0.0.1:50051), got ${JSON.stringify(value)}`,
      );
    }
    return value;
  };
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
const logLevel = (value: string): string => {
  if (!LOG_LEVELS.includes(value)) {
    throw new Error(`expected one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(value)}`);
  }
  return value;
};
const urlList = (value: string) =>
  value
    .split(',')
    .map((url) => url.trim())
    .filter((url) => url !== '');

// `<partition>=<url>`, comma-separated: the partition's index, then a MySQL URL.
const replicaList = (value: string): ReplicaConfig[] =>
  urlList(value).map((item) => {
    const equals = item.indexOf('=');
    const partition = Number(item.slice(0, equals));
    if (equals < 1 || !Number.isInteger(partition) || partition < 0) {
      throw new Error(
        `expected <partition index>=<mysql url> (e.g. 0=mysql://reader@10.0.0.7:3306/shameless), got ${JSON.stringify(redactUrl(item))}`,
      );
    }
    return { partition, url: item.slice(equals + 1) };
  });

export const SETTINGS = {
  partitions: {
    scope: 'store',
    flag: '--partition <url...>',
    env: 'SHAMELESS_PARTITIONS',
    description:
      "MySQL URL of each partition, in a fixed order (env: comma-separated); serve creates a database that is missing. A partition on a Galera cluster lists its nodes' URLs joined by | (quote it in a shell), each naming the same database: the server writes through one and moves to the next when it fails. TLS to MySQL: ?ssl-ca=<pem> (ssl-mode verify-identity), ssl-mode=required|verify-ca|verify-identity, ssl-cert and ssl-key",
    defaultValue: ['mysql://root@127.0.0.1:3306/shameless'],
    parse: urlList,
  },
  replicas: {
    scope: 'server',
    flag: '--replica <partition=url...>',
    env: 'SHAMELESS_REPLICAS',
    description:
      "a read replica of a partition's primary: the partition's index, =, and the replica's MySQL URL (repeat the flag for each; env: comma-separated). Replication is MariaDB's (GTID, set up by you; the primary needs log-bin); reads that ask for session or bounded consistency may be answered there (docs/consistency.md), writes never",
    defaultValue: [] as ReplicaConfig[],
    parse: replicaList,
  },
  replicaCheckMs: {
    scope: 'server',
    flag: '--replica-check-ms <ms>',
    env: 'SHAMELESS_REPLICA_CHECK_MS',
    description:
      "how often each replica's lag is measured (its GTID position against its primary's: one statement on each); a replica that does not answer within it leaves the rotation until it does",
    defaultValue: DEFAULT_REPLICA_CHECK_INTERVAL_MS,
    parse: integer(10, 60_000),
  },
  replicaMaxLagMs: {
    scope: 'server',
    flag: '--replica-max-lag-ms <ms>',
    env: 'SHAMELESS_REPLICA_MAX_LAG_MS',
    description:
      'how stale a replica may be (measured to within --replica-check-ms) and still serve reads; staler, or stopped while its primary takes writes, it leaves the rotation until it catches up, and its reads go to the primary',
    defaultValue: DEFAULT_REPLICA_MAX_LAG_MS,
    parse: integer(0),
  },
  replicaWaitMs: {
    scope: 'server',
    flag: '--replica-wait-ms <ms>',
    env: 'SHAMELESS_REPLICA_WAIT_MS',
    description:
      'how long a session read waits (MASTER_GTID_WAIT) for a replica to apply the writes its token names before it reads the primary instead',
    defaultValue: DEFAULT_REPLICA_WAIT_MS,
    parse: integer(0, 60_000),
  },
  shardsCount: {
    scope: 'store',
    flag: '--shards-count <n>',
    env: 'SHAMELESS_SHARDS_COUNT',
    description:
      'logical shards across all partitions; a multiple of the partition count, fixed for the life of the store',
    defaultValue: 16,
    parse: integer(1, 999_999),
  },
  namespace: {
    scope: 'store',
    flag: '--namespace <name>',
    env: 'SHAMELESS_NAMESPACE',
    description: 'prefix of every table name (lowercase identifier); empty for none',
    defaultValue: '',
    parse: text,
  },
  legacyCreatedAtIsBigint: {
    scope: 'store',
    flag: '--legacy-created-at-is-bigint',
    env: 'SHAMELESS_LEGACY_CREATED_AT_IS_BIGINT',
    description:
      "for a store made with the gem's legacy_created_at_is_bigint: created_at is a BIGINT of milliseconds since the epoch (tables created and rows written), not a DATETIME",
    defaultValue: false as boolean,
    parse: boolean,
  },
  listen: {
    scope: 'server',
    flag: '--listen <host:port>',
    env: 'SHAMELESS_LISTEN',
    description:
      'address the gRPC server binds: host:port (port 0: any free port), or unix:PATH for a Unix socket',
    defaultValue: '127.0.0.1:50051',
    parse: hostPort({ grpcForms: true }),
  },
  tlsCert: {
    scope: 'server',
    flag: '--tls-cert <pem>',
    env: 'SHAMELESS_TLS_CERT',
    description:
      "PEM file of the server's certificate (chain); with --tls-key, the server speaks TLS only",
    defaultValue: '',
    parse: text,
  },
  tlsKey: {
    scope: 'server',
    flag: '--tls-key <pem>',
    env: 'SHAMELESS_TLS_KEY',
    description: 'PEM file of the private key of --tls-cert',
    defaultValue: '',
    parse: text,
  },
  tlsClientCa: {
    scope: 'server',
    flag: '--tls-client-ca <pem>',
    env: 'SHAMELESS_TLS_CLIENT_CA',
    description:
      'PEM file of the CA(s) that sign client certificates: with it, a client must present one (mutual TLS); ' +
      'a file that holds no CA certificate stops the start',
    defaultValue: '',
    parse: text,
  },
  tokensFile: {
    scope: 'server',
    flag: '--tokens-file <file>',
    env: 'SHAMELESS_TOKENS_FILE',
    description:
      'JSON file of the accepted bearer tokens, each a name, a role (reader, writer or admin) and the SHA-256 of the token (docs/security.md); every Store call then needs "authorization: Bearer <token>". Re-read on SIGHUP',
    defaultValue: '',
    parse: text,
  },
  insecure: {
    scope: 'server',
    flag: '--insecure',
    env: 'SHAMELESS_INSECURE',
    description:
      'allow listening on a non-loopback address without TLS or tokens: anyone who reaches the port may read, write and define models',
    defaultValue: false as boolean,
    parse: boolean,
  },
  maxMessageBytes: {
    scope: 'server',
    flag: '--max-message-bytes <n>',
    env: 'SHAMELESS_MAX_MESSAGE_BYTES',
    description:
      "largest gRPC message accepted or sent (the largest cell is DescribeStore's max_cell_bytes: at most 16 MiB, less when max_allowed_packet is under 32 MiB); a GetCells whose cells add up to more is refused with RESOURCE_EXHAUSTED before their bodies are read, a WhereMany before its answer is encoded",
    defaultValue: DEFAULT_MAX_MESSAGE_BYTES,
    parse: integer(1024),
  },
  poolSize: {
    scope: 'server',
    flag: '--pool-size <n>',
    env: 'SHAMELESS_POOL_SIZE',
    description: 'MySQL connections per partition',
    defaultValue: 16,
    parse: integer(1, 1000),
  },
  connectTimeoutMs: {
    scope: 'server',
    flag: '--connect-timeout-ms <ms>',
    env: 'SHAMELESS_CONNECT_TIMEOUT_MS',
    description:
      'how long a MySQL connection attempt may take before the partition counts as unavailable',
    defaultValue: 2000,
    parse: integer(100),
  },
  statementTimeoutMs: {
    scope: 'server',
    flag: '--statement-timeout-ms <ms>',
    env: 'SHAMELESS_STATEMENT_TIMEOUT_MS',
    description:
      "the longest a MySQL statement may wait for its answer; then its connection is destroyed and replaced, and the call answers UNAVAILABLE (a hung partition). MySQL itself stops reads at it, or at the call's deadline if sooner (max_statement_time / MAX_EXECUTION_TIME), keeping the connection",
    defaultValue: 30_000,
    parse: integer(100),
  },
  preparedReads: {
    scope: 'server',
    flag: '--prepared-reads <n>',
    env: 'SHAMELESS_PREPARED_READS',
    description:
      "statements each MySQL connection keeps prepared for point reads whose text repeats (a lone GetCell's, a point Where's): MySQL parses each once, and later reads send only its handle and values; those not used lately are closed past it (an odd number is taken as the next even one). 0 sends every read as text. They count against MySQL's max_prepared_stmt_count (16,382 by default, server-wide): partitions × --pool-size × this, for each server of the store",
    defaultValue: DEFAULT_PREPARED_READS_PER_CONNECTION,
    parse: integer(0, 1000),
  },
  healthCheckMs: {
    scope: 'server',
    flag: '--health-check-ms <ms>',
    env: 'SHAMELESS_HEALTH_CHECK_MS',
    description:
      "how often each partition is probed (SELECT 1; on a Galera partition each node's wsrep status, and a node not Synced is left for the next); one that does not answer within it is NOT_SERVING in health (shameless.v1.Store/partition/N) and down in DescribeStore",
    defaultValue: 1000,
    parse: integer(100),
  },
  idleHealthCheckMs: {
    scope: 'server',
    flag: '--idle-health-check-ms <ms>',
    env: 'SHAMELESS_IDLE_HEALTH_CHECK_MS',
    description:
      'how often each partition is probed while the server is idle: no call (a health Check included) for this long and no stream open (a Pipeline, a follow, a health Watch); the first call after probes at once and brings back --health-check-ms. Until then health and DescribeStore may report a partition as it was up to this long ago. 0: the probe never slows',
    defaultValue: 10_000,
    parse: integer(0),
  },
  startupTimeoutMs: {
    scope: 'server',
    flag: '--startup-timeout-ms <ms>',
    env: 'SHAMELESS_STARTUP_TIMEOUT_MS',
    description:
      'how long to wait at start for every partition to accept connections (refused credentials fail at once)',
    defaultValue: 30_000,
    parse: integer(0),
  },
  followPollMs: {
    scope: 'server',
    flag: '--follow-poll-ms <ms>',
    env: 'SHAMELESS_FOLLOW_POLL_MS',
    description:
      'how often the server reads the max id of every followed shard, in one query per partition for all Each followers together, to find writes made through other servers (writes through this one wake followers at once)',
    defaultValue: 100,
    parse: integer(1),
  },
  groupPollMs: {
    scope: 'server',
    flag: '--group-poll-ms <ms>',
    env: 'SHAMELESS_GROUP_POLL_MS',
    description:
      "how often the server reads the rows of each consumer group that has a member connected to it (members, owners, cursors: one query per partition), renews its members' sessions and writes their cursors; a shard handed over or freed by a member's death waits about this long for its next owner",
    defaultValue: 200,
    parse: integer(20, 60_000),
  },
  writeGroups: {
    scope: 'server',
    flag: '--write-groups <n>',
    env: 'SHAMELESS_WRITE_GROUPS',
    description:
      'write transactions each partition runs at once; writes arriving while all are busy wait and share the next (group commit), and many waiting writes are shared among the free ones by shard; the creates of one event-loop turn put their content in as many shards',
    defaultValue: 2,
    parse: integer(1, 1000),
  },
  writeGroupMaxItems: {
    scope: 'server',
    flag: '--write-group-max-items <n>',
    env: 'SHAMELESS_WRITE_GROUP_MAX_ITEMS',
    description:
      'most writes one transaction takes from the queue (a larger single call goes alone)',
    defaultValue: 2000,
    parse: integer(1),
  },
  writeGroupMaxBytes: {
    scope: 'server',
    flag: '--write-group-max-bytes <n>',
    env: 'SHAMELESS_WRITE_GROUP_MAX_BYTES',
    description:
      'most bytes of bodies one transaction takes from the queue (a larger single call goes alone); at the default a group of replaced bodies goes in one round trip when the server remembers its cells, a larger one reads them first',
    defaultValue: DEFAULT_GROUP_LIMITS.maxBytes as number,
    parse: integer(1024),
  },
  writeQueueMaxBytes: {
    scope: 'server',
    flag: '--write-queue-max-bytes <n>',
    env: 'SHAMELESS_WRITE_QUEUE_MAX_BYTES',
    description:
      'bytes of bodies that may wait for a partition; writes beyond are refused with RESOURCE_EXHAUSTED (the SDK backs off and retries)',
    defaultValue: 64 * 1024 * 1024,
    parse: integer(1024),
  },
  primaryKeyCacheEntries: {
    scope: 'server',
    flag: '--primary-key-cache-entries <n>',
    env: 'SHAMELESS_PRIMARY_KEY_CACHE_ENTRIES',
    description:
      'tuples of primary values whose record the server remembers (about 200 bytes each), so that a Put of values seen before needs no lookup; 0 for none',
    defaultValue: DEFAULT_PRIMARY_KEY_CACHE_ENTRIES as number,
    parse: integer(0, 100_000_000),
  },
  recordCacheEntries: {
    scope: 'server',
    flag: '--record-cache-entries <n>',
    env: 'SHAMELESS_RECORD_CACHE_ENTRIES',
    description:
      'records the server remembers to exist (about 150 bytes each), so that a write to a cell other than base need not read the base cell; 0 for none',
    defaultValue: DEFAULT_RECORD_CACHE_ENTRIES as number,
    parse: integer(0, 100_000_000),
  },
  versionCacheBytes: {
    scope: 'server',
    flag: '--version-cache-bytes <n>',
    env: 'SHAMELESS_VERSION_CACHE_BYTES',
    description:
      'bytes of the latest versions of cells (with their bodies, if at most 4 KiB each; about 300 bytes more a cell) the server remembers, so that a write to one takes one round trip instead of two (a quarter of them for the cells of records just created, until written to); 0 for none',
    defaultValue: DEFAULT_VERSION_CACHE_BYTES as number,
    parse: integer(0, 2 ** 40),
  },
  maxConcurrentCalls: {
    scope: 'server',
    flag: '--max-concurrent-calls <n>',
    env: 'SHAMELESS_MAX_CONCURRENT_CALLS',
    description:
      'Store calls in progress at once: unary calls, the calls of Pipeline streams, and Where streams (Each streams count toward --max-open-streams instead); beyond, RESOURCE_EXHAUSTED with a grpc-retry-pushback-ms trailer',
    defaultValue: 256,
    parse: integer(1, 1_000_000),
  },
  maxOpenStreams: {
    scope: 'server',
    flag: '--max-open-streams <n>',
    env: 'SHAMELESS_MAX_OPEN_STREAMS',
    description:
      'long-lived streams open at once: Each (log reads and followers) and Consume (consumer group members), which last as long as their clients keep them, apart from --max-concurrent-calls so that they never leave short calls without a slot; each reserves what it may hold of --max-in-flight-bytes while open (its messages not yet sent, cells read ahead and cells handed over by commits: about 832 KiB for Each, 1.1 MiB for Consume, whatever shards it owns); beyond, RESOURCE_EXHAUSTED with a grpc-retry-pushback-ms trailer',
    defaultValue: 128,
    parse: integer(1, 1_000_000),
  },
  maxPipelineCalls: {
    scope: 'server',
    flag: '--max-pipeline-calls <n>',
    env: 'SHAMELESS_MAX_PIPELINE_CALLS',
    description:
      "calls of one Pipeline stream (the SDK's path) run at once; the stream is not read further meanwhile (each call also counts toward --max-concurrent-calls)",
    defaultValue: DEFAULT_PIPELINE_CALLS,
    parse: integer(1, 100_000),
  },
  maxInFlightBytes: {
    scope: 'server',
    flag: '--max-in-flight-bytes <n>',
    env: 'SHAMELESS_MAX_IN_FLIGHT_BYTES',
    description:
      'bytes of requests, unsent responses and stream buffers that calls and streams may hold at once (a call reserves what its method answered lately; until a method has answered once, its calls go one at a time; a stream also reserves what it buffers: 512 KiB of messages not yet sent, and for Each 256 KiB of cells read ahead); beyond, RESOURCE_EXHAUSTED',
    defaultValue: 256 * 1024 * 1024,
    parse: integer(1024),
  },
  retryPushbackMs: {
    scope: 'server',
    flag: '--retry-pushback-ms <ms>',
    env: 'SHAMELESS_RETRY_PUSHBACK_MS',
    description: 'how long a call refused for being beyond those bounds is told to wait',
    defaultValue: 100,
    parse: integer(0, 60_000),
  },
  maxWhereConditions: {
    scope: 'server',
    flag: '--max-where-conditions <n>',
    env: 'SHAMELESS_MAX_WHERE_CONDITIONS',
    description: 'most conditions one Where query may have (INVALID_ARGUMENT beyond)',
    defaultValue: 16,
    parse: integer(1, 1000),
  },
  maxInValues: {
    scope: 'server',
    flag: '--max-in-values <n>',
    env: 'SHAMELESS_MAX_IN_VALUES',
    description: 'most values one IN condition may list (INVALID_ARGUMENT beyond)',
    defaultValue: 1000,
    parse: integer(1, 100_000),
  },
  maxPageRecords: {
    scope: 'server',
    flag: '--max-page-records <n>',
    env: 'SHAMELESS_MAX_PAGE_RECORDS',
    description:
      'most records one Where page, cells one FetchLatestCells page or one Each batch may ask for (INVALID_ARGUMENT beyond)',
    defaultValue: 10_000,
    parse: integer(1, 1_000_000),
  },
  maxBatchKeys: {
    scope: 'server',
    flag: '--max-batch-keys <n>',
    env: 'SHAMELESS_MAX_BATCH_KEYS',
    description:
      'most keys one GetCells or writes one WriteCells may carry (INVALID_ARGUMENT beyond)',
    defaultValue: 10_000,
    parse: integer(1, 1_000_000),
  },
  maxPutBatch: {
    scope: 'server',
    flag: '--max-put-batch <n>',
    env: 'SHAMELESS_MAX_PUT_BATCH',
    description: 'most puts one PutMany may carry (INVALID_ARGUMENT beyond)',
    defaultValue: 1000,
    parse: integer(1, 100_000),
  },
  maxBodyDepth: {
    scope: 'server',
    flag: '--max-body-depth <levels>',
    env: 'SHAMELESS_MAX_BODY_DEPTH',
    description:
      "levels of maps and arrays a body written may have, its own map being level 1 (INVALID_ARGUMENT beyond, naming the path): Ruby's msgpack, the gem's reader, reads 128, Python's 1024",
    defaultValue: DEFAULT_BODY_LIMITS.maxDepth,
    parse: integer(1, 1000),
  },
  maxBodyValues: {
    scope: 'server',
    flag: '--max-body-values <n>',
    env: 'SHAMELESS_MAX_BODY_VALUES',
    description:
      'values a body written may hold, every key, value and array item at any depth counted (INVALID_ARGUMENT beyond): each is an object to every reader',
    defaultValue: DEFAULT_BODY_LIMITS.maxValues,
    parse: integer(1, 16 * 1024 * 1024),
  },
  graceMs: {
    scope: 'server',
    flag: '--grace-ms <ms>',
    env: 'SHAMELESS_GRACE_MS',
    description: 'on SIGTERM/SIGINT, how long in-flight calls may take to finish',
    defaultValue: 10_000,
    parse: integer(0),
  },
  metricsListen: {
    scope: 'server',
    flag: '--metrics-listen <host:port>',
    env: 'SHAMELESS_METRICS_LISTEN',
    description:
      'address (host:port) of an HTTP server answering GET /metrics in the Prometheus text format; empty for none',
    defaultValue: '',
    parse: hostPort({ empty: true }),
  },
  logLevel: {
    scope: 'server',
    flag: '--log-level <level>',
    env: 'SHAMELESS_LOG_LEVEL',
    description:
      'fatal, error, warn, info, debug (adds an access log line per call), trace or silent',
    defaultValue: 'info',
    parse: logLevel,
  },
} satisfies Record<string, SettingDefinition<unknown>>;

export type Settings = { [K in keyof typeof SETTINGS]: (typeof SETTINGS)[K]['defaultValue'] };

/** What the store's data is and where it lives: the same for `serve` and for `plan`. */
export function storeShapeOf(settings: Settings): StoreShape {
  return {
    namespace: settings.namespace,
    shardsCount: settings.shardsCount,
    partitionUrls: settings.partitions,
    createdAt: settings.legacyCreatedAtIsBigint ? 'bigint' : 'datetime',
  };
}

/** The config file's keys are the setting names above, e.g. {"shardsCount": 64}. */
export function readConfigFile(path: string): Partial<Record<keyof Settings, unknown>> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new Error(`cannot read config file ${path}: ${(error as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new Error(`config file ${path} must hold a JSON object`);
  }
  for (const key of Object.keys(parsed)) {
    if (!(key in SETTINGS)) {
      throw new Error(
        `config file ${path}: unknown setting ${JSON.stringify(key)}; known: ${Object.keys(SETTINGS).join(', ')}`,
      );
    }
  }
  return parsed as Partial<Record<keyof Settings, unknown>>;
}

/**
 * Resolves every setting: a flag beats the environment, which beats the config file, which
 * beats the default. Values from files are re-parsed as text so the same checks apply.
 */
export function resolveSettings(
  flags: Partial<Record<keyof Settings, unknown>>,
  env: NodeJS.ProcessEnv,
  file: Partial<Record<keyof Settings, unknown>>,
): Settings {
  const resolved: Record<string, unknown> = {};
  for (const [key, setting] of Object.entries(SETTINGS) as [
    keyof Settings,
    SettingDefinition<unknown>,
  ][]) {
    const fromFlag = flags[key];
    const fromEnv = env[setting.env];
    const fromFile = file[key];
    const source =
      fromFlag !== undefined
        ? 'flag'
        : fromEnv !== undefined
          ? 'env'
          : fromFile !== undefined
            ? 'file'
            : 'default';
    const raw =
      source === 'flag'
        ? fromFlag
        : source === 'env'
          ? fromEnv
          : source === 'file'
            ? fromFile
            : undefined;
    try {
      resolved[key] =
        raw === undefined
          ? setting.defaultValue
          : Array.isArray(raw)
            ? raw.flatMap((item) => setting.parse(String(item)) as unknown[])
            : setting.parse(String(raw));
    } catch (error) {
      const where =
        source === 'flag'
          ? setting.flag.split(' ')[0]
          : source === 'env'
            ? setting.env
            : `config key ${key}`;
      throw new Error(`${where}: ${(error as Error).message}`);
    }
  }
  return resolved as Settings;
}
