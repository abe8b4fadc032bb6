// The client commands of the real `shameless` binary against a real server over a real MariaDB:
// what each prints, exact 64-bit integers both ways, the token, and failures as status, details
// and a hint with a non-zero exit and no stack trace.
import { type ChildProcess, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { copyFileSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Metadata, type ServiceError, status } from '@grpc/grpc-js';
import { expect } from 'chai';
import { Unpackr } from 'msgpackr';
import mysql from 'mysql2/promise';
import { startTcpProxy } from '@shameless/testkit';
import { hintFor } from '../../src/commands/failureHints.js';
import { UNBOUNDED } from '../../src/engine/base/callScope.js';
import { parseExactJson } from '../../src/commands/exactJson.js';
import { authorization } from '../../src/grpc/middleware/authorization.js';
import { StatusError } from '../../src/grpc/call/statusError.js';
import { TokenSet } from '../../src/grpc/middleware/tokens.js';
import type { ServerMiddleware } from '../../src/grpc/call/middleware.js';
import { connectStore } from '../support/grpcCalls.js';
import { array, fixint, float64, map, object, str, uint64 } from '../support/msgpackBytes.js';
import { CLI, type CommandResult, runCommand, startCommand } from '../support/serverProcess.js';
import { RATE_MODEL, type StoreFixture, startStoreFixture } from '../support/storeFixture.js';
import { newToken, writeTokensFile } from '../support/tokens.js';

const TOKEN = 'cli-test-s3cret';
const COMMANDS = ['describe', 'find-shard', 'define', 'get', 'put', 'where', 'tail'];
const exactUnpackr = new Unpackr({ useRecords: false, mapsAsObjects: true, int64AsType: 'bigint' });

/** A server that wants `authorization: Bearer TOKEN` on every Store call. */
const requireToken: ServerMiddleware = async function* (request, context, next) {
  if (context.metadata.get('authorization')[0] !== `Bearer ${TOKEN}`) {
    throw new StatusError(status.UNAUTHENTICATED, 'a valid bearer token is required');
  }
  yield* next(request, context);
};

/** Values of a rate record as JSON: every index field (a create needs them all) and `extra`. */
const rate = (hotelId: number, room: string, extra = ''): string =>
  `{"hotel_id": ${hotelId}, "room_type": "${room}", "check_in_date": "2026-01-01", ` +
  `"gateway": "g", "discount_type": "none"${extra ? ', ' + extra : ''}}`;

const lines = (text: string): unknown[] =>
  text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => parseExactJson(line));

function expectNoStack(result: CommandResult) {
  expect(result.stderr).not.to.match(/\n\s+at /);
  expect(result.stdout + result.stderr).not.to.include(TOKEN);
}

