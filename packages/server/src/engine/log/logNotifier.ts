// Wakes log followers in this process the moment a write to their shard commits, so that
// following costs no polling latency for writes made through this server. Writes made through
// other servers are found by the process's shared poll of max ids (maxIdPoller.ts).
import type { StoredCell } from '../mysql/sql/contentRows.js';

/** Told of a commit to `table`: the cells it stored there, in id order. */
export type CommitListener = (table: string, cells: readonly StoredCell[]) => void;

export class LogNotifier {
  private readonly listeners = new Map<string, Set<CommitListener>>();

  /**
   * Called once a write to the table has committed, with every cell it stored there: a read
   * started after it sees the write. Listeners get the cells with bodies of their own (see
   * withOwnBodies).
   */
  notify(table: string, cells: readonly StoredCell[]): void {
    const listening = this.listeners.get(table);
    if (!listening) return;
    const owned = withOwnBodies(cells);
    for (const listener of listening) listener(table, owned);
  }

  /**
   * Calls `onWrite` with each commit to the tables until the returned function is called. A
   * subscription lasts across a follower's reads, not only its waits: a write that commits
   * while the follower reads is not missed until the next poll.
   */
  subscribe(tables: readonly string[], onWrite: CommitListener): () => void {
    for (const table of tables) {
      let listening = this.listeners.get(table);
      if (!listening) this.listeners.set(table, (listening = new Set()));
      listening.add(onWrite);
    }
    return () => {
      for (const table of tables) {
        const listening = this.listeners.get(table);
        listening?.delete(onWrite);
        if (listening?.size === 0) this.listeners.delete(table);
      }
    };
  }
}

/**
 * The cells with their bodies copied, all into one buffer that holds nothing else. A written
 * body may be a view into memory far larger than itself (a request's whole message, a slab of
 * Node's pool shared with other buffers): a follower keeping the cell would keep all of it
 * alive, past what it counts.
 */
function withOwnBodies(cells: readonly StoredCell[]): StoredCell[] {
  const bodies = Buffer.allocUnsafeSlow(cells.reduce((sum, cell) => sum + cell.body.length, 0));
  let at = 0;
  return cells.map((cell) => {
    const body = bodies.subarray(at, at + cell.body.length);
    at += cell.body.copy(bodies, at);
    return { ...cell, body };
  });
}
