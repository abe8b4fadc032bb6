// Servers defining one model at once, with definitions that conflict: one definition wins, the
// other is refused (FAILED_PRECONDITION), and the tables left are exactly the winner's, each
// with the columns of the stored definition.
import { status } from '@grpc/grpc-js';
import { FieldType, type ModelDefinition } from '@shameless/proto';
import { expect } from 'chai';
import mysql from 'mysql2/promise';
import { type StoreFixture, startStoreFixture } from '../support/storeFixture.js';

const SHARDS = 32;

/** A model on one integer field, with optional secondary indices on it. */
const model = (name: string, field: string, secondary: string[] = []): ModelDefinition => ({
  name,
  primaryIndex: {
    name: '',
    fields: [{ name: field, type: FieldType.FIELD_TYPE_INTEGER }],
    shardOn: field,
  },
  secondaryIndices: secondary.map((index) => ({
    name: index,
    fields: [{ name: field, type: FieldType.FIELD_TYPE_INTEGER }],
    shardOn: field,
  })),
  cells: [],
});

describe('DefineModel: conflicting definitions of one model at once', function () {
  this.timeout(120_000);
  let store: StoreFixture;
  let other: StoreFixture;
  let sql: mysql.Connection;
  before(async () => {
    store = await startStoreFixture({ shardsCount: SHARDS });
    other = await startStoreFixture({ shardsCount: SHARDS, partitionUrls: store.partitionUrls });
    sql = await mysql.createConnection(store.partitionUrls[0]!);
  });
  after(async () => {
    await sql?.end();
    await other?.close();
    await store?.close();
  });

  /** Every table of the model's name, with its columns. */
  const tablesOf = async (name: string) => {
    const [rows] = await sql.query<mysql.RowDataPacket[]>(
      `SELECT TABLE_NAME AS t, GROUP_CONCAT(COLUMN_NAME ORDER BY COLUMN_NAME) AS c
         FROM information_schema.COLUMNS
        WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE ?
        GROUP BY TABLE_NAME`,
      [`test\\_${name}\\_%`],
    );
    return new Map(rows.map((row) => [String(row.t), String(row.c)]));
  };

  it('one wins, the other is refused, and the tables are exactly the winner’s', async () => {
    for (let round = 0; round < 4; round++) {
      const name = `race${round}`;
      const outcomes = await Promise.allSettled([
        store.api.defineModel({ model: model(name, 'left', ['by_left']) }),
        other.api.defineModel({ model: model(name, 'right') }),
      ]);
      const refused = outcomes.filter((outcome) => outcome.status === 'rejected');
      expect(refused, `round ${round}`).to.have.length(1);
      expect((refused[0] as PromiseRejectedResult).reason.code).to.equal(
        status.FAILED_PRECONDITION,
      );
      const winner = outcomes[0]!.status === 'fulfilled' ? 'left' : 'right';
      const indices = winner === 'left' ? ['primary', 'by_left'] : ['primary'];
      const expected = new Map<string, string>();
      for (let shard = 0; shard < SHARDS; shard++) {
        const pad = String(shard).padStart(6, '0');
        expected.set(
          `test_${name}_${pad}`,
          'body,column_name,created_at,id,ref_key,request_id,uuid',
        );
        for (const index of indices)
          expected.set(`test_${name}_${index}_index_${pad}`, `${winner},uuid`);
      }
      const found = await tablesOf(name);
      expect(
        [...found].filter(([table, columns]) => expected.get(table) !== columns),
        `round ${round}: tables that are not the stored definition's (${winner} won)`,
      ).to.deep.equal([]);
      expect(found.size, `round ${round}`).to.equal(expected.size);
    }
  });
});
