// A partition on a Galera cluster: several nodes, every one writable, with a pool each. The
// partition writes and reads through one of them, the current node, and moves to the next one
// in the listed order when it fails: a connection error, or a node that says it does not take
// queries (not Synced, not in the Primary component). Galera replicates; this file only decides
// which node to talk to. The choice is this process's own and safe to lose: every node takes
// writes, so servers that chose differently still agree on the data (conflicting commits on two
// nodes end with ER_LOCK_DEADLOCK on one, retried as a new transaction by the write path).
//
// It is a MysqlPool itself, so the partition and everything above it use it as they use one
// server's pool. Reads that fail on a node are sent again to the next (a read is safe to
// repeat); a write's statement is not, since it may have committed: its error goes up, and the
// write path retries the transaction by its request ids (shardTransaction.ts).
import { type CallScope, UNBOUNDED, deadlineScope } from '../base/callScope.js';
import type { Logger } from '../base/logger.js';
import {
  type MysqlLocation,
  type MysqlPool,
  type ScopedPool,
  type PoolUsage,
  type SqlConnection,
  type SqlSession,
  parseMysqlUrl,
  redactUrl,
  urlWithoutUser,
} from './mysqlPool.js';
import { addCounts } from './preparedReads.js';
import { readNodeState } from './sql/galera.js';
import { isCallerGone, isConnectionError } from './sqlErrors.js';

/** Separates the nodes of one partition in its `--partition` entry. */
export const NODE_SEPARATOR = '|';

/**
 * The nodes of one `--partition` entry: one URL, or several joined by `|` (the nodes of one
 * Galera cluster), every one naming the same database. `|` cannot appear in a URL unescaped, and
 * `,` already separates partitions. An Error says what is wrong, naming the node.
 */
export function parseNodeList(entry: string): MysqlLocation[] {
  const urls = entry.split(NODE_SEPARATOR).map((url) => url.trim());
  if (urls.length === 1) return [parseMysqlUrl(urls[0]!)];
  const locations = urls.map((url, n) => {
    if (url === '') {
      throw new Error(
        `node ${n} of ${redactNodeList(entry)} is empty; expected mysql URLs joined by ${NODE_SEPARATOR}`,
      );
    }
    try {
      return parseMysqlUrl(url);
    } catch (error) {
      throw new Error(`node ${n}: ${(error as Error).message}`);
    }
  });
  const database = locations[0]!.database;
  for (const [n, location] of locations.entries()) {
    if (location.database !== database) {
      throw new Error(
        `node ${n} names database ${location.database} and node 0 ${database}: the nodes of one Galera partition hold one database`,
      );
    }
    const twin = locations.findIndex((other) => addressOf(other) === addressOf(location));
    if (twin !== n) {
      throw new Error(`nodes ${twin} and ${n} are both ${addressOf(location)}`);
    }
  }
  return locations;
}

/** The entry with each node's password hidden (redactUrl of the whole would hide hosts too). */
export function redactNodeList(entry: string): string {
  return entry.split(NODE_SEPARATOR).map(redactUrl).join(NODE_SEPARATOR);
}

/** The entry without any node's user and password (urlWithoutUser), for answers to clients. */
export function nodeListWithoutUsers(entry: string): string {
  return entry.split(NODE_SEPARATOR).map(urlWithoutUser).join(NODE_SEPARATOR);
}

function addressOf(location: MysqlLocation): string {
  return location.socketPath ?? `${location.host}:${location.port}`;
}

export type NodeHealth =
  /** The current node: it takes this partition's reads and writes. */
  | 'current'
  /** Answers and is Synced: where the partition goes next if the current one fails. */
  | 'standby'
  /** Failed a statement or the last probe, or said it takes no queries. */
  | 'down';

export interface GaleraNodeStatus {
  readonly node: number;
  readonly host: string;
  readonly port: number;
  readonly health: NodeHealth;
  /** wsrep_local_state_comment as last probed (`Synced`, `Donor/Desynced`, …), or why down. */
  readonly state: string;
}

class GaleraNode {
  /** Whether it failed since it last proved fine; a down node is skipped while others are not. */
  down = false;
  state = 'unknown';

  constructor(
    readonly index: number,
    readonly location: MysqlLocation,
    readonly pool: MysqlPool,
  ) {}
}

/** A failure that says the node, not the statement, is at fault: move to the next node. */
export function isNodeFailure(error: unknown): boolean {
  return isConnectionError(error);
}

export class GaleraNodes implements MysqlPool {
  private readonly nodes: GaleraNode[];
  private currentIndex = 0;
  /** How many times the partition moved to another node, for metrics. */
  switches = 0;
  private readonly unbounded: ScopedPool;

  constructor(
    readonly partition: number,
    nodes: readonly { location: MysqlLocation; pool: MysqlPool }[],
    private readonly logger: Logger,
  ) {
    this.nodes = nodes.map(({ location, pool }, i) => new GaleraNode(i, location, pool));
    this.unbounded = this.for(UNBOUNDED);
  }

  get reads(): SqlSession {
    return this.unbounded.reads;
  }

  query<T>(...args: Parameters<SqlSession['query']>): Promise<T> {
    return this.unbounded.query<T>(...args);
  }

