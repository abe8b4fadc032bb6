// A server may take fewer items in one batch call than the SDK's built-in bounds: one run with
// `--max-batch-keys` or `--max-put-batch` below the defaults. It refuses a larger batch whole,
// before it writes anything, with INVALID_ARGUMENT naming the batch's own field
// (`keys: at most 100 per call, got 500`, and `keys` in the trailer `shameless-field`).
// Sending each call alone would answer every caller, but the next batch would be refused
// again, every time; what the refusal says is worth keeping instead.

import type { ShamelessError } from '../call/errors.js';

/** A refusal of a batch for the number of items it carried. */
export interface SizeRefusal {
  /** The most items the server said it takes, when it said so. */
  readonly maxItems: number | undefined;
}

/**
 * What `error`, the failure of a whole batch call whose items are its field `itemsField`
 * (`keys`), says of the batch's size: undefined when it is no refusal of the size (a malformed
 * item is named `keys[3].uuid`, not `keys`).
 */
export function sizeRefusalOf(error: ShamelessError, itemsField: string): SizeRefusal | undefined {
  if (error.codeName !== 'INVALID_ARGUMENT') return undefined;
  const field = error.metadata?.get('shameless-field')[0]?.toString();
  if ((field ?? fieldNamedBy(error.details)) !== itemsField) return undefined;
  if (!/\bat most\b/.test(error.details)) return undefined;
  const stated = /\bat most (\d+) per call\b/.exec(error.details);
  const maxItems = stated === null ? undefined : Number(stated[1]);
  return { maxItems: maxItems !== undefined && maxItems >= 1 ? maxItems : undefined };
}

/** The field a message of the server's names first (`keys: at most ...` → `keys`). */
function fieldNamedBy(details: string): string | undefined {
  return /^([A-Za-z_]\w*): /.exec(details)?.[1];
}
