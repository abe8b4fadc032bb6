// The edges of a run's measured window, for whatever must be read exactly there (CPU clocks):
// the loads call `open` when the warm-up ends and `close` when the window ends, so a reading
// taken at each edge covers the same span as the operations the run counts.

/** Told when a run's measured window opens and when it closes; each exactly once, in order. */
export interface MeasuredWindow {
  open(): void;
  close(): void;
}

/**
 * Opens `window` after `openAfterMs` and closes it after `closeAfterMs` (or when `close` is
 * called, when undefined). `close` and `finish` fire whichever edge has not fired yet, in
 * order: a load calls `close` where its window ends, and `finish` once its operations have
 * settled, in case a timer is still queued behind them.
 */
export function scheduleWindow(
  window: MeasuredWindow | undefined,
  openAfterMs: number,
  closeAfterMs?: number,
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
  const closing = closeAfterMs === undefined ? undefined : setTimeout(close, closeAfterMs);
  return {
    close,
    finish() {
      clearTimeout(opening);
      clearTimeout(closing);
      close();
    },
  };
}
