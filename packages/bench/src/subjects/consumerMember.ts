// Consumer group members as the bench runs them: each a `node` child process running the SDK
// (consumerMemberMain.ts), as a user's workers would, so that one can be SIGKILLed, cut off or
// restarted while the others go on. What a member does comes back as JSON lines stamped with
// the machine's clock, which every process here reads the same (wallClockMs), so a kill in this
// process and a takeover in another are measured on one clock.
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { type ListeningProcess, startListeningProcess } from '@shameless/testkit';

const MAIN = join(dirname(fileURLToPath(import.meta.url)), 'consumerMemberMain.js');

/** The model the consumer-group workload writes and its members read: tickets and their events. */
export const TICKET_SCHEMA = {
  name: 'ticket',
  primary: { fields: { ticket_id: 'integer' }, shardOn: 'ticket_id' },
  cells: ['event'],
} as const;

/** What a member process is told to be. */
export interface MemberConfig {
  /** Servers it connects to (the SDK's `endpoints`). */
  readonly endpoints: readonly string[];
  /**
   * `consume`: a member of `group`; `each`: one `Each` of every shard, to its end, or with
   * `follow` from its end on.
   */
  readonly mode: 'consume' | 'each';
  readonly follow?: boolean;
  readonly group?: string;
  readonly memberId?: string;
  /** `Model.consume` options beyond the SDK's defaults (none by default). */
  readonly options?: {
    readonly maxInFlight?: number;
    readonly perShardInFlight?: number;
    readonly sessionTimeoutMs?: number;
    readonly maxDeliveries?: number;
    readonly from?: 'earliest' | 'latest';
  };
  /** `cells`: a line per cell its handler starts; `count`: a count a second, and `done` at `until`. */
  readonly report: 'cells' | 'count';
  /** Count mode: says `done` once this many cells were handled. */
  readonly until?: number;
  /** SIGKILL itself on a cell whose body holds `poison: true`. */
  readonly poison?: boolean;
}

/** A line a member process prints; `at` is wallClockMs() in that process. */
export type MemberLine =
  /**
   * A handler started (an Each: a cell came): shard, id, attempt (0 for an Each), the cell's
   * createdAt (ms, the server's clock).
   */
  | { t: 'h'; s: number; i: number; a: number; c: number; at: number }
  | { t: 'assigned'; shard: number; cursor: number; at: number }
  | { t: 'revoked' | 'released' | 'lost'; shard: number; at: number }
  /** A cursor the server confirmed durable to the member. */
  | { t: 'committed'; shard: number; cursor: number; at: number }
  | { t: 'parked'; shard: number; id: number; at: number }
  | {
      t: 'joined' | 'reconnecting' | 'left' | 'stopped' | 'closing' | 'closed';
      at: number;
    }
  | { t: 'count' | 'end'; n: number; at: number }
  /** Count mode: `until` cells handled; `first` when the first was, `cpu` µs spent since. */
  | { t: 'done'; n: number; first: number; at: number; cpu: number }
  | { t: 'error'; message: string; at: number };

/** Milliseconds since the epoch, to the microsecond: the same clock in every process here. */
export function wallClockMs(): number {
  return performance.timeOrigin + performance.now();
}

/** A member process and everything it printed so far. */
export class MemberProcess {
  /** Its lines, in order. */
  readonly lines: MemberLine[] = [];
  #partial = '';
  readonly #listeners = new Set<(line: MemberLine) => void>();

  private constructor(
    /** A name for progress and errors (`a`, `b`, `a2`, ...). */
    readonly name: string,
    readonly child: ListeningProcess,
    /** The member id it joined under (`each` for an Each reader). */
    readonly memberId: string,
  ) {}

  static async start(name: string, config: MemberConfig): Promise<MemberProcess> {
    const child = await startListeningProcess([MAIN, JSON.stringify(config)], {
      name: `consumer member ${name}`,
    });
    const member = new MemberProcess(name, child, child.address);
    // What came with the `listening on` line, then every chunk after it (read in the same turn
    // of the event loop as that line, so no chunk falls between).
    const output = child.output();
    member.#take(output.slice(output.indexOf('\n', output.indexOf('listening on')) + 1));
    child.process.stdout!.on('data', (chunk: Buffer) => member.#take(chunk.toString()));
    return member;
  }

  get pid(): number {
    return this.child.process.pid!;
  }

  /** Calls `listener` with each line from now on; returns the function that stops it. */
  onLine(listener: (line: MemberLine) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Resolves with the first line from now on (or already printed, with `past`) that `match`es. */
  waitFor<T extends MemberLine>(
    match: (line: MemberLine) => line is T,
    timeoutMs: number,
    what: string,
    past = false,
  ): Promise<T> {
    const seen = past ? this.lines.find(match) : undefined;
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        stop();
        reject(new Error(`member ${this.name}: no ${what} within ${timeoutMs} ms`));
      }, timeoutMs);
      const stop = this.onLine((line) => {
        if (!match(line)) return;
        clearTimeout(timer);
        stop();
        resolve(line);
      });
    });
  }

  /** The shards it owns as its lines say (assigned, not since revoked-and-released or lost). */
  get shards(): number[] {
    return ownedShards(this.lines);
  }

  /** SIGKILL, as a crash; resolves once it has exited. */
  kill(): Promise<number | string> {
    return this.child.kill('SIGKILL');
  }

  /**
   * SIGTERM: the member closes its consumer gracefully and exits. Resolves once it has exited:
   * true when it did by itself, false when it was still closing after `timeoutMs` and was
   * killed.
   */
  async stop(timeoutMs: number): Promise<boolean> {
    const exited = this.child.kill('SIGTERM').then(() => true);
    const late = new Promise<false>((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs);
      void exited.then(() => clearTimeout(timer));
    });
    const graceful = await Promise.race([exited, late]);
    if (!graceful) await this.kill();
    return graceful;
  }

  #take(text: string): void {
    const lines = (this.#partial + text).split('\n');
    this.#partial = lines.pop()!;
    for (const text of lines) {
      if (!text.startsWith('{')) continue;
      const line = JSON.parse(text) as MemberLine;
      this.lines.push(line);
      for (const listener of this.#listeners) listener(line);
    }
  }
}

/** The shards a member's lines say it owns at their end. */
export function ownedShards(lines: readonly MemberLine[]): number[] {
  const owned = new Set<number>();
  for (const line of lines) {
    if (line.t === 'assigned') owned.add(line.shard);
    else if (line.t === 'released' || line.t === 'lost') owned.delete(line.shard);
    else if (line.t === 'reconnecting' || line.t === 'left' || line.t === 'stopped') owned.clear();
  }
  return [...owned].sort((a, b) => a - b);
}