  getConnection(): Promise<SqlConnection> {
    return this.unbounded.getConnection();
  }

  /**
   * The partition's statements for the call of `scope`. A write's statement runs on the current
   * node, once (it may have committed before its node failed); a node failure moves the
   * partition on, and the error goes up. Reads, and the taking of a connection (nothing has run
   * on it yet), go to the next node on a node failure. A statement on a connection that finds
   * its node failed moves the partition on.
   */
  for(scope: CallScope): ScopedPool {
    return {
      query: <T>(...args: Parameters<SqlSession['query']>) => {
        const node = this.nodes[this.currentIndex]!;
        return node.pool
          .for(scope)
          .query<T>(...args)
          .catch((error: unknown) => {
            if (isNodeFailure(error)) this.failed(node, error);
            throw error;
          });
      },
      reads: {
        query: (sql, values) =>
          this.onSomeNode((node) => node.pool.for(scope).reads.query(sql, values)),
      },
      getConnection: () =>
        this.onSomeNode(async (node) => {
          const connection = await node.pool.for(scope).getConnection();
          return {
            query: <T>(...args: Parameters<SqlSession['query']>) =>
              connection.query<T>(...args).catch((error: unknown) => {
                if (isNodeFailure(error)) this.failed(node, error);
                throw error;
              }),
            release: () => connection.release(),
            destroy: () => connection.destroy(),
          };
        }),
    };
  }

  /** How many nodes the partition lists. */
  get nodeCount(): number {
    return this.nodes.length;
  }

  get current(): { index: number; location: MysqlLocation } {
    return this.nodes[this.currentIndex]!;
  }

  /** Each node's health, for DescribeStore, metrics and the log. */
  status(): GaleraNodeStatus[] {
    return this.nodes.map((node) => ({
      node: node.index,
      host: node.location.host,
      port: node.location.port,
      health: node.index === this.currentIndex ? 'current' : node.down ? 'down' : 'standby',
      state: node.state,
    }));
  }

  usage(): PoolUsage {
    const current = this.nodes[this.currentIndex]!.pool.usage();
    // Counts since start add up over the nodes: a move to another node takes none back.
    const counts = this.nodes.flatMap(({ pool }) => pool.usage().preparedReads ?? []);
    return counts.length === 0 ? current : { ...current, preparedReads: addCounts(counts) };
  }

  async end(): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.pool.end()));
  }

  /**
   * Probes every node's wsrep status (one statement each, bounded by `timeoutMs`): a node that
   * does not answer or is not Synced in the Primary component is down; one that is comes back.
   * A current node found down is left for the next serving one. True when some node serves.
   */
  async probe(timeoutMs: number): Promise<boolean> {
    await Promise.all(
      this.nodes.map(async (node) => {
        try {
          const scope = deadlineScope(Date.now() + timeoutMs);
          const state = await readNodeState(node.pool.for(scope).reads);
          node.state = state.state;
          this.mark(node, !state.serving);
        } catch (error) {
          node.state = `no answer (${(error as { code?: string }).code ?? (error as Error).message})`;
          this.mark(node, true);
        }
      }),
    );
    const current = this.nodes[this.currentIndex]!;
    if (current.down) this.moveOn(current);
    return this.nodes.some((node) => !node.down);
  }

  /**
   * Runs `work` on the current node, and on a node failure on the next ones in turn, each node
   * at most once: for work that is safe to repeat (a read, taking a connection).
   */
  private async onSomeNode<T>(work: (node: GaleraNode) => Promise<T>): Promise<T> {
    let lastError: unknown;
    for (let tried = 0; tried < this.nodes.length; tried += 1) {
      const node = this.nodes[this.currentIndex]!;
      try {
        return await work(node);
      } catch (error) {
        if (!isNodeFailure(error) || isCallerGone(error)) throw error;
        this.failed(node, error);
        lastError = error;
      }
    }
    throw lastError;
  }

  private failed(node: GaleraNode, error: unknown): void {
    node.state = `failed (${(error as { code?: string }).code ?? (error as Error).message})`;
    this.mark(node, true);
    if (node.index === this.currentIndex) this.moveOn(node);
  }

  private mark(node: GaleraNode, down: boolean): void {
    if (node.down === down) return;
    node.down = down;
    const fields = { partition: this.partition, node: node.index, state: node.state };
    if (down) this.logger.warn('Galera node is down', fields);
    else this.logger.info('Galera node serves again', fields);
  }

  /**
   * The next node after `from` in the listed order that is not down, or, when every one is,
   * simply the next: the partition keeps trying rather than stopping.
   */
  private moveOn(from: GaleraNode): void {
    const count = this.nodes.length;
    let next = (from.index + 1) % count;
    for (let step = 1; step <= count; step += 1) {
      const candidate = (from.index + step) % count;
      if (!this.nodes[candidate]!.down) {
        next = candidate;
        break;
      }
    }
    if (next === this.currentIndex || from.index !== this.currentIndex) return;
    this.currentIndex = next;
    this.switches += 1;
    this.logger.warn('Galera partition moves to another node', {
      partition: this.partition,
      from: from.index,
      to: next,
    });
  }
}
