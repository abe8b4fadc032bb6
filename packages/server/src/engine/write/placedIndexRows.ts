// The index rows a group's creates write, placed in the order the transaction takes their
// keys: tables by name, rows by key, so that two groups creating the same values lock them in
// the same order and cannot deadlock on them.
import type { IndexRowWrite, WriteItem } from './writeItems.js';

/** A create's row in one index, with the create's position in the group. */
export interface PlacedIndexRow extends IndexRowWrite {
  readonly item: number;
  readonly uuid: string;
}

/** The index rows the creates among `items` write, per index table in name order, each list in key order. */
export function indexRowsOf(items: readonly WriteItem[]): Map<string, PlacedIndexRow[]> {
  const byTable = new Map<string, PlacedIndexRow[]>();
  items.forEach((item, i) => {
    if (item.kind !== 'create') return;
    for (const row of item.indexRows) {
      let rows = byTable.get(row.table);
      if (!rows) byTable.set(row.table, (rows = []));
      rows.push({
        index: row.index,
        table: row.table,
        values: row.values,
        primary: row.primary,
        item: i,
        uuid: item.uuid,
      });
    }
  });
  for (const rows of byTable.values()) rows.sort((a, b) => compareKeys(a.values, b.values));
  return new Map([...byTable].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** Index keys in a total order (numbers by value, strings by UTF-8 bytes, as utf8mb4_bin). */
function compareKeys(a: readonly unknown[], b: readonly unknown[]): number {
  for (let i = 0; i < a.length; i++) {
    const x = a[i];
    const y = b[i];
    if (typeof x === 'string' && typeof y === 'string') {
      const order = Buffer.compare(Buffer.from(x), Buffer.from(y));
      if (order !== 0) return order;
    } else if (x !== y) {
      return (x as number | bigint) < (y as number | bigint) ? -1 : 1;
    }
  }
  return 0;
}
