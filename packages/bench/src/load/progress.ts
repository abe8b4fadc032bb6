// Progress of long steps on stderr, so stdout carries only the results table. On a terminal a
// task redraws one line; elsewhere (CI logs) it prints a line every few seconds.

export interface ProgressTask {
  advance(units: number): void;
  done(summary?: string): void;
}

export interface Progress {
  /** A step of known size. */
  task(label: string, total: number): ProgressTask;
  /** A one-line note. */
  note(message: string): void;
}

export function stderrProgress(): Progress {
  const interactive = process.stderr.isTTY === true;
  const started = Date.now();
  const clock = () => `[${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s]`;
  return {
    note: (message) => process.stderr.write(`${clock()} ${message}\n`),
    task(label, total) {
      let done = 0;
      let lastPrinted = Date.now();
      const line = () => `${clock()} ${label}: ${done}/${total}`;
      return {
        advance(units) {
          done += units;
          const now = Date.now();
          if (interactive && now - lastPrinted > 100) {
            process.stderr.write(`\r${line()}`);
            lastPrinted = now;
          } else if (!interactive && now - lastPrinted > 5000) {
            process.stderr.write(`${line()}\n`);
            lastPrinted = now;
          }
        },
        done(summary) {
          process.stderr.write(
            `${interactive ? '\r' : ''}${line()}${summary ? ` ${summary}` : ''}\n`,
          );
        },
      };
    },
  };
}
