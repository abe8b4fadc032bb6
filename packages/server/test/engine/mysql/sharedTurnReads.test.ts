// Reads that callers make in the same turn share their SELECTs (batchLoader.ts, latestCells.ts),
// and each caller's answer is found again by position, not by a key string: over two partitions
// of a real MariaDB, callers asking for overlapping cells, cells asked for twice, several cells
// of one record and cells without a version each get exactly their own answer, in their order.
import { expect } from 'chai';
import { WriteMode } from '@shameless/proto';
import { UNBOUNDED } from '../../../src/engine/base/callScope.js';
import type { StoredCell } from '../../../src/engine/mysql/sql/contentRows.js';
import {
  RATE_MODEL,
  type StoreFixture,
  pack,
  putRate,
  requestId,
  startStoreFixture,
  unpack,
} from '../../support/storeFixture.js';

const SHARDS = 4;
const RECORDS = 24;
const MISSING_UUID = '11111111-1111-4111-8111-111111111111';
/** Two hotels whose index shards lie on different partitions: their records' content too. */
const HOTELS = [100, 102];
const hotelOf = (i: number) => HOTELS[i % 2]!;
/** Which records have a meta cell. */
const hasMeta = (i: number) => i % 3 === 1;
const dateOf = (i: number) => `2026-01-${String(i + 1).padStart(2, '0')}`;

describe('reads that share a turn', function () {
  this.timeout(60_000);
  let store: StoreFixture;
  /** The seeded records, in creation order. */
  const uuids: string[] = [];

  before(async () => {
    store = await startStoreFixture({ shardsCount: SHARDS, partitionCount: 2 });
    await store.api.defineModel({ model: RATE_MODEL });
    // One after another: the creates of one turn would share a content shard (createShards.ts).
    for (let i = 0; i < RECORDS; i++) uuids.push(await putRate(store.api, hotelOf(i), dateOf(i)));
    await store.api.writeCells({
      writes: uuids.flatMap((uuid, i) =>
        hasMeta(i)
          ? [
              {
                model: 'rate',
                uuid,
                cell: 'meta',
                body: pack({ record: i }),
                mode: WriteMode.WRITE_MODE_REPLACE,
                requestId: requestId(),
              },
            ]
          : [],
      ),
    });
  });
  after(async () => {
    await store?.close();
  });

  /** A cell as the test tells them apart: its record, its name and what its body says. */
  const summary = (cell: StoredCell | undefined) => {
    if (cell === undefined) return undefined;
    const body = unpack(cell.body);
    return `${cell.uuid} ${cell.name} ${String(cell.name === 'meta' ? body.record : body.check_in_date)}`;
  };
  /** The summary of the cell a key should find, if it has a version. */
  const expectedAt = ({ uuid, cell }: { uuid: string; cell: string }) => {
    const i = uuids.indexOf(uuid);
    if (i < 0 || (cell === 'meta' && !hasMeta(i))) return undefined;
    return `${uuid} ${cell} ${cell === 'meta' ? i : dateOf(i)}`;
  };

  it('answers each of several callers of one turn at its own positions, over both partitions', async () => {
    const everyBase = uuids.map((uuid) => ({ uuid, cell: 'base' })).reverse();
    const callers = [
      // Every record's base, in reverse, with a missing record and a key asked for twice.
      [...everyBase, { uuid: MISSING_UUID, cell: 'base' }, everyBase[3]!],
      // Both cells of each record, meta first: two thirds of the meta cells have no version.
      uuids.flatMap((uuid) => [
        { uuid, cell: 'meta' },
        { uuid, cell: 'base' },
      ]),
      // One key another caller asks for too.
      [{ uuid: uuids[5]!, cell: 'meta' }],
      // Only keys without a version.
      [
        { uuid: uuids[0]!, cell: 'meta' },
        { uuid: MISSING_UUID, cell: 'meta' },
      ],
    ];
    // Called in one go: the engine reads them in the same turn.
    const answers = await Promise.all(
      callers.map((keys) => store.engine.getCells(UNBOUNDED, 'rate', keys)),
    );
    const partitions = new Set(
      answers[0]!.flatMap((cell) => (cell ? [store.engine.layout.partitionOf(cell.shard)] : [])),
    );
    expect([...partitions].sort(), 'records on both partitions').to.deep.equal([0, 1]);
    callers.forEach((keys, c) => {
      expect(answers[c]!.map(summary), `caller ${c}`).to.deep.equal(keys.map(expectedAt));
    });
    // A cell asked for twice in one call is the same version at both positions.
    expect(answers[0]![everyBase.length + 1]).to.deep.equal(answers[0]![3]);
  });

  it('gives each record of a Where page the cells asked for, in the order asked for', async () => {
    const page = await store.engine.where(UNBOUNDED, {
      model: 'rate',
      index: '',
      conditions: [{ field: 'hotel_id', op: 'eq', values: [HOTELS[1]!] }],
      cells: ['meta', 'base'],
      limit: RECORDS,
      descending: false,
      pageToken: '',
    });
    expect(page.records).to.have.length(RECORDS / 2);
    for (const record of page.records) {
      const i = uuids.indexOf(record.uuid);
      expect(record.cells.map((cell) => [cell.uuid, cell.name])).to.deep.equal([
        ...(hasMeta(i) ? [[record.uuid, 'meta']] : []),
        [record.uuid, 'base'],
      ]);
      if (hasMeta(i)) expect(unpack(record.cells[0]!.body)).to.deep.equal({ record: i });
    }
  });
});
