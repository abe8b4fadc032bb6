// A real Galera cluster of throwaway MariaDB nodes on loopback ports: what a partition on Galera
// runs on (issue 53). Needs Debian's galera-4 and rsync (`.ci/run` installs them).
//
// How it is put together:
// - Each node is a `startMariaDbServer` with wsrep on: the Galera provider, a cluster address
//   listing every node's group port, its own group, IST and SST ports on 127.0.0.1, ROW binary
//   log format and interleaved auto-increment locks (innodb_autoinc_lock_mode=2), as Galera
//   requires.
// - The first node bootstraps the cluster (`--wsrep-new-cluster`, on its first start only); the
//   others join one at a time and receive a full copy from a donor by rsync (SST). All of it
//   takes 10 s on a quiet 2-core machine, 14-20 s on a busy one.
// - When the test run is root, nodes run as `mysql` and their directories belong to it: the
//   rsync daemon of a state transfer drops to `nobody` when started by root, and could not write
//   into root's files.
// - A node started again rejoins through the others and its `start()` resolves once it is
//   Synced. After `stop()` it has saved its position, so it gets what it missed by IST from the
//   others' write-set cache (gcache, 32 MiB here). After `kill()` it has not, and the kit does
//   not run the `mariadbd --wsrep-recover` step that systemd's galera_recovery runs, so it gets a
//   full copy by SST (a few seconds for a test's data). Stopping every node ends the cluster: a
//   node started with no other node running fails after Galera's wait for a primary component.
// - The SST script reads the machine's my.cnf for paths a node's command line does not give
//   (binary log, InnoDB directories); a my.cnf that sets them would mislead it.
// - Galera replicates synchronously but applies asynchronously: a read on another node right
//   after a commit sees it only with `SET SESSION wsrep_sync_wait = 1` (or higher).
// - A SIGKILLed node leaves the others' view after the evs timeouts (suspect 5 s, inactive 15 s
//   by default); writes on the other nodes may stall for a few seconds meanwhile.
//   `providerOptions` can shorten them.
import { randomBytes } from 'node:crypto';
import { accessSync, constants as fsConstants } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { RowDataPacket } from 'mysql2/promise';
import { queryRows } from './adminConnection.js';
import { freePort } from './freePort.js';
import {
  findExecutable,
  readLogTail,
  startMariaDbServer,
  type MariaDbServer,
} from './mariadbServer.js';

export interface GaleraClusterOptions {
  /** How many nodes; default 3. */
  nodes?: number;
  /**
   * How long a node's start may take to accept a root login (a joining node opens its port once
   * its state transfer is done), and then again to report Synced. Default 60 s.
   */
  startTimeoutMs?: number;
  /** Appended to every node's `wsrep_provider_options`, e.g. `'evs.suspect_timeout=PT2S'`. */
  providerOptions?: string;
  /** Appended to every node's mariadbd command line. */
  extraArgs?: string[];
}

/** What a node's wsrep status variables say. */
export interface GaleraNodeStatus {
  /** `wsrep_local_state_comment`: `Synced`, `Joining`, `Joined`, `Donor/Desynced`, … */
  readonly localState: string;
  /** `wsrep_cluster_status`: `Primary` when the node is in the quorum that takes writes. */
  readonly clusterStatus: string;
  /** `wsrep_cluster_size`: how many nodes the node sees in its component. */
  readonly clusterSize: number;
  /** `wsrep_cluster_state_uuid`: the same on every node of one cluster history. */
  readonly clusterStateUuid: string;
  /** `wsrep_ready`: whether it accepts queries. */
  readonly ready: boolean;
}

/**
 * One node. `start()` rejoins the cluster and resolves once the node is Synced; `kill()` is a
 * SIGKILL, `stop()` a clean leave.
 */
export interface GaleraNode extends MariaDbServer {
  /** `node1`, `node2`, …: its `wsrep_node_name`. */
  readonly name: string;
  /** Its Galera group communication port on 127.0.0.1. */
  readonly groupPort: number;
  status(): Promise<GaleraNodeStatus>;
}

export interface GaleraCluster {
  /** Its `wsrep_cluster_name`, unique to this cluster. */
  readonly name: string;
  readonly nodes: readonly GaleraNode[];
  /**
   * Waits until every running node is Synced in a primary component of `size` nodes (default:
   * how many run); rejects after `timeoutMs` (default 60 s) with each node's state.
   */
  waitUntilSynced(options?: { size?: number; timeoutMs?: number }): Promise<void>;
  /** Kills every node and removes its data; safe to call more than once. */
  destroy(): Promise<void>;
}

