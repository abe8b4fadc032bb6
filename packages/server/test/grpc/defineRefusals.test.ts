// DefineModel refuses, having created nothing, what it could not finish: a definition larger
// than the models table holds, and a model whose table names are taken by tables that are not
// its own. `shameless plan` says so beforehand.
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { FieldType, type ModelDefinition } from '@shameless/proto';
import { expect } from 'chai';
import mysql from 'mysql2/promise';
import { runCommand } from '../support/serverProcess.js';
import { type StoreFixture, startStoreFixture } from '../support/storeFixture.js';

const model = (name: string, cells: string[] = []): ModelDefinition => ({
  name,
  primaryIndex: {
    name: '',
    fields: [{ name: 'key', type: FieldType.FIELD_TYPE_INTEGER }],
    shardOn: 'key',
  },
  secondaryIndices: [],
  cells,
});

/** 300 cells of 250 characters: about 77 KB of JSON, past the models table's 64 KiB. */
const manyLongCells = Array.from({ length: 300 }, (_, i) => `c${String(i).padStart(249, '0')}`);

/** Primary (key integer, name string) on key. */
const named = (name: string): ModelDefinition => ({
  ...model(name),
  primaryIndex: {
    name: '',
    fields: [
      { name: 'key', type: FieldType.FIELD_TYPE_INTEGER },
      { name: 'name', type: FieldType.FIELD_TYPE_STRING },
    ],
    shardOn: 'key',
  },
});

describe('DefineModel refusals that leave nothing behind', function () {
  this.timeout(60_000);
  let store: StoreFixture;
  let sql: mysql.Connection;
  before(async () => {
    store = await startStoreFixture();
    sql = await mysql.createConnection(store.partitionUrls[0]!);
  });
  after(async () => {
    await sql?.end();
    await store?.close();
  });

  const tablesOf = async (name: string) => {
    const [rows] = await sql.query<mysql.RowDataPacket[]>(
      `SELECT TABLE_NAME FROM information_schema.TABLES
        WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE ?`,
      [`test\\_${name}\\_%`],
    );
    return rows.map((row) => String(row.TABLE_NAME));
  };

  const refusal = (work: Promise<unknown>) =>
    work.then(
      () => {
        throw new Error('DefineModel was accepted');
      },
      (error: { code: number; details: string }) => error,
    );

  it('a definition the models table cannot hold: INVALID_ARGUMENT naming model.cells, no table made', async () => {
    const error = await refusal(store.api.defineModel({ model: model('wide', manyLongCells) }));
    expect(error.code).to.equal(status.INVALID_ARGUMENT);
    expect(error.details).to.match(
      /^model\.cells: the definition takes \d+ bytes .* at most 65535/,
    );
    expect(await tablesOf('wide')).to.deep.equal([]);
  });

  it('cells added past that size: INVALID_ARGUMENT, the stored definition unchanged', async () => {
    await store.api.defineModel({ model: model('grown', ['a']) });
    const error = await refusal(
      store.api.defineModel({ model: model('grown', ['a', ...manyLongCells]) }),
    );
    expect(error.code).to.equal(status.INVALID_ARGUMENT);
    const described = await store.api.describeStore({});
    expect(described.models.find((m) => m.name === 'grown')?.cells).to.deep.equal(['a']);
  });

  it('tables of its name that are not its own: FAILED_PRECONDITION naming one, no table made; plan says so', async () => {
    await sql.query('CREATE TABLE `test_clash_000001` (`x` INT)');
    const error = await refusal(store.api.defineModel({ model: model('clash') }));
    expect(error.code).to.equal(status.FAILED_PRECONDITION);
    expect(error.details).to.equal(
      'table test_clash_000001 exists but is not a table of model clash: it has no column ' +
        'id, uuid, column_name, ref_key, body, created_at; rename or drop it, or name the model otherwise',
    );
    expect(await tablesOf('clash')).to.deep.equal(['test_clash_000001']);

    const file = join(tmpdir(), `shameless-clash-${process.pid}.json`);
    writeFileSync(
      file,
      JSON.stringify({
        name: 'clash',
        primaryIndex: { fields: [{ name: 'key', type: 'integer' }], shardOn: 'key' },
      }),
    );
    const plan = await runCommand([
      'plan',
      '--partition',
      store.partitionUrls[0]!,
      '--namespace',
      'test',
      '--shards-count',
      '4',
      '--model',
      file,
    ]);
    expect(plan.code, plan.stdout).to.equal(1);
    expect(plan.stdout).to.include(
      'DefineModel would refuse it: table test_clash_000001 exists but is not a table of model clash',
    );
  });

  it('an index table of its name whose column is not of its field’s type: FAILED_PRECONDITION naming it, no table made', async () => {
    // What a define of (key integer, name integer) left when its server died after one table:
    // a string field over this BIGINT column would fail every write of the shard.
    await sql.query(
      'CREATE TABLE `test_typed_primary_index_000001` (`key` BIGINT NOT NULL, ' +
        '`name` BIGINT NOT NULL, `uuid` VARCHAR(36) NOT NULL, PRIMARY KEY (`key`, `name`))',
    );
    const error = await refusal(store.api.defineModel({ model: named('typed') }));
    expect(error.code).to.equal(status.FAILED_PRECONDITION);
    // MariaDB says bigint(20), MySQL 8 bigint.
    expect(error.details).to.match(
      /^table test_typed_primary_index_000001 exists but is not a table of model typed: its column name is bigint(\(20\))?, not a string column; rename or drop it, or name the model otherwise$/,
    );
    expect(await tablesOf('typed')).to.deep.equal(['test_typed_primary_index_000001']);
  });
});
