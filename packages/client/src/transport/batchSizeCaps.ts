// What answers over a message size limit teach about a kind's batches. Such an answer is only
// known too large once the server has read it all, and the batch is then sent again in halves:
// when every batch of a kind is that large (the pages of 100 records of 16 KB each that 16
// callers want at once), the server would read each of them twice. So after such an answer the
// kind's batches carry at most half as many calls, and one more after each batch that fits at
// that size (additive increase, multiplicative decrease), until they are back at the form's
// own bound.

import type { BatchForm } from './batchForms.js';
import type { BatchBounds } from './batchSplit.js';

export class BatchSizeCaps {
  /** Calls a batch may carry, by batch method, where an answer was too large lately. */
  readonly #caps = new Map<string, number>();

  /** The form's bounds, with its learned cap on calls. */
  boundsOf<Req, Res>(form: BatchForm<Req, Res>): BatchBounds {
    const cap = this.#caps.get(form.batchMethod);
    return cap === undefined ? form.bounds : { ...form.bounds, maxItems: cap };
  }

  /** A batch of `calls` calls had an answer over a message size limit. */
  tooLarge<Req, Res>(form: BatchForm<Req, Res>, calls: number): void {
    const cap = Math.max(1, Math.ceil(calls / 2));
    const current = this.#caps.get(form.batchMethod) ?? form.bounds.maxItems;
    if (cap < current) this.#caps.set(form.batchMethod, cap);
  }

  /** A batch of `calls` calls was answered. */
  fitted<Req, Res>(form: BatchForm<Req, Res>, calls: number): void {
    const cap = this.#caps.get(form.batchMethod);
    if (cap === undefined || calls < cap) return;
    if (cap + 1 >= form.bounds.maxItems) this.#caps.delete(form.batchMethod);
    else this.#caps.set(form.batchMethod, cap + 1);
  }
}
