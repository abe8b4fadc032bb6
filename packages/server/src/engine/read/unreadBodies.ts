// The bodies a bounded read left out (NULL, with their lengths), read afterwards by id into their
// cells, once the answer is known to hold them. Rows never change once written, so the cells
// read first and the bodies read now are of the same versions.
import type { CallScope } from '../base/callScope.js';
import type { Partition } from '../mysql/partitions.js';
import { readBodies } from '../mysql/sql/contentReads.js';
import type { StoredCell } from '../mysql/sql/contentRows.js';

/**
 * Fills in the bodies of the cells, each list of one table of the partition, in one statement,
 * for the call of `scope`.
 */
export async function readBodiesInto(
  scope: CallScope,
  partition: Pick<Partition, 'read'>,
  tables: readonly { readonly table: string; readonly cells: readonly StoredCell[] }[],
): Promise<void> {
  const wanted = tables.filter(({ cells }) => cells.length > 0);
  if (wanted.length === 0) return;
  const bodies = await partition.read(scope, (reader) =>
    readBodies(
      reader,
      wanted.map(({ table, cells }) => ({ table, ids: cells.map(({ id }) => id) })),
    ),
  );
  wanted.forEach(({ cells }, t) => {
    for (const cell of cells) cell.body = bodies[t]!.get(String(cell.id)) ?? cell.body;
  });
}
