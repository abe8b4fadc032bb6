// The integer range of index columns narrower than the BIGINT of the tables we create: the
// Ruby gem makes its integer index columns INT. A value such a column cannot hold is refused
// before anything is written, naming its field: an INSERT IGNORE would store the column's
// limit instead (a record no longer reached by its own values), a plain INSERT fail its group.
import { InvalidArgumentError } from '../base/errors.js';
import type { IndexSpec } from './model.js';
import type { IndexScalar } from './model.js';

export interface IntegerRange {
  readonly min: bigint;
  readonly max: bigint;
  /** The column's type as MySQL declares it, for the message: `int(11)`. */
  readonly type: string;
}

const BITS: Record<string, number> = { tinyint: 8, smallint: 16, mediumint: 24, int: 32 };

/**
 * The values an integer column of this COLUMN_TYPE holds (`int(11)`, `smallint unsigned`);
 * undefined for a BIGINT, which holds every index value, and for any other type.
 */
export function integerRangeOf(columnType: string): IntegerRange | undefined {
  const type = columnType.toLowerCase();
  const bits = BITS[/^[a-z]+/.exec(type)?.[0] ?? ''];
  if (bits === undefined) return undefined;
  const span = 2n ** BigInt(bits);
  return / unsigned\b/.test(type)
    ? { min: 0n, max: span - 1n, type }
    : { min: -(span / 2n), max: span / 2n - 1n, type };
}

export class IndexColumns {
  /** The narrow integer columns of index tables, by table and column, as far as inspected. */
  private readonly ranges = new Map<string, ReadonlyMap<string, IntegerRange>>();

  /** `table` has these columns, by name, of these COLUMN_TYPEs. */
  learn(table: string, columnTypes: ReadonlyMap<string, string>): void {
    const narrow = new Map<string, IntegerRange>();
    for (const [column, type] of columnTypes) {
      const range = integerRangeOf(type);
      if (range) narrow.set(column, range);
    }
    if (narrow.size > 0) this.ranges.set(table, narrow);
    else this.ranges.delete(table);
  }

  /** Refuses values of `index` that `table`'s columns cannot hold; `path` names the values. */
  requireFit(table: string, index: IndexSpec, values: readonly IndexScalar[], path: string): void {
    const narrow = this.ranges.get(table);
    if (narrow === undefined) return;
    index.fields.forEach((field, i) => {
      const range = narrow.get(field.name);
      const value = values[i];
      if (range === undefined || typeof value === 'string' || value === undefined) return;
      const integer = BigInt(value);
      if (integer >= range.min && integer <= range.max) return;
      throw new InvalidArgumentError(
        path,
        `${field.name} ${integer} does not fit the column of index table ${table} ` +
          `(${range.type}: ${range.min} to ${range.max}), a table the store did not create; ` +
          'nothing was written',
      );
    });
  }
}
