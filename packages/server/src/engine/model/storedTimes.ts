// The created_at a write stores, known without reading it back. A DATETIME column keeps as
// many fractional digits of a second as it declares (ours 6, the gem's 0), and what a time has
// beyond them MySQL rounds where MariaDB cuts; a BIGINT of milliseconds (a legacy store) keeps
// what a Date holds. A write that cuts its time to the column's digits itself therefore stores
// exactly the time it holds, on either server, and can answer it as stored.
import type { CreatedAtKind } from './layout.js';

export class StoredTimes {
  /** Fractional digits of created_at, by content table, as far as inspected. */
  private readonly digits = new Map<string, number>();

  constructor(private readonly kind: CreatedAtKind) {}

  /** `table`'s created_at keeps `digits` fractional digits of a second. */
  learn(table: string, digits: number): void {
    this.digits.set(table, digits);
  }

  /** The time `at` as `table` stores it; undefined while its column has not been inspected. */
  asStored(table: string, at: Date): Date | undefined {
    if (this.kind === 'bigint') return at;
    const digits = this.digits.get(table);
    if (digits === undefined) return undefined;
    if (digits >= 3) return at;
    const unit = 10 ** (3 - digits);
    return new Date(Math.floor(at.getTime() / unit) * unit);
  }
}
