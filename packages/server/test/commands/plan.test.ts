// `shameless plan`, the dry run of serving a store: it creates nothing (not even the
// database), lists what serve would create, reports what serve would refuse, and reads model
// files as a person writes them. The gem-store cases are in consistency/gem.test.ts.
import { expect } from 'chai';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabases, type TestDatabases } from '@shameless/testkit';
import mysql from 'mysql2/promise';
import { createDatabaseSql } from '../../src/engine/mysql/mysqlPool.js';
import { modelSpecFromJson } from '../../src/commands/modelFile.js';
import { runCommand } from '../support/serverProcess.js';
import { RATE_MODEL, startStoreFixture } from '../support/storeFixture.js';

describe('shameless plan', function () {
  this.timeout(60_000);
  let databases: TestDatabases;
  before(async () => {
    databases = await createTestDatabases(1);
  });
  after(() => databases?.drop());

  it('on a database that does not exist: lists CREATE DATABASE and every table, and creates nothing', async () => {
    const missing = `${databases.names[0]}_missing`;
    const url = databases.urls[0]!.replace(/\/[^/]*$/, `/${missing}`);
    const result = await runCommand(['plan', '--partition', url, '--shards-count', '2']);
    expect(result.code, result.stdout + result.stderr).to.equal(3);
    expect(result.stdout).to.include(`${createDatabaseSql(missing)};`);
    for (const table of ['shameless_store', 'shameless_models', 'shameless_log_locks']) {
      expect(result.stdout).to.include(`CREATE TABLE IF NOT EXISTS \`${table}\``);
    }
    const sql = await mysql.createConnection(databases.urls[0]!);
    try {
      const [rows] = await sql.query<mysql.RowDataPacket[]>(
        'SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?',
        [missing],
      );
      expect(rows, 'the database after the dry run').to.deep.equal([]);
    } finally {
      await sql.end();
    }
  });

  it('reports a store recorded with another shard count as a start serve would refuse (exit 1)', async () => {
    const store = await startStoreFixture({ partitionUrls: databases.urls, shardsCount: 4 });
    await store.close();
    const result = await runCommand([
      'plan',
      '--partition',
      databases.urls[0]!,
      '--namespace',
      'test',
      '--shards-count',
      '8',
    ]);
    expect(result.code, result.stdout).to.equal(1);
    expect(result.stdout).to.match(
      /FAILED serve would refuse to start: partition 0 .* created with shardsCount=4 .* started with shardsCount=8/,
    );
    const same = await runCommand([
      'plan',
      '--partition',
      databases.urls[0]!,
      '--namespace',
      'test',
      '--shards-count',
      '4',
    ]);
    expect(same.code, same.stdout).to.equal(0);
    expect(same.stdout).to.include('-- nothing to change');
  });

  it('lists the rows serving or DefineModel would write where no schema changes, and exits 3', async () => {
    const own = await createTestDatabases(1);
    try {
      const store = await startStoreFixture({ partitionUrls: own.urls, shardsCount: 4 });
      try {
        await store.api.defineModel({ model: RATE_MODEL });
      } finally {
        await store.close();
      }
      const plan = (...flags: string[]) =>
        runCommand([
          'plan',
          ...['--partition', own.urls[0]!, '--namespace', 'test', '--shards-count', '4'],
          ...flags,
        ]);
      const served = await plan();
      expect(served.code, served.stdout).to.equal(0);
      expect(served.stdout).to.include('-- nothing to change');

      // A new cell is a new definition row, and no table changes.
      const file = join(tmpdir(), `shameless-plan-cell-${process.pid}.json`);
      writeFileSync(file, JSON.stringify({ ...RATE_MODEL, cells: ['meta', 'ota_rate'] }));
      const cellAdded = await plan('--model', file);
      expect(cellAdded.code, cellAdded.stdout).to.equal(3);
      expect(cellAdded.stdout).to.include('DefineModel adds cells ota_rate');
      expect(cellAdded.stdout).to.include('-- no schema change, but serving writes the rows');
      expect(cellAdded.stdout).to.include(
        '--   partition 0: the new definition of rate in test_shameless_models',
      );
      expect(cellAdded.stdout).not.to.include('-- nothing to change');

      // A store table without its record: serving writes the record, and creates no table.
      const sql = await mysql.createConnection(own.urls[0]!);
      try {
        await sql.query('DELETE FROM `test_shameless_store`');
      } finally {
        await sql.end();
      }
      const unrecorded = await plan();
      expect(unrecorded.code, unrecorded.stdout).to.equal(3);
      expect(unrecorded.stdout).to.include('--   partition 0: the store record (shardsCount=4,');
    } finally {
      await own.drop();
    }
  });

  it('refuses a model file it cannot read as a definition, naming the key (exit 2)', async () => {
    const file = join(tmpdir(), `shameless-plan-bad-${process.pid}.json`);
    writeFileSync(
      file,
      JSON.stringify({
        name: 'rate',
        primaryIndex: { fields: [{ name: 'hotel_id', type: 'integer' }], shard: 'hotel_id' },
      }),
    );
    const result = await runCommand(['plan', '--model', file]);
    expect(result.code).to.equal(2);
    expect(result.stderr).to.include(
      `model file ${file}: model.primary_index: unknown key "shard"; known: name, fields, shardOn, shard_on`,
    );
    expect(result.stdout).to.equal('');
  });

  it('has --help describing the dry run, its model files and exit codes', async () => {
    const result = await runCommand(['plan', '--help']);
    expect(result.code).to.equal(0);
    expect(result.stdout).to.include('changes nothing');
    expect(result.stdout).to.include('--model <file...>');
    expect(result.stdout).to.include('--legacy-created-at-is-bigint');
    expect(result.stdout).to.match(/Exit code: 0 nothing to change; 3 changes listed/);
    expect(result.stdout, 'serving-only settings are not plan options').to.not.include('--listen');
    // Help is wrapped to the terminal: compare words, not lines.
    const words = result.stdout.replace(/\s+/g, ' ');
    expect(words, 'plan creates nothing').not.to.include('created if missing');
    expect(words).to.include('serve creates a database that is missing');
  });
});

