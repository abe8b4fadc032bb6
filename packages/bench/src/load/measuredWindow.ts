// The edges of a run's measured window, for whatever must be read exactly there (CPU clocks):
// the loads call `open` when the warm-up ends and `close` when the window ends, so a reading
// taken at each edge covers the same span as the operations the run counts.

/** Told when a run's measured window opens and when it closes; each exactly once, in order. */
export interface MeasuredWindow {
  open(): void;
  close(): void;
}

/** One window that opens and closes each of `windows`, in their order. */
export function allWindows(...windows: readonly MeasuredWindow[]): MeasuredWindow {
  return {
    open: () => windows.forEach((window) => window.open()),
    close: () => windows.forEach((window) => window.close()),
  };
}

/**
 * Opens `window` after `openAfterMs`; the load closes it with `close` where its window ends
 * (opening it first, if its timer has not fired). `finish` fires whichever edge has not fired
 * yet, in order: the load calls it once its operations have settled, in case a timer is still
 * queued behind them.
 */
export function scheduleWindow(
  window: MeasuredWindow | undefined,
  openAfterMs: number,
): { close(): void; finish(): void } {
  if (!window) return { close: () => undefined, finish: () => undefined };
  let opened = false;
  let closed = false;
  const open = () => {
    if (opened) return;
    opened = true;
    window.open();
  };
  const close = () => {
    open();
    if (closed) return;
    closed = true;
    window.close();
  };
  const opening = setTimeout(open, openAfterMs);
  return {
    close,
    finish() {
      clearTimeout(opening);
      close();
    },
  };
}
