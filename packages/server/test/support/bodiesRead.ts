// The most bytes of cell bodies one read of a partition brought back from MySQL, for tests of
// what a read holds at once: the engine's reads pass through unchanged, only counted.
import type { CallScope } from '../../src/engine/base/callScope.js';
import type { PartitionSet } from '../../src/engine/mysql/partitions.js';
import type { StatementReader } from '../../src/engine/mysql/sql/statement.js';
import type { StoreFixture } from './storeFixture.js';

export interface BodiesRead {
  /** The most body bytes one read's statements answered, since the last reset. */
  readonly most: number;
  reset(): void;
}

export function countBodiesRead(store: StoreFixture, partitionIndex = 0): BodiesRead {
  const partition = (store.engine as unknown as { partitions: PartitionSet }).partitions.at(
    partitionIndex,
  );
  const read = partition.read.bind(partition);
  let most = 0;
  partition.read = <T>(
    scope: CallScope,
    work: (reader: StatementReader) => Promise<T>,
    apart?: boolean,
  ) =>
    read(
      scope,
      (reader) =>
        work({
          read: async (statements) => {
            const results = await reader.read(statements);
            most = Math.max(most, bodyBytesOf(results));
            return results;
          },
        }),
      apart,
    );
  return {
    get most() {
      return most;
    },
    reset() {
      most = 0;
    },
  };
}

function bodyBytesOf(results: readonly unknown[]): number {
  let bytes = 0;
  for (const result of results) {
    if (!Array.isArray(result)) continue;
    for (const row of result as Record<string, unknown>[]) {
      if (Buffer.isBuffer(row?.body)) bytes += row.body.length;
    }
  }
  return bytes;
}