describe('shameless client commands', function () {
  let store: StoreFixture;
  let shameless: (args: string[], input?: string) => Promise<CommandResult>;
  let modelFile: string;

  before(async () => {
    store = await startStoreFixture({ middleware: [requireToken] });
    shameless = (args, input) =>
      runCommand(args, {
        env: { SHAMELESS_ADDRESS: store.address, SHAMELESS_TOKEN: TOKEN },
        input,
      });
    const directory = mkdtempSync(join(tmpdir(), 'shameless-cli-'));
    modelFile = join(directory, 'rate.json');
    writeFileSync(modelFile, JSON.stringify(RATE_MODEL));
  });
  after(() => store?.close());

  describe('the program', () => {
    it('prints help listing every command when run bare (stdout, exit 0), and serve is no longer the default', async () => {
      const result = await runCommand([]);
      expect(result.code, result.stderr).to.equal(0);
      for (const command of ['serve', 'plan', ...COMMANDS]) {
        expect(result.stdout).to.match(new RegExp(`^  ${command} `, 'm'));
      }
      expect(result.stdout).to.include('Exit codes: 0 done; 1 a call failed');
      const describe = await runCommand(['describe', '--address', '127.0.0.1:1']);
      expect(describe.stderr).not.to.include("too many arguments for 'serve'");
    });

    it('refuses a malformed command line before any call, with exit 2 as its own checks do', async () => {
      const cases: [string[], string][] = [
        [['describe', '--bogus'], "unknown option '--bogus'"],
        [['--bogus'], "unknown option '--bogus'"],
        [['describe', 'extra'], "too many arguments for 'describe'"],
        [['nope'], "unknown command 'nope'"],
        [['define'], "required option '--file <model.json>' not specified"],
        [['get', 'rate'], "missing required argument 'uuid'"],
        [['get', 'rate', 'u', '--ref-key'], "option '--ref-key <n>' argument missing"],
        [['where', 'rate', 'hotel_id=7', '--order', 'up'], "argument 'up' is invalid"],
        [['find-shard', '--value', '1', '--uuid', 'u'], 'cannot be used with'],
        [['serve', '--bogus'], "unknown option '--bogus'"],
        [['plan', '--bogus'], "unknown option '--bogus'"],
      ];
      for (const [args, message] of cases) {
        const result = await runCommand(args, { env: { SHAMELESS_ADDRESS: '127.0.0.1:1' } });
        expect(result.code, args.join(' ')).to.equal(2);
        expect(result.stderr, args.join(' ')).to.include(message);
        expectNoStack(result);
      }
    });

    it('before `pnpm build`, says to run it instead of printing ERR_MODULE_NOT_FOUND', async () => {
      // The bin script alone, without the dist/ it loads: a checkout not built yet.
      const checkout = mkdtempSync(join(tmpdir(), 'shameless-unbuilt-'));
      mkdirSync(join(checkout, 'bin'));
      copyFileSync(CLI, join(checkout, 'bin', 'shameless.js'));
      const child = spawnSync(
        process.execPath,
        [join(checkout, 'bin', 'shameless.js'), 'describe'],
        {
          encoding: 'utf8',
        },
      );
      expect(child.status).to.equal(1);
      expect(child.stderr).to.include('shameless: the CLI is not built');
      expect(child.stderr).to.include('Run `pnpm build` at the repository root');
      expect(child.stderr).not.to.include('ERR_MODULE_NOT_FOUND');
      expect(child.stderr).not.to.match(/\n\s+at /);
    });

    it('prints its version from package.json', async () => {
      const result = await runCommand(['--version']);
      expect(result.code).to.equal(0);
      expect(result.stdout.trim()).to.equal('0.1.0');
    });

    for (const command of COMMANDS) {
      it(`${command} --help names its connection options`, async () => {
        const result = await runCommand([command, '--help']);
        expect(result.code).to.equal(0);
        for (const option of [
          '--address',
          '--token',
          '--tls-ca',
          '--tls-cert',
          '--tls-key',
          '--deadline-ms',
        ]) {
          expect(result.stdout).to.include(option);
        }
        expect(result.stdout).to.include('SHAMELESS_ADDRESS');
        expect(result.stdout).to.include('SHAMELESS_CLIENT_TLS_CERT');
      });
    }
  });

  describe('with a server', () => {
    before(async () => {
      const first = await shameless(['define', '--file', modelFile]);
      expect(first.code, first.stderr).to.equal(0);
      expect(JSON.parse(first.stdout)).to.deep.include({ changed: true });
    });

    it('define again is a no-op; describe lists the model with its indices', async () => {
      const again = await shameless(['define', '--file', modelFile]);
      expect(again.code, again.stderr).to.equal(0);
      expect(JSON.parse(again.stdout).changed).to.equal(false);
      const described = await shameless(['describe']);
      expect(described.code, described.stderr).to.equal(0);
      const json = JSON.parse(described.stdout);
      expect(json.shardsCount).to.equal(4);
      expect(json.maxCellBytes, 'the largest cell').to.be.greaterThan(1024 * 1024);
      expect(json.partitions[0].down).to.equal(false);
      const rate = json.models.find((model: { name: string }) => model.name === 'rate');
      expect(rate.primaryIndex.shardOn).to.equal('hotel_id');
      expect(rate.secondaryIndices[0].name).to.equal('secondary');
      expect(rate.cells).to.deep.equal(['meta']);
    });

    it('put keeps 64-bit integers exact and integral; get prints them back exactly', async () => {
      const values = rate(
        41,
        'double',
        '"big": 9007199254740993, "wide": 1099511627776, "low": -9223372036854775808, ' +
          '"top": 18446744073709551615, "price": 12.5',
      );
      const put = await shameless(['put', 'rate', values]);
      expect(put.code, put.stderr).to.equal(0);
      const [answer] = lines(put.stdout) as [
        { uuid: string; created: boolean; base: { refKey: number } },
      ];
      expect(answer.created).to.equal(true);
      expect(answer.base.refKey).to.equal(0);

      const stored = await store.engine.getCell(UNBOUNDED, 'rate', answer.uuid, 'base');
      const body = exactUnpackr.unpack(stored.body) as Record<string, unknown>;
      expect(body.big).to.equal(9007199254740993n);
      expect(body.wide).to.equal(1099511627776n); // an integer, not the float 1099511627776.0
      expect(body.low).to.equal(-9223372036854775808n);
      expect(body.top, "MessagePack's largest integer").to.equal(18446744073709551615n);
      expect(body.price).to.equal(12.5);

      const get = await shameless(['get', 'rate', answer.uuid]);
      expect(get.code, get.stderr).to.equal(0);
      expect(get.stdout).to.include('"big":9007199254740993');
      expect(get.stdout).to.include('"low":-9223372036854775808');
      const [cell] = lines(get.stdout) as [
        { uuid: string; cell: string; body: Record<string, unknown> },
      ];
      expect(cell.uuid).to.equal(answer.uuid);
      expect(cell.cell).to.equal('base');
      expect(cell.body.big).to.equal(9007199254740993n);
    });

    it('put stores a number written with a fraction or exponent as a float, however large', async () => {
      // What the refusal of an integer past 64 bits advises: `1e20` or `…616.0` to store a float.
      const values = rate(
        50,
        'float',
        '"exp": 1e20, "fraction": 18446744073709551616.0, "wide": 2.5e10, "int": 10000000000',
      );
      const put = await shameless(['put', 'rate', values]);
      expect(put.code, put.stderr).to.equal(0);
      const { uuid } = lines(put.stdout)[0] as { uuid: string };
      const stored = await store.engine.getCell(UNBOUNDED, 'rate', uuid, 'base');
      const body = exactUnpackr.unpack(stored.body) as Record<string, unknown>;
      expect(body.exp).to.equal(1e20);
      expect(body.fraction).to.equal(18446744073709551616);
      expect(body.wide).to.equal(25000000000);
      expect(body.int, 'an integer literal stays an integer').to.equal(10000000000n);
    });

    it('get, where and tail print every body value exactly, and put takes the printed body back to the same bytes', async () => {
      // Written byte by byte, as a Ruby or Python writer would: each value in its smallest format.
      const timestamp96 = Buffer.alloc(15);
      timestamp96.set([0xc7, 12, 0xff]);
      timestamp96.writeUInt32BE(123_456_789, 3); // nanoseconds
      timestamp96.writeBigInt64BE(1_795_000_000n, 7); // seconds: 2026-11-18T11:06:40Z
      const exotic = object({
        symbol: Buffer.from([0xd4, 0x00, 0x61]), // msgpack-ruby's Symbol :a, ext 0
        custom: Buffer.from([0xd5, 0x05, 0x01, 0x02]), // an application's ext 5
        at: timestamp96,
        at32: Buffer.from([0xd6, 0xff, 0x6a, 0x00, 0x00, 0x00]),
        binary: Buffer.from([0xc4, 0x03, 0x00, 0x01, 0x02]),
        whole: float64(120),
        negativeZero: float64(-0),
        nan: float64(Number.NaN),
        integer: fixint(120),
        top: uint64(2n ** 64n - 1n),
        integerKeys: map([fixint(1), str('a')]),
        lookalike: object({ $base64: str('a') }),
      });
      const stored = object({
        hotel_id: fixint(51),
        room_type: str('exact'),
        check_in_date: str('2026-01-01'),
        gateway: str('g'),
        discount_type: str('none'),
        exotic,
        list: array(float64(2.5), Buffer.from([0xd4, 0x07, 0xff])),
      });
      const api = connectStore(store.address, { token: TOKEN });
      const { uuid, base } = await api
        .put({ model: 'rate', values: stored, requestId: randomUUID() })
        .finally(() => api.close());

      const printed =
        '{"hotel_id":51,"room_type":"exact","check_in_date":"2026-01-01","gateway":"g",' +
        '"discount_type":"none","exotic":{' +
        '"symbol":{"$ext":0,"$base64":"YQ=="},' +
        '"custom":{"$ext":5,"$base64":"AQI="},' +
        '"at":{"$ext":-1,"$base64":"B1vNFQAAAABq/YbA","$timestamp":"2026-11-18T11:06:40.123456789Z"},' +
        '"at32":{"$ext":-1,"$base64":"agAAAA==","$timestamp":"2026-05-10T03:48:16.000000000Z"},' +
        '"binary":{"$base64":"AAEC"},"whole":120.0,"negativeZero":-0.0,"nan":{"$float":"NaN"},' +
        '"integer":120,"top":18446744073709551615,"integerKeys":{"$map":[[1,"a"]]},' +
        '"lookalike":{"$map":[["$base64","a"]]}},' +
        '"list":[2.5,{"$ext":7,"$base64":"/w=="}]}';
      const get = await shameless(['get', 'rate', uuid]);
      expect(get.code, get.stderr).to.equal(0);
      expect(get.stdout).to.include(`"body":${printed}}`);

      const where = await shameless(['where', 'rate', 'hotel_id=51']);
      expect(where.code, where.stderr).to.equal(0);
      expect(where.stdout).to.include(`"body":${printed}}`);

      const tail = await shameless(['tail', 'rate', '--shard', String(base!.shard)]);
      expect(tail.code, tail.stderr).to.equal(0);
      const line = tail.stdout.split('\n').find((text) => text.includes(uuid));
      expect(line).to.include(`"body":${printed}}`);

      // The printed body, put as another record: the same bytes but for its room_type.
      const again = printed.replace('"room_type":"exact"', '"room_type":"again"');
      const put = await shameless(['put', 'rate', again]);
      expect(put.code, put.stderr).to.equal(0);
      expect(put.stdout).to.include(`"body":${again}}`);
      const copy = lines(put.stdout)[0] as { uuid: string };
      const copied = await store.engine.getCell(UNBOUNDED, 'rate', copy.uuid, 'base');
      expect(Buffer.from(copied.body).toString('hex')).to.equal(
        stored.toString('hex').replace(str('exact').toString('hex'), str('again').toString('hex')),
      );
    });

    it("a cell past grpc-js's 4 MiB default goes in and comes out (put, get, where)", async () => {
      const blob = 'x'.repeat(5_000_000);
      const put = await shameless(['put', 'rate', '-'], rate(47, 'large', `"blob": "${blob}"`));
      expect(put.code, put.stderr).to.equal(0);
      const { uuid } = lines(put.stdout)[0] as { uuid: string };
      const get = await shameless(['get', 'rate', uuid]);
      expect(get.code, get.stderr).to.equal(0);
      expect((lines(get.stdout)[0] as { body: { blob: string } }).body.blob).to.equal(blob);
      const where = await shameless(['where', 'rate', 'hotel_id=47']);
      expect(where.code, where.stderr).to.equal(0);
      expect(lines(where.stdout)).to.have.length(1);
    });

    it('put of a body nested too deep gets a clear message and writes nothing', async () => {
      const nested = (levels: number) => `${'['.repeat(levels)}1${']'.repeat(levels)}`;
      // 64 levels: the body's map and 63 arrays. One more, and the server refuses it.
      const deepest = await shameless(['put', 'rate', '-'], rate(48, 'deep', `"a": ${nested(63)}`));
      expect(deepest.code, deepest.stderr).to.equal(0);
      const refused = await shameless(
        ['put', 'rate', '-'],
        rate(48, 'deeper', `"a": ${nested(64)}`),
      );
      expect(refused.code).to.equal(1);
      expect(refused.stderr).to.match(
        /^shameless: INVALID_ARGUMENT: values: a(\[0\]){7}…\(56 levels more\): nested deeper than 64 levels \(the server's --max-body-depth\)/,
      );
      // The issue's 200,000 levels run the CLI's JSON reader out of stack before any call.
      const huge = await shameless(
        ['put', 'rate', '-'],
        rate(48, 'huge', `"a": ${nested(200_000)}`),
      );
      expect(huge.code).to.equal(2);
      expect(huge.stderr).to.include('<values>: nested too deep to read');
      for (const result of [refused, huge]) expectNoStack(result);
      const where = await shameless(['where', 'rate', 'hotel_id=48']);
      expect(lines(where.stdout), 'only the first was written').to.have.length(1);
    });

    it('get and tail print a body no reader takes (written by SQL, as the gem could) as null, and go on', async () => {
      const put = await shameless(['put', 'rate', '-'], rate(52, 'unreadable'));
      expect(put.code, put.stderr).to.equal(0);
      const { uuid } = lines(put.stdout)[0] as { uuid: string };
      const shard = parseInt(uuid.slice(0, 4), 16) % 4;
      const sql = await mysql.createConnection({ uri: store.partitionUrls[0]! });
      try {
        // 200,000 arrays deep: past what the CLI's reader (as the SDK's) reads.
        const body = Buffer.concat([
          Buffer.from([0x81, 0xa1, 0x61]),
          Buffer.alloc(200_000, 0x91),
          fixint(1),
        ]);
        await sql.query(
          `INSERT INTO test_rate_${String(shard).padStart(6, '0')} (uuid, column_name, ref_key, body, created_at) VALUES (?, 'meta', 0, ?, NOW(6))`,
          [uuid, body],
        );
      } finally {
        await sql.end();
      }
      const get = await shameless(['get', 'rate', uuid, '--cell', 'meta']);
      expect(get.code, get.stderr).to.equal(0);
      expect(lines(get.stdout)[0]).to.deep.include({
        uuid,
        cell: 'meta',
        body: null,
        unreadable: `cell meta@0 of record ${uuid}: the body cannot be read: nested deeper than 1000 levels (at byte 1002)`,
      });
      const tail = await shameless(['tail', 'rate', '--shard', String(shard)]);
      expect(tail.code, tail.stderr).to.equal(0);
      const cells = lines(tail.stdout) as { uuid: string; cell: string; body: unknown }[];
      expect(
        cells.filter((cell) => cell.uuid === uuid).map((cell) => [cell.cell, cell.body]),
      ).to.deep.equal([
        [
          'base',
          {
            hotel_id: 52,
            room_type: 'unreadable',
            check_in_date: '2026-01-01',
            gateway: 'g',
            discount_type: 'none',
          },
        ],
        ['meta', null],
      ]);
    });

    it('put reads values from stdin with -, and updates the record found by its primary fields', async () => {
      const values = rate(42, 'single', '"price": 100');
      const first = await shameless(['put', 'rate', '-'], values);
      expect(first.code, first.stderr).to.equal(0);
      const second = await shameless(['put', 'rate', '-'], values.replace('100', '110'));
      const [created, updated] = [...lines(first.stdout), ...lines(second.stdout)] as {
        uuid: string;
        created: boolean;
        base: { refKey: number; body: { price: number } };
      }[];
      expect(updated!.uuid).to.equal(created!.uuid);
      expect(updated!.created).to.equal(false);
      expect(updated!.base.refKey).to.equal(1);
      expect(updated!.base.body.price).to.equal(110);

      const old = await shameless(['get', 'rate', created!.uuid, '--ref-key', '0']);
      expect((lines(old.stdout)[0] as { body: { price: number } }).body.price).to.equal(100);
    });

    it('where prints one JSON line per record, typed by the index, following pages up to --limit', async () => {
      for (const room of ['a', 'b', 'c', 'd', 'e']) {
        const put = await shameless(['put', 'rate', rate(43, room)]);
        expect(put.code, put.stderr).to.equal(0);
      }
      const all = await shameless(['where', 'rate', 'hotel_id=43', '--page-size', '2']);
      expect(all.code, all.stderr).to.equal(0);
      const rooms = (
        lines(all.stdout) as { cells: { base: { body: { room_type: string } } } }[]
      ).map((record) => record.cells.base.body.room_type);
      expect(rooms).to.deep.equal(['a', 'b', 'c', 'd', 'e']);

      const some = await shameless([
        'where',
        'rate',
        'hotel_id=43',
        'room_type in b,d,z',
        '--order',
        'desc',
      ]);
      expect(
        (lines(some.stdout) as { cells: { base: { body: { room_type: string } } } }[]).map(
          (record) => record.cells.base.body.room_type,
        ),
      ).to.deep.equal(['d', 'b']);

      const limited = await shameless([
        'where',
        'rate',
        'hotel_id=43',
        'room_type>=b',
        '--limit',
        '3',
        '--page-size',
        '2',
      ]);
      expect(lines(limited.stdout)).to.have.length(3);

      // --cell takes one name each time, so conditions may follow it.
      const cells = await shameless([
        'where',
        'rate',
        '--cell',
        'meta',
        '--cell',
        'base',
        'hotel_id=43',
      ]);
      expect(cells.code, cells.stderr).to.equal(0);
      const [first] = lines(cells.stdout) as { cells: Record<string, unknown> }[];
      expect(first!.cells).to.have.property('base');
      expect(lines(cells.stdout)).to.have.length(5);

      const secondary = await shameless([
        'where',
        'rate',
        'hotel_id=43',
        'gateway=g',
        '--index',
        'secondary',
      ]);
      expect(lines(secondary.stdout)).to.have.length(5);
    });

    it('where takes a list as a JSON array with 64-bit integers exact, and refuses other values in it', async () => {
      // The literal as typed: a number in TypeScript would round it.
      const values = rate(0, 'json').replace('"hotel_id": 0', '"hotel_id": 9007199254740993');
      const exact = await shameless(['put', 'rate', values]);
      expect(exact.code, exact.stderr).to.equal(0);
      const found = await shameless([
        'where',
        'rate',
        'hotel_id=9007199254740993',
        'hotel_id in [9007199254740993]',
      ]);
      expect(found.code, found.stderr).to.equal(0);
      expect(lines(found.stdout)).to.have.length(1);

      const refused = await shameless([
        'where',
        'rate',
        'hotel_id=43',
        'room_type in [null, {"a": 1}]',
      ]);
      expect(refused.code).to.equal(2);
      expect(refused.stderr).to.include('expected strings or integers in the JSON array');
      expectNoStack(refused);
    });

    it('where refuses a field its index lacks, naming the fields it has (exit 2)', async () => {
      const result = await shameless(['where', 'rate', 'hotel=43']);
      expect(result.code).to.equal(2);
      expect(result.stderr).to.include('hotel is not a field of index primary');
      expect(result.stderr).to.include('hotel_id, room_type, check_in_date');
      expectNoStack(result);
    });

    it('find-shard answers as FindShard does, for a value and for a uuid', async () => {
      const largest = await shameless(['find-shard', '--value', '9223372036854775807']);
      expect(largest.code, largest.stderr).to.equal(0);
      const byValue = await shameless(['find-shard', '--value', '-9223372036854775807']);
      expect(byValue.code, byValue.stderr).to.equal(0);
      const expected = store.engine.findShard({ value: -9223372036854775807n });
      expect(JSON.parse(byValue.stdout)).to.deep.equal({
        shard: expected.shard,
        partition: expected.partition,
      });
      const uuid = 'ffff0000-0000-4000-8000-000000000000';
      const byUuid = await shameless(['find-shard', '--uuid', uuid]);
      expect(JSON.parse(byUuid.stdout).shard).to.equal(0xffff % 4);
    });

    it('tail prints a shard log in id order with progress on stderr, resuming from --cursor', async () => {
      const put = await shameless(['put', 'rate', rate(44, 'x')]);
      const { uuid } = lines(put.stdout)[0] as { uuid: string };
      await shameless(['put', 'rate', rate(44, 'x', '"n": 2')]);
      const shard = parseInt(uuid.slice(0, 4), 16) % 4;

      const tail = await shameless([
        'tail',
        'rate',
        '--shard',
        String(shard),
        '--batch-size',
        '1',
        '--progress-ms',
        '0',
      ]);
      expect(tail.code, tail.stderr).to.equal(0);
      const cells = lines(tail.stdout) as {
        id: number;
        shard: number;
        uuid: string;
        refKey: number;
      }[];
      expect(cells.length).to.be.greaterThan(1);
      expect(cells.every((cell) => cell.shard === shard)).to.equal(true);
      const ids = cells.map((cell) => cell.id);
      expect(ids).to.deep.equal([...ids].sort((a, b) => a - b));
      expect(cells.filter((cell) => cell.uuid === uuid).map((cell) => cell.refKey)).to.deep.equal([
        0, 1,
      ]);
      expect(tail.stderr).to.match(
        new RegExp(`tail: shard ${shard}: ${cells.length} cells, cursor ${ids.at(-1)}`),
      );

      const resumed = await shameless([
        'tail',
        'rate',
        '--shard',
        String(shard),
        '--cursor',
        String(ids[0]),
      ]);
      expect(lines(resumed.stdout)).to.have.length(cells.length - 1);
    });

    it('tail --follow prints versions written after it started, until interrupted', async () => {
      const uuidShard = (uuid: string) => parseInt(uuid.slice(0, 4), 16) % 4;
      const first = await shameless(['put', 'rate', rate(45, 'f')]);
      const { uuid } = lines(first.stdout)[0] as { uuid: string };
      const before = await shameless(['tail', 'rate', '--shard', String(uuidShard(uuid))]);
      const cursor = String((lines(before.stdout).at(-1) as { id: number }).id);

      const child = startCommand(
        ['tail', 'rate', '--shard', String(uuidShard(uuid)), '--cursor', cursor, '--follow'],
        { SHAMELESS_ADDRESS: store.address, SHAMELESS_TOKEN: TOKEN },
      );
      child.stdin!.end();
      let stdout = '';
      child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      const exited = once(child, 'exit');
      try {
        await new Promise((resolve) => setTimeout(resolve, 500)); // let the stream open
        await shameless(['put', 'rate', rate(45, 'f', '"v": 2')]);
        for (let i = 0; i < 100 && !stdout.includes('\n'); i++) {
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        const [cell] = lines(stdout) as { uuid: string; refKey: number; body: { v: number } }[];
        expect(cell).to.deep.include({ uuid, refKey: 1 });
        expect(cell!.body.v).to.equal(2);
      } finally {
        child.kill('SIGINT');
      }
      const [code] = (await exited) as [number | null];
      expect(code).to.equal(0);
    });
  });

  describe('a follow whose server stops or goes silent', () => {
    /** `tail --follow` of the shard of a rate put through `address`, once it printed the rate. */
    async function followedTail(address: string) {
      const env = { SHAMELESS_ADDRESS: address, SHAMELESS_TOKEN: undefined };
      const put = await runCommand(['put', 'rate', rate(51, 'follow')], { env });
      expect(put.code, put.stderr).to.equal(0);
      const cell = (lines(put.stdout)[0] as { base: { shard: number; id: number } }).base;
      const child = startCommand(['tail', 'rate', '--shard', String(cell.shard), '--follow'], env);
      child.stdin!.end();
      const output = { stdout: '', stderr: '' };
      child.stdout!.on('data', (chunk: Buffer) => (output.stdout += chunk.toString()));
      child.stderr!.on('data', (chunk: Buffer) => (output.stderr += chunk.toString()));
      const exited = once(child, 'exit');
      for (let i = 0; i < 100 && !output.stdout.includes('\n'); i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(lines(output.stdout)).to.have.length(1);
      return { cell, child, output, exited };
    }

    it('tail --follow fails (exit 1) with the cursor to resume from, not a quiet exit 0', async () => {
      // A server of its own: stopping it is the point. Its shutdown ends follow streams
      // UNAVAILABLE.
      const own = await startStoreFixture();
      let closed = false;
      try {
        await own.api.defineModel({ model: RATE_MODEL });
        const { cell, output, exited } = await followedTail(own.address);
        closed = true;
        await own.close();
        const [code] = (await exited) as [number | null];
        expect(code, output.stderr).to.equal(1);
        expect(output.stderr).to.include(`tail: shard ${cell.shard}: 1 cells, cursor ${cell.id}`);
        expect(output.stderr).to.include('UNAVAILABLE: the server is shutting down');
        expect(output.stderr).to.include(`tail: run tail again with --cursor ${cell.id} to resume`);
      } finally {
        if (!closed) await own.close();
      }
    });

    it('tail --follow finds a silent connection dead and fails (exit 1) with the cursor to resume from', async () => {
      // The server stays up; the connection to it hangs (no reset, no close), as when a host
      // freezes or a network drops the connection: only the client's pings can tell.
      const own = await startStoreFixture();
      const proxy = await startTcpProxy({ target: { host: '127.0.0.1', port: own.server.port } });
      let child: ChildProcess | undefined;
      try {
        await own.api.defineModel({ model: RATE_MODEL });
        const tail = await followedTail(proxy.address);
        child = tail.child;
        proxy.setFaults({ blackhole: true });
        const ended = await Promise.race([
          tail.exited,
          new Promise((resolve) => setTimeout(resolve, 30_000, 'still waiting after 30 s')),
        ]);
        expect(ended, tail.output.stderr).to.deep.equal([1, null]);
        expect(tail.output.stderr).to.include('UNAVAILABLE');
        expect(tail.output.stderr).to.include(
          `tail: run tail again with --cursor ${tail.cell.id} to resume`,
        );
      } finally {
        child?.kill('SIGKILL');
        await proxy.close();
        await own.close();
      }
    });
  });

  describe('failures', () => {
    it('with no server: UNAVAILABLE, a hint naming the address, exit 1, no stack', async () => {
      const result = await runCommand(['describe', '--address', '127.0.0.1:1']);
      expect(result.code).to.equal(1);
      expect(result.stderr).to.match(/^shameless: UNAVAILABLE: /);
      expect(result.stderr).to.include('hint: is a server running at 127.0.0.1:1?');
      expectNoStack(result);
    });

    it('a missing or wrong token: UNAUTHENTICATED with a hint, and the token is never printed', async () => {
      const none = await runCommand(['describe'], {
        env: { SHAMELESS_ADDRESS: store.address, SHAMELESS_TOKEN: undefined },
      });
      expect(none.code).to.equal(1);
      expect(none.stderr).to.include('UNAUTHENTICATED: a valid bearer token is required');
      expect(none.stderr).to.include('--token');
      const wrong = await runCommand([
        'describe',
        '--address',
        store.address,
        '--token',
        `${TOKEN}-old`,
      ]);
      expect(wrong.code).to.equal(1);
      expect(wrong.stderr).to.include('UNAUTHENTICATED');
      expectNoStack(wrong);
      expect(wrong.stderr).not.to.include(`${TOKEN}-old`);
      const flag = await runCommand(['describe', '--address', store.address, '--token', TOKEN]);
      expect(flag.code, flag.stderr).to.equal(0);
    });

    it('a token gRPC cannot send (a line end, a non-ASCII letter) is refused with exit 2, never printed', async () => {
      // As `SHAMELESS_TOKEN=$(docker compose run --rm secrets cat …)` leaves it: a tty's \r.
      for (const token of [`${TOKEN}\r`, `${TOKEN}\n`, `${TOKEN}é`]) {
        for (const env of [
          { SHAMELESS_ADDRESS: store.address, SHAMELESS_TOKEN: token },
          { SHAMELESS_ADDRESS: store.address, SHAMELESS_TOKEN: undefined },
        ]) {
          const args = env.SHAMELESS_TOKEN ? ['describe'] : ['describe', '--token', token];
          const result = await runCommand(args, { env });
          expect(result.code, JSON.stringify(token)).to.equal(2);
          expect(result.stderr).to.match(/^shameless: --token \(SHAMELESS_TOKEN\): /);
          expect(result.stderr).to.include('line end');
          expectNoStack(result);
        }
      }
    });

    it('a known token whose role is too small: PERMISSION_DENIED, a hint at the role, not at an unknown token', async () => {
      const file = join(mkdtempSync(join(tmpdir(), 'shameless-cli-')), 'tokens.json');
      const reader = newToken('dashboard', 'reader');
      writeTokensFile(file, [reader]);
      const guarded = await startStoreFixture({ middleware: [authorization(new TokenSet(file))] });
      try {
        const result = await runCommand(['define', '--file', modelFile], {
          env: { SHAMELESS_ADDRESS: guarded.address, SHAMELESS_TOKEN: reader.token },
        });
        expect(result.code).to.equal(1);
        expect(result.stderr).to.include('PERMISSION_DENIED: DefineModel needs the admin role');
        expect(result.stderr).to.include('hint: the token "dashboard" is known');
        expect(result.stderr).to.include('a token with the admin role');
        expect(result.stderr).not.to.include('a token the server accepts');
        expect(result.stdout + result.stderr).not.to.include(reader.token);
      } finally {
        await guarded.close();
      }
    });

    it('an unknown model: NOT_FOUND with a hint to describe', async () => {
      const result = await shameless(['get', 'rates', 'ffff0000-0000-4000-8000-000000000000']);
      expect(result.code).to.equal(1);
      expect(result.stderr).to.match(/^shameless: NOT_FOUND: .*rates/);
      expect(result.stderr).to.include('`shameless describe`');
      expectNoStack(result);
    });

    it('a bad field: INVALID_ARGUMENT naming it', async () => {
      const result = await shameless([
        'put',
        'rate',
        '{"hotel_id": "forty", "room_type": "x", "check_in_date": "d"}',
      ]);
      expect(result.code).to.equal(1);
      expect(result.stderr).to.match(/^shameless: INVALID_ARGUMENT: .*hotel_id/);
      expect(result.stderr).to.include(
        'hint: fix <values> (sent as the request field values); `shameless put --help` shows',
      );
      expectNoStack(result);
    });

    it('a value the server refuses is named as the flag it came from, with that command’s --help', async () => {
      const result = await shameless(['where', 'rate', 'hotel_id=43', '--page-size', '20000']);
      expect(result.code).to.equal(1);
      expect(result.stderr).to.match(/^shameless: INVALID_ARGUMENT: limit: /);
      expect(result.stderr).to.include('hint: fix --page-size (sent as the request field limit)');
      expect(result.stderr).to.include('`shameless where --help`');
      expect(result.stderr).not.to.include('<command>');
    });

    it('bad input is refused before any call, with exit 2', async () => {
      const cases: [string[], string][] = [
        [['put', 'rate', '{"hotel_id": 1,}'], '<values>: expected a string at character 16'],
        [['put', 'rate', '[1]'], '<values>: must be a JSON object'],
        [['find-shard', '--value', '1.5'], '--value: expected an integer'],
        [['get', 'rate', 'u', '--ref-key', 'x'], '--ref-key: expected an integer'],
        [['describe', '--deadline-ms', '0'], '--deadline-ms: expected an integer from 1 to'],
        [
          ['describe', '--deadline-ms', '99999999999999999999'],
          '--deadline-ms: expected an integer from 1 to 2147483647',
        ],
        [
          ['find-shard', '--value', '99999999999999999999999'],
          '--value: expected an integer from -9223372036854775808 to 9223372036854775807',
        ],
        [['find-shard', '--value', '9223372036854775808'], '--value: expected an integer from'],
        [
          ['get', 'rate', 'u', '--ref-key', '99999999999'],
          '--ref-key: expected an integer from 0 to 2147483647',
        ],
        [
          ['where', 'rate', 'hotel_id=99999999999999999999'],
          'condition on hotel_id: expected an integer from -9223372036854775808',
        ],
        [
          ['put', 'rate', rate(46, 'x', '"big": 99999999999999999999999')],
          "<values>.big: 99999999999999999999999 is beyond MessagePack's 64-bit integers",
        ],
        [
          ['put', 'rate', rate(46, 'x', '"list": [1, -9223372036854775809]')],
          '<values>.list[1]: -9223372036854775809 is beyond',
        ],
        [
          ['put', 'rate', rate(46, 'x', '"at": {"$ext": 200, "$base64": "AA=="}')],
          '<values>.at.$ext: must be an integer from -128 to 127',
        ],
        [
          [
            'put',
            'rate',
            rate(46, 'x', '"at": {"$ext": -1, "$base64": "agAAAA==", "$timestamp": "2026"}'),
          ],
          '<values>.at.$timestamp: "2026" is not the instant $base64 holds (2026-05-10T03:48:16.000000000Z)',
        ],
        [
          ['put', 'rate', rate(46, 'x', '"b": {"$base64": "AA==", "note": 1}')],
          '<values>.b: an object with a key $base64 must be exactly one of the forms',
        ],
        [
          ['put', 'rate', rate(46, 'x', '"m": {"$map": [[1, "a"], [1, "b"]]}')],
          '<values>.m.$map[1][0]: the map repeats key 1',
        ],
        [
          ['tail', 'rate', '--shard', '4294967296'],
          '--shard: expected an integer from 0 to 4294967295',
        ],
        [
          ['tail', 'rate', '--shard', '0', '--cursor', '18446744073709551616'],
          '--cursor: expected an integer from 0 to 18446744073709551615',
        ],
        [['where', 'rate', 'hotel_id=1', '--page-size', '4294967296'], '--page-size: expected'],
        [['describe', '--address', ''], '--address (SHAMELESS_ADDRESS) is empty'],
        [['describe', '--tls-cert', 'c.pem'], '--tls-cert and --tls-key go together'],
        [
          ['describe', '--tls-ca', '/nonexistent/ca.pem'],
          '--tls-ca: cannot read /nonexistent/ca.pem: ENOENT',
        ],
        [
          ['define', '--file', '/nonexistent/model.json'],
          'cannot read model file /nonexistent/model.json',
        ],
      ];
      for (const [args, message] of cases) {
        const result = await shameless(args);
        expect(result.code, args.join(' ')).to.equal(2);
        expect(result.stderr, args.join(' ')).to.include(message);
        expect(result.stderr, args.join(' ')).not.to.include('INTERNAL');
        expectNoStack(result);
      }
    });

    it('a request past the server message limit: RESOURCE_EXHAUSTED, a hint at the limit, not at retrying', async () => {
      const body = rate(48, 'huge', `"blob": "${'x'.repeat(17 * 1024 * 1024)}"`);
      const result = await shameless(['put', 'rate', '-'], body);
      expect(result.code).to.equal(1);
      expect(result.stderr).to.match(
        /^shameless: RESOURCE_EXHAUSTED: Received message larger than max/,
      );
      expect(result.stderr).to.include('the --max-message-bytes of `shameless serve`');
      expect(result.stderr).to.include('maxCellBytes in `shameless describe`');
      expect(result.stderr).not.to.include('retry after a moment');
    });

    it('an answer past it comes page by page; one the server cannot cut: a hint to ask for less', async () => {
      const blob = 'x'.repeat(5_000_000);
      for (const room of ['a', 'b', 'c', 'd']) {
        const put = await shameless(['put', 'rate', '-'], rate(49, room, `"blob": "${blob}"`));
        expect(put.code, put.stderr).to.equal(0);
      }
      // 20 MB of records: the server ends each page within its largest message.
      const result = await shameless(['where', 'rate', 'hotel_id=49']);
      expect(result.code, result.stderr).to.equal(0);
      expect(lines(result.stdout)).to.have.length(4);
      const refused = Object.assign(new Error(), {
        code: status.RESOURCE_EXHAUSTED,
        details:
          "the answer would exceed 16777216 bytes (its message would be larger than the server's largest message: 16800000 bytes or more); ask for fewer cells of each record",
        metadata: new Metadata(),
      });
      const hint = hintFor(refused as ServiceError, {
        command: 'where',
        address: '127.0.0.1:1',
        deadlineMs: '1000',
        tls: false,
        argumentOfField: {},
      });
      expect(hint).to.include('fewer --cell');
      expect(hint).not.to.include('retry after a moment');
    });

    it('a deadline too short: DEADLINE_EXCEEDED with a hint to raise --deadline-ms', async () => {
      // A DefineModel of a new model creates tables on every shard: far longer than 1 ms.
      const directory = mkdtempSync(join(tmpdir(), 'shameless-cli-'));
      const file = join(directory, 'slow.json');
      writeFileSync(file, JSON.stringify({ ...RATE_MODEL, name: 'slow' }));
      const result = await shameless(['define', '--file', file, '--deadline-ms', '1']);
      expect(result.code).to.equal(1);
      expect(result.stderr).to.include('DEADLINE_EXCEEDED');
      expect(result.stderr).to.include('raise it');
    });
  });
});