const DEFAULT_NODES = 3;
const DEFAULT_START_TIMEOUT_MS = 60_000;
const DEFAULT_SYNC_TIMEOUT_MS = 60_000;
const STATUS_POLL_INTERVAL_MS = 100;
const LOG_TAIL_LINES = 15;
const PROVIDER_PATHS = [
  '/usr/lib/galera/libgalera_smm.so', // Debian's galera-4
  '/usr/lib/libgalera_smm.so',
  '/usr/lib64/galera-4/libgalera_smm.so', // RPM-based systems
  '/usr/lib64/galera/libgalera_smm.so',
];
const INSTALL_HINT = 'install Galera with `apt-get install -y galera-4 rsync`';

interface NodePorts {
  mysql: number;
  group: number;
  ist: number;
  sst: number;
}

/** Starts a Galera cluster and resolves once every node is Synced in one primary component. */
export async function startGaleraCluster(
  options: GaleraClusterOptions = {},
): Promise<GaleraCluster> {
  const nodeCount = options.nodes ?? DEFAULT_NODES;
  if (!Number.isInteger(nodeCount) || nodeCount < 1) {
    throw new RangeError(`nodes must be a positive whole number, got ${nodeCount}`);
  }
  const provider = findProvider();
  for (const executable of ['rsync', 'wsrep_sst_rsync']) {
    try {
      findExecutable(executable);
    } catch (error) {
      throw new Error(`${(error as Error).message}: ${INSTALL_HINT}`);
    }
  }
  const name = `shameless-test-${randomBytes(4).toString('hex')}`;
  const ports = await distinctPorts(nodeCount);
  const clusterAddress = `gcomm://${ports.map((port) => `127.0.0.1:${port.group}`).join(',')}`;
  const startTimeoutMs = options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;

  const cluster = new Cluster(name);
  try {
    for (const [index, port] of ports.entries()) {
      const nodeName = `node${index + 1}`;
      const providerOptions = [
        'base_host=127.0.0.1',
        `base_port=${port.group}`,
        `gmcast.listen_addr=tcp://127.0.0.1:${port.group}`,
        `ist.recv_addr=127.0.0.1:${port.ist}`,
        'gcache.size=32M',
        ...(options.providerOptions ? [options.providerOptions] : []),
      ].join(';');
      const server = await startMariaDbServer({
        port: port.mysql,
        startTimeoutMs,
        // Root can run mariadbd as mysql; anyone else runs it as themselves, which rsync keeps.
        user: process.getuid?.() === 0 ? 'mysql' : undefined,
        extraArgs: [
          '--wsrep-on=ON',
          `--wsrep-provider=${provider}`,
          `--wsrep-cluster-name=${name}`,
          `--wsrep-cluster-address=${clusterAddress}`,
          `--wsrep-node-name=${nodeName}`,
          `--wsrep-node-address=127.0.0.1:${port.group}`,
          `--wsrep-provider-options=${providerOptions}`,
          '--wsrep-sst-method=rsync',
          `--wsrep-sst-receive-address=127.0.0.1:${port.sst}`,
          '--binlog-format=ROW',
          '--innodb-autoinc-lock-mode=2',
          ...(options.extraArgs ?? []),
        ],
        firstStartArgs: index === 0 ? ['--wsrep-new-cluster'] : [],
      });
      const node = new Node(server, nodeName, port.group, startTimeoutMs);
      cluster.add(node);
      await node.waitUntilSynced();
    }
    await cluster.waitUntilSynced({ size: nodeCount });
    return cluster;
  } catch (error) {
    await cluster.destroy();
    throw error;
  }
}

class Node implements GaleraNode {
  constructor(
    private readonly server: MariaDbServer,
    readonly name: string,
    readonly groupPort: number,
    private readonly startTimeoutMs: number,
  ) {}

  get port(): number {
    return this.server.port;
  }

  get url(): string {
    return this.server.url;
  }

  get dataDir(): string {
    return this.server.dataDir;
  }

  get logFile(): string {
    return this.server.logFile;
  }

  get running(): boolean {
    return this.server.running;
  }

  async start(): Promise<void> {
    await this.server.start();
    await this.waitUntilSynced();
  }

  stop(): Promise<void> {
    return this.server.stop();
  }

  pause(): Promise<void> {
    return this.server.pause();
  }

  resume(): void {
    this.server.resume();
  }

  kill(): Promise<void> {
    return this.server.kill();
  }

  destroy(): Promise<void> {
    return this.server.destroy();
  }

