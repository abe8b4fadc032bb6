// What a kind's refused batches teach about its batches' size. An answer over a message size
// limit is only known too large once the server has read it all, and the batch is then sent
// again in halves: when every batch of a kind is that large (the pages of 100 records of 16 KB
// each that 16 callers want at once), the server would read each of them twice. So after such
// an answer the kind's batches carry at most half as many calls, and one more after each batch
// that fits at that size (additive increase, multiplicative decrease), until they are back at
// the form's own bound. A single call answered counts as a batch of one that fits: a cap of 1
// sends every call alone, and would otherwise never grow back. A server that states it takes
// fewer items than the form's bound (batchRefusal.ts) lowers that bound for good.

import type { BatchForm } from './batchForms.js';
import type { BatchBounds } from './batchSplit.js';

/**
 * Learned caps, one per batch method and group (a GetCells of one model does not shrink another
 * model's), and the servers' own limits, one per batch method. Each method takes one request
 * of the batch, which names its group.
 */
export class BatchSizeCaps {
  /** Calls a batch may carry, where an answer was too large lately. */
  readonly #caps = new Map<string, number>();
  /** Items a batch of a method may carry, where a server said it takes fewer than the form's bound. */
  readonly #serverLimits = new Map<string, number>();

  /** The form's bounds for batches of `request`'s group, with what was learned of them. */
  boundsOf<Req, Res>(form: BatchForm<Req, Res>, request: Req): BatchBounds {
    const cap = this.#caps.get(capKey(form, request)) ?? this.#ceiling(form);
    return cap === form.bounds.maxItems ? form.bounds : { ...form.bounds, maxItems: cap };
  }

  /** A batch of `calls` calls, `request` among them, had an answer over a size limit. */
  tooLarge<Req, Res>(form: BatchForm<Req, Res>, request: Req, calls: number): void {
    const key = capKey(form, request);
    const cap = Math.max(1, Math.ceil(calls / 2));
    if (cap < (this.#caps.get(key) ?? this.#ceiling(form))) this.#caps.set(key, cap);
  }

  /** A batch of `calls` calls (1: a single call), `request` among them, was answered. */
  fitted<Req, Res>(form: BatchForm<Req, Res>, request: Req, calls: number): void {
    const key = capKey(form, request);
    const cap = this.#caps.get(key);
    if (cap === undefined || calls < cap) return;
    if (cap + 1 >= this.#ceiling(form)) this.#caps.delete(key);
    else this.#caps.set(key, cap + 1);
  }

  /** A server said it takes at most `maxItems` items in one batch of the form's method. */
  serverLimit<Req, Res>(form: BatchForm<Req, Res>, maxItems: number): void {
    if (maxItems >= this.#ceiling(form)) return;
    this.#serverLimits.set(form.batchMethod, maxItems);
    // No cap above what the server takes.
    for (const [key, cap] of this.#caps) {
      if (key.startsWith(`${form.batchMethod}/`) && cap >= maxItems) this.#caps.delete(key);
    }
  }

  /** The most items a batch of the form's method may ever carry. */
  #ceiling<Req, Res>(form: BatchForm<Req, Res>): number {
    return Math.min(form.bounds.maxItems, this.#serverLimits.get(form.batchMethod) ?? Infinity);
  }
}

function capKey<Req, Res>(form: BatchForm<Req, Res>, request: Req): string {
  return `${form.batchMethod}/${form.groupOf(request) ?? ''}`;
}
