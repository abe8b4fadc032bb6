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

/**
 * A wait of about `seconds` (a load window, a session timeout running out): a task of that many
 * seconds, advanced once a second until `done`.
 */
export function secondsTask(progress: Progress, label: string, seconds: number): ProgressTask {
  const task = progress.task(`${label} (s)`, Math.round(seconds));
  const timer = setInterval(() => task.advance(1), 1000);
  timer.unref();
  return {
    advance: (units) => task.advance(units),
    done(summary) {
      clearInterval(timer);
      task.done(summary);
    },
  };
}
