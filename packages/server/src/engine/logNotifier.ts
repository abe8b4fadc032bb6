// Wakes log followers in this process the moment a write to their shard commits, so that
// following costs no polling latency for writes made through this server. Writes made through
// other servers are found by the followers' periodic poll.

export class LogNotifier {
  private readonly waiters = new Map<string, Set<() => void>>();

  notify(table: string): void {
    const waiting = this.waiters.get(table);
    if (!waiting) return;
    this.waiters.delete(table);
    for (const wake of waiting) wake();
  }

  /** Resolves when any of the tables is written, the timeout passes, or the signal aborts. */
  waitForAny(tables: readonly string[], timeoutMs: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', wake);
        for (const table of tables) this.waiters.get(table)?.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, timeoutMs);
      if (signal?.aborted) return wake();
      signal?.addEventListener('abort', wake, { once: true });
      for (const table of tables) {
        let waiting = this.waiters.get(table);
        if (!waiting) this.waiters.set(table, (waiting = new Set()));
        waiting.add(wake);
      }
    });
  }
}