  async status(): Promise<GaleraNodeStatus> {
    const rows = await queryRows<RowDataPacket>(this.url, "SHOW STATUS LIKE 'wsrep\\_%'");
    const value = (name: string) =>
      String(rows.find((row) => row.Variable_name === name)?.Value ?? '');
    return {
      localState: value('wsrep_local_state_comment'),
      clusterStatus: value('wsrep_cluster_status'),
      clusterSize: Number(value('wsrep_cluster_size')),
      clusterStateUuid: value('wsrep_cluster_state_uuid'),
      ready: value('wsrep_ready') === 'ON',
    };
  }

  /** Waits until this node is Synced in a primary component. */
  async waitUntilSynced(): Promise<void> {
    const deadline = Date.now() + this.startTimeoutMs;
    for (;;) {
      const state = await this.describe();
      if (state.status?.localState === 'Synced' && state.status.clusterStatus === 'Primary') {
        return;
      }
      if (!this.running || Date.now() > deadline) {
        throw new Error(
          `Galera ${this.name} (port ${this.port}) is not Synced in a primary component ` +
            `${this.running ? `after ${this.startTimeoutMs} ms` : 'and has exited'}: ` +
            `${state.summary}\n${await readLogTail(this.logFile, 0, LOG_TAIL_LINES)}`,
        );
      }
      await sleep(STATUS_POLL_INTERVAL_MS);
    }
  }

  /** Its status, or why it could not be read, in a line for error messages. */
  async describe(): Promise<{ status?: GaleraNodeStatus; summary: string }> {
    if (!this.running) {
      return { summary: `${this.name} is not running` };
    }
    try {
      const status = await this.status();
      return {
        status,
        summary:
          `${this.name}: ${status.localState || 'no state'}, ${status.clusterStatus || '?'} ` +
          `component of ${status.clusterSize}`,
      };
    } catch (error) {
      return { summary: `${this.name}: ${(error as Error).message}` };
    }
  }
}

class Cluster implements GaleraCluster {
  private readonly members: Node[] = [];

  constructor(readonly name: string) {}

  get nodes(): readonly GaleraNode[] {
    return this.members;
  }

  add(node: Node): void {
    this.members.push(node);
  }

  async waitUntilSynced(options: { size?: number; timeoutMs?: number } = {}): Promise<void> {
    const timeoutMs = options.timeoutMs ?? DEFAULT_SYNC_TIMEOUT_MS;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const running = this.members.filter((node) => node.running);
      const size = options.size ?? running.length;
      const states = await Promise.all(running.map((node) => node.describe()));
      const synced = (status: GaleraNodeStatus | undefined) =>
        status?.localState === 'Synced' &&
        status.clusterStatus === 'Primary' &&
        status.clusterSize === size;
      if (running.length === size && states.every((state) => synced(state.status))) {
        return;
      }
      if (Date.now() > deadline) {
        const summaries = this.members.map(
          (node) => states[running.indexOf(node)]?.summary ?? `${node.name} is not running`,
        );
        throw new Error(
          `Galera cluster ${this.name} did not settle into ${size} Synced nodes within ` +
            `${timeoutMs} ms (${summaries.join('; ')}); a killed node leaves the others' view ` +
            'only after the evs timeouts (15 s by default)',
        );
      }
      await sleep(STATUS_POLL_INTERVAL_MS);
    }
  }

  async destroy(): Promise<void> {
    const results = await Promise.allSettled(this.members.map((node) => node.destroy()));
    const failed = results.find((result) => result.status === 'rejected');
    if (failed !== undefined) {
      throw failed.reason;
    }
  }
}

function findProvider(): string {
  for (const path of PROVIDER_PATHS) {
    try {
      accessSync(path, fsConstants.R_OK);
      return path;
    } catch {
      // Not here; keep looking.
    }
  }
  throw new Error(`no Galera provider at ${PROVIDER_PATHS.join(', ')}: ${INSTALL_HINT}`);
}

/** Four ports a node, all distinct, so that no node's port is handed to another. */
async function distinctPorts(nodeCount: number): Promise<NodePorts[]> {
  const taken = new Set<number>();
  const next = async () => {
    for (;;) {
      const port = await freePort();
      if (!taken.has(port)) {
        taken.add(port);
        return port;
      }
    }
  };
  const ports: NodePorts[] = [];
  for (let index = 0; index < nodeCount; index++) {
    ports.push({ mysql: await next(), group: await next(), ist: await next(), sst: await next() });
  }
  return ports;
}