describe('model files (pure)', () => {
  const proto = {
    name: 'rate',
    primaryIndex: {
      name: '',
      fields: [
        { name: 'hotel_id', type: 'FIELD_TYPE_INTEGER' },
        { name: 'room_type', type: 'FIELD_TYPE_STRING' },
        { name: 'check_in_date', type: 'FIELD_TYPE_STRING' },
      ],
      shardOn: 'hotel_id',
    },
    secondaryIndices: [
      {
        name: 'secondary',
        fields: [
          { name: 'hotel_id', type: 1 },
          { name: 'gateway', type: 2 },
          { name: 'discount_type', type: 2 },
        ],
        shardOn: 'hotel_id',
      },
    ],
    cells: ['meta'],
  };
  const expected = {
    name: 'rate',
    primaryIndex: {
      name: '',
      fields: [
        { name: 'hotel_id', type: 'integer' },
        { name: 'room_type', type: 'string' },
        { name: 'check_in_date', type: 'string' },
      ],
      shardOn: 'hotel_id',
    },
    secondaryIndices: [
      {
        name: 'secondary',
        fields: [
          { name: 'hotel_id', type: 'integer' },
          { name: 'gateway', type: 'string' },
          { name: 'discount_type', type: 'string' },
        ],
        shardOn: 'hotel_id',
      },
    ],
    cells: ['meta'],
  };

  it('reads proto JSON, the .proto’s own names, short type names and a whole DefineModel request alike', () => {
    const handWritten = {
      name: 'rate',
      primary_index: {
        shard_on: 'hotel_id',
        fields: [
          { name: 'hotel_id', type: 'integer' },
          { name: 'room_type', type: 'string' },
          { name: 'check_in_date', type: 'String' },
        ],
      },
      secondary_indices: [
        {
          name: 'secondary',
          shard_on: 'hotel_id',
          fields: [
            { name: 'hotel_id', type: 'integer' },
            { name: 'gateway', type: 'string' },
            { name: 'discount_type', type: 'string' },
          ],
        },
      ],
      cells: ['meta'],
    };
    expect(modelSpecFromJson(proto)).to.deep.equal(expected);
    expect(modelSpecFromJson(handWritten)).to.deep.equal(expected);
    expect(modelSpecFromJson({ model: proto })).to.deep.equal(expected);
    // The test suites' own definition, as DefineModel receives it, reads the same.
    expect(modelSpecFromJson(JSON.parse(JSON.stringify(RATE_MODEL)))).to.deep.equal(expected);
  });

  it('refuses unknown keys and types, naming where they are', () => {
    expect(() => modelSpecFromJson({ ...proto, indexes: [] })).to.throw(
      /^model: unknown key "indexes"/,
    );
    expect(() =>
      modelSpecFromJson({
        ...proto,
        secondaryIndices: [{ ...proto.secondaryIndices[0], fields: [{ name: 'x', type: 'int' }] }],
      }),
    ).to.throw(/^model\.secondary_indices\[0\]\.fields\[0\]\.type: must be "integer" or "string"/);
    expect(() => modelSpecFromJson({ name: 'rate' })).to.throw(
      /^model\.primary_index: is required/,
    );
    expect(() => modelSpecFromJson([])).to.throw(/must be a JSON object/);
  });
});
