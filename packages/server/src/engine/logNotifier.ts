// Wakes log followers in this process the moment a write to their shard commits, so that
// following costs no polling latency for writes made through this server. Writes made through
// other servers are found by the process's shared poll of max ids (maxIdPoller.ts).

export class LogNotifier {
  private readonly listeners = new Map<string, Set<(table: string) => void>>();

  /** Called once the write to the table has committed: a read started after it sees the write. */
  notify(table: string): void {
    const listening = this.listeners.get(table);
    if (!listening) return;
    for (const listener of listening) listener(table);
  }

  /**
   * Calls `onWrite` with each of the tables written until the returned function is called. A
   * subscription lasts across a follower's reads, not only its waits: a write that commits
   * while the follower reads is not missed until the next poll.
   */
  subscribe(tables: readonly string[], onWrite: (table: string) => void): () => void {
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
