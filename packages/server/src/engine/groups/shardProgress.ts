// What one owned shard's cells have come to between its committed cursor and what was read of
// its log: which were delivered and await an answer, which are handled (acknowledged, parked,
// or passed over because the member does not take their cell), and so how far the cursor may
// move: over the contiguous handled prefix, never past a cell still out.
import type { RowId } from '../base/exactInteger.js';

interface Entry {
  readonly id: RowId;
  handled: boolean;
}

export class ShardProgress {
  /** Cells read after `handledUpTo`, in id order; those before `head` are gone. */
  private entries: Entry[] = [];
  private head = 0;
  private delivered = 0;
  /** Every cell with an id at or below this is handled. */
  private prefix: RowId;

  constructor(
    /** The cursor the shard was taken at. */
    cursor: RowId,
  ) {
    this.prefix = cursor;
  }

  /** Every cell with an id at or below this is handled: where the cursor may go. */
  get handledUpTo(): RowId {
    return this.prefix;
  }

  /** Cells delivered and not yet handled. */
  get outstanding(): number {
    return this.delivered;
  }

  /** A cell read from the log: delivered now, or (`handled`) passed over unseen. */
  read(id: RowId, handled: boolean): void {
    if (!handled) this.delivered += 1;
    this.entries.push({ id, handled });
    this.advance();
  }

  /**
   * A delivered cell is handled; false when it is not one awaiting an answer (already handled,
   * or never delivered under this ownership).
   */
  handle(id: RowId): boolean {
    const entry = this.find(id);
    if (!entry || entry.handled) return false;
    entry.handled = true;
    this.delivered -= 1;
    this.advance();
    return true;
  }

  /** Whether `id` was delivered under this ownership and awaits an answer. */
  awaits(id: RowId): boolean {
    const entry = this.find(id);
    return entry !== undefined && !entry.handled;
  }

  /** The first `count` cells still out, in id order: those a member that died was holding. */
  firstOutstanding(count: number): RowId[] {
    const ids: RowId[] = [];
    for (let i = this.head; i < this.entries.length && ids.length < count; i++) {
      if (!this.entries[i]!.handled) ids.push(this.entries[i]!.id);
    }
    return ids;
  }

  private advance(): void {
    while (this.head < this.entries.length && this.entries[this.head]!.handled) {
      this.prefix = this.entries[this.head]!.id;
      this.head += 1;
    }
    // Drop what is behind the head now and then, not on every cell.
    if (this.head > 1024 && this.head * 2 > this.entries.length) {
      this.entries = this.entries.slice(this.head);
      this.head = 0;
    }
  }

  /** The entry of `id`, by binary search: ids were read in ascending order. */
  private find(id: RowId): Entry | undefined {
    let low = this.head;
    let high = this.entries.length - 1;
    while (low <= high) {
      const middle = (low + high) >>> 1;
      const at = this.entries[middle]!.id;
      if (at < id) low = middle + 1;
      else if (at > id) high = middle - 1;
      else return this.entries[middle];
    }
    return undefined;
  }
}
