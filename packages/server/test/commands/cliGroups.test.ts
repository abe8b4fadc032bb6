// `shameless group describe | parked | replay | reset` of the real binary against a real
// `shameless serve` process over two real MariaDB partitions, with a member of the group driven
// over the raw Consume stream (failing one cell until it is parked, parking another): what each
// command prints, its paging, and its failures as status, details and a hint with exit 1, or
// exit 2 for input refused before any call.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ClientDuplexStream, Metadata } from '@grpc/grpc-js';
import type { Cell, ConsumeRequest, ConsumeResponse, Delivery, JoinGroup } from '@shameless/proto';
import { StartFrom } from '@shameless/proto';
import { type TestDatabases, createTestDatabases } from '@shameless/testkit';
import { expect } from 'chai';
import { parseExactJson } from '../../src/commands/exactJson.js';
import { type StoreApi, connectStore } from '../support/grpcCalls.js';
import {
  type CommandResult,
  type ServerProcess,
  runCommand,
  startServerProcess,
} from '../support/serverProcess.js';
import { RATE_MODEL, pack, requestId } from '../support/storeFixture.js';
import { type TestToken, newToken, writeTokensFile } from '../support/tokens.js';

const SHARDS = 4;
type Message = NonNullable<ConsumeResponse['message']>;
/** What a member does with a delivery: answers it at once, or holds it unanswered. */
type Answer = 'ack' | 'fail' | 'park' | 'hold';

/**
 * A member of a group on a raw Consume stream: joins, answers each delivery as `answer` says,
 * heartbeats when it has sent nothing for the interval the server asked for, and leaves.
 */
class RawMember {
  readonly messages: Message[] = [];
  readonly held: Delivery[] = [];
  private readonly call: ClientDuplexStream<ConsumeRequest, ConsumeResponse>;
  private readonly waiters = new Set<() => void>();
  private heartbeat: NodeJS.Timeout | undefined;
  private lastSentAt = Date.now();
  private ended: Error | undefined;

  constructor(
    api: StoreApi,
    token: string,
    join: Partial<JoinGroup>,
    private readonly answer: (delivery: Delivery) => Answer,
  ) {
    const metadata = new Metadata();
    metadata.set('authorization', `Bearer ${token}`);
    this.call = api.client.consume(metadata);
    this.call.on('data', (response: ConsumeResponse) => this.receive(response.message!));
    this.call.on('error', (error: Error) => this.end(error));
    this.call.on('end', () => this.end(new Error('the stream ended')));
    this.send({
      $case: 'join',
      join: {
        model: 'rate',
        group: '',
        memberId: '',
        from: StartFrom.START_FROM_EARLIEST,
        cells: [],
        maxInFlight: 0,
        perShardInFlight: 0,
        maxDeliveries: 0,
        sessionTimeoutMs: 0,
        ...join,
      },
    });
  }

  /** The first message of its kind that `matches`, waiting for it up to 15 s. */
  async waitFor<K extends Message['$case']>(
    kind: K,
    matches: (message: Extract<Message, { $case: K }>) => boolean = () => true,
  ): Promise<Extract<Message, { $case: K }>> {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const found = this.messages.find(
        (message): message is Extract<Message, { $case: K }> =>
          message.$case === kind && matches(message as Extract<Message, { $case: K }>),
      );
      if (found) return found;
      if (this.ended) throw this.ended;
      if (Date.now() > deadline) throw new Error(`no ${kind} message came within 15 s`);
      await new Promise<void>((resolve) => {
        const wake = () => {
          this.waiters.delete(wake);
          resolve();
        };
        this.waiters.add(wake);
        setTimeout(wake, 100);
      });
    }
  }

  /** Waits until every shard's committed cursor reached `cursors[shard]`. */
  async committedUpTo(cursors: ReadonlyMap<number, bigint>): Promise<void> {
    for (const [shard, cursor] of cursors) {
      await this.waitFor('committed', ({ committed }) => {
        return committed.shard === shard && committed.cursor >= cursor;
      });
    }
  }

  acknowledge(delivery: Delivery): void {
    const { shard, id } = delivery.cell!;
    this.send({ $case: 'ack', ack: { shards: [{ shard, epoch: delivery.epoch, ids: [id] }] } });
  }

  async leave(): Promise<void> {
    this.send({ $case: 'leave', leave: {} });
    await this.waitFor('left');
    clearInterval(this.heartbeat);
  }

  /** Ends the stream without leaving (cleanup). */
  close(): void {
    clearInterval(this.heartbeat);
    this.call.cancel();
  }

  private receive(message: Message): void {
    this.messages.push(message);
    if (message.$case === 'joined') {
      const every = message.joined.heartbeatIntervalMs;
      this.heartbeat = setInterval(() => {
        if (Date.now() - this.lastSentAt >= every) this.send({ $case: 'heartbeat', heartbeat: {} });
      }, every / 2);
    } else if (message.$case === 'deliveries') {
      for (const delivery of message.deliveries.deliveries) this.handle(delivery);
    } else if (message.$case === 'revoked') {
      this.send({ $case: 'released', released: message.revoked });
    }
    for (const wake of [...this.waiters]) wake();
  }

  private handle(delivery: Delivery): void {
    const { shard, id } = delivery.cell!;
    const epoch = delivery.epoch;
    switch (this.answer(delivery)) {
      case 'ack':
        this.acknowledge(delivery);
        return;
      case 'fail':
        this.send({
          $case: 'failed',
          failed: { shard, epoch, id, error: `boom: attempt ${delivery.attempt}` },
        });
        return;
      case 'park':
        this.send({ $case: 'park', park: { shard, epoch, id, reason: 'not for us' } });
        return;
      case 'hold':
        this.held.push(delivery);
    }
  }

  private send(message: NonNullable<ConsumeRequest['message']>): void {
    this.lastSentAt = Date.now();
    this.call.write({ message });
  }

  private end(error: Error): void {
    clearInterval(this.heartbeat);
    this.ended ??= error;
    for (const wake of [...this.waiters]) wake();
  }
}

const lines = (text: string): unknown[] =>
  text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => parseExactJson(line));

function expectFailure(result: CommandResult, code: number, ...texts: string[]): void {
  expect(result.code, result.stderr).to.equal(code);
  for (const text of texts) expect(result.stderr).to.include(text);
  expect(result.stderr).not.to.match(/\n\s+at /);
  expect(result.stdout).to.equal('');
}

interface ShardRow {
  shard: number;
  owner: string | null;
  epoch: number;
  cursor: number;
  maxId: number;
  lag: number;
  lagCapped: boolean;
  parked: number;
}
interface ParkedLine {
  shard: number;
  id: number;
  attempts: number;
  error: string;
  parkedAt: string;
  replayPending: boolean;
  cell: { uuid: string; id: number; shard: number; body: { hotel_id: number } } | null;
}

describe('shameless group (consumer groups) commands', function () {
  this.timeout(60_000);
  let databases: TestDatabases;
  let server: ServerProcess;
  let api: StoreApi;
  let admin: TestToken;
  let reader: TestToken;
  let shameless: (args: string[], token?: TestToken) => Promise<CommandResult>;
  /** The base cell of each rate written, and the last id of each shard. */
  const written: Cell[] = [];
  const maxIds = new Map<number, bigint>();
  const onBothPartitions = () =>
    written.some((cell) => cell.shard < 2) && written.some((cell) => cell.shard >= 2);
  const maxIdOf = (shard: number) => Number(maxIds.get(shard) ?? 0n);

  async function putRate(hotelId: number): Promise<Cell> {
    const { base } = await api.put({
      model: 'rate',
      values: pack({
        hotel_id: hotelId,
        room_type: 'double',
        check_in_date: '2026-01-01',
        gateway: 'g',
        discount_type: 'none',
      }),
      requestId: requestId(),
    });
    written.push(base!);
    if (base!.id > (maxIds.get(base!.shard) ?? 0n)) maxIds.set(base!.shard, base!.id);
    return base!;
  }

  before(async () => {
    databases = await createTestDatabases(2);
    admin = newToken('ops', 'admin');
    reader = newToken('dashboard', 'reader');
    const tokensFile = join(mkdtempSync(join(tmpdir(), 'shameless-groups-')), 'tokens.json');
    writeTokensFile(tokensFile, [admin, reader]);
    server = await startServerProcess([
      ...databases.urls.flatMap((url) => ['--partition', url]),
      '--shards-count',
      String(SHARDS),
      '--tokens-file',
      tokensFile,
    ]);
    api = connectStore(server.address, { token: admin.token });
    await api.defineModel({ model: RATE_MODEL });
    // Rates until each partition has some: shards 0-1 live on one, 2-3 on the other.
    for (let hotel = 1; hotel <= 6 || !onBothPartitions(); hotel++) await putRate(hotel);
    shameless = (args, token = admin) =>
      runCommand(args, {
        env: { SHAMELESS_ADDRESS: server.address, SHAMELESS_TOKEN: token.token },
      });
  });
  after(async () => {
    api?.close();
    await server?.kill('SIGTERM');
    await databases?.drop();
  });

  describe('the commands', () => {
    it('bare `group` prints its help on stdout with each command and examples (exit 0)', async () => {
      const result = await runCommand(['group']);
      expect(result.code, result.stderr).to.equal(0);
      for (const command of ['describe', 'parked', 'replay', 'reset']) {
        expect(result.stdout).to.match(
          new RegExp(`^  ${command} \\[options\\] <model> <group>`, 'm'),
        );
      }
      expect(result.stdout).to.include('shameless group replay rate billing --shard 3 --id 1234');
      const program = await runCommand(['--help']);
      expect(program.stdout).to.match(/^ {2}group /m);
    });

    for (const command of ['describe', 'parked', 'replay', 'reset']) {
      it(`group ${command} --help has examples and the connection options`, async () => {
        const result = await runCommand(['group', command, '--help']);
        expect(result.code, result.stderr).to.equal(0);
        expect(result.stdout).to.include(
          `Usage: shameless group ${command} [options] <model> <group>`,
        );
        expect(result.stdout).to.include(`Examples:\n  shameless group ${command} rate billing`);
        for (const option of ['--address', '--token', '--tls-ca', '--tls-cert', '--deadline-ms']) {
          expect(result.stdout).to.include(option);
        }
      });
    }

    it('reset --help says what <shard>:<id> means and that no member may be connected', async () => {
      const { stdout } = await runCommand(['group', 'reset', '--help']);
      expect(stdout).to.match(
        /<shard>:<id> +that content shard alone, to cursor <id>: its cells with an id\n +greater than <id> are delivered next/,
      );
      expect(stdout).to.include('Only while no member of the group is connected');
      expect(stdout).to.include('FAILED_PRECONDITION naming the members connected');
    });

    it('refuses malformed input before any call (exit 2, no stack)', async () => {
      const cases: [string[], string][] = [
        [['group', 'nope'], "unknown command 'nope'"],
        [['group', 'describe', 'rate'], "missing required argument 'group'"],
        [['group', 'reset', 'rate', 'billing'], "required option '--to <position>' not specified"],
        [['group', 'replay', 'rate', 'billing', '--shard', '1'], "required option '--id <id>'"],
        [
          ['group', 'reset', 'rate', 'billing', '--to', 'sideways'],
          '--to: expected earliest, latest or <shard>:<id> (e.g. 3:1234), got "sideways"',
        ],
        [['group', 'reset', 'rate', 'billing', '--to', '3:x'], '--to <id>: expected an integer'],
        [
          ['group', 'reset', 'rate', 'billing', '--to', '4294967296:1'],
          '--to <shard>: expected an integer from 0 to 4294967295',
        ],
        [
          ['group', 'reset', 'rate', 'billing', '--to', '1:18446744073709551616'],
          '--to <id>: expected an integer from 0 to 18446744073709551615',
        ],
        [['group', 'parked', 'rate', 'billing', '--shard', '-1'], '--shard: expected an integer'],
        [
          ['group', 'parked', 'rate', 'billing', '--limit', '0'],
          '--limit: expected an integer from 1',
        ],
        [
          ['group', 'replay', 'rate', 'billing', '--shard', '1', '--id', '1.5'],
          '--id: expected an integer from 0 to 18446744073709551615',
        ],
      ];
      for (const [args, message] of cases) {
        const result = await runCommand(args, { env: { SHAMELESS_ADDRESS: '127.0.0.1:1' } });
        expectFailure(result, 2, message);
      }
    });
  });

  describe('with a member failing one cell until it is parked and parking another', () => {
    const group = 'billing';
    let member: RawMember;
    /** The cell failed until parked (on shard 0 or 1) and the cell the member parks (2 or 3). */
    let failing: Cell;
    let parking: Cell;

    before(async () => {
      failing = written.find((cell) => cell.shard < 2)!;
      parking = written.find((cell) => cell.shard >= 2)!;
      member = new RawMember(
        api,
        admin.token,
        { group, memberId: 'worker-1', maxDeliveries: 3 },
        ({ cell, replay }) => {
          if (replay) return 'hold';
          if (cell!.id === failing.id && cell!.shard === failing.shard) return 'fail';
          if (cell!.id === parking.id && cell!.shard === parking.shard) return 'park';
          return 'ack';
        },
      );
      await member.waitFor('parked', ({ parked }) => parked.id === failing.id);
      await member.waitFor('parked', ({ parked }) => parked.id === parking.id);
      await member.committedUpTo(maxIds);
    });
    after(() => member?.close());

    it('describe: the member, and each shard owned with its cursor at the end, no lag, its parked cells', async () => {
      const result = await shameless(['group', 'describe', 'rate', group]);
      expect(result.code, result.stderr).to.equal(0);
      const described = parseExactJson(result.stdout) as {
        model: string;
        group: string;
        members: { memberId: string; shards: number[]; expiresAt: string; server: string }[];
        shards: ShardRow[];
      };
      expect(described.model).to.equal('rate');
      expect(described.group).to.equal(group);
      expect(described.members.map((m) => [m.memberId, m.shards])).to.deep.equal([
        ['worker-1', [0, 1, 2, 3]],
      ]);
      expect(Date.parse(described.members[0]!.expiresAt)).to.be.greaterThan(Date.now() - 1000);
      expect(described.members[0]!.server).to.match(/:\d+$/);
      expect(described.shards.map((shard) => shard.shard)).to.deep.equal([0, 1, 2, 3]);
      for (const shard of described.shards) {
        expect(shard.owner).to.equal('worker-1');
        expect(shard.cursor, `shard ${shard.shard}`).to.equal(maxIdOf(shard.shard));
        expect(shard.maxId).to.equal(shard.cursor);
        expect(shard.lag).to.equal(0);
        expect(shard.lagCapped).to.equal(false);
        const parked = [failing, parking].filter((cell) => cell.shard === shard.shard).length;
        expect(shard.parked, `shard ${shard.shard}`).to.equal(parked);
      }
      // A readable table: a member or a shard a line, each line exact JSON of its own.
      const rows = result.stdout.split('\n').filter((line) => line.startsWith('    {'));
      expect(rows).to.have.length(1 + SHARDS);
      expect(parseExactJson(rows[1]!.trim().replace(/,$/, ''))).to.include({ shard: 0 });
    });

    it('parked: each parked cell with its attempts, error and cell, in shard order, page by page', async () => {
      const all = await shameless(['group', 'parked', 'rate', group, '--page-size', '1']);
      expect(all.code, all.stderr).to.equal(0);
      const parked = lines(all.stdout) as ParkedLine[];
      expect(parked.map((cell) => [cell.shard, cell.id])).to.deep.equal([
        [failing.shard, Number(failing.id)],
        [parking.shard, Number(parking.id)],
      ]);
      const [failed, byMember] = parked as [ParkedLine, ParkedLine];
      expect(failed).to.include({ attempts: 3, error: 'boom: attempt 3', replayPending: false });
      expect(failed.cell!.uuid).to.equal(failing.uuid);
      expect(failed.cell!.body.hotel_id).to.be.a('number');
      expect(Date.parse(failed.parkedAt)).to.be.greaterThan(0);
      expect(byMember).to.include({ attempts: 1, error: 'not for us' });
      expect(byMember.cell!.uuid).to.equal(parking.uuid);
      expect(all.stderr).to.equal('group parked: 2 parked cells\n');

      const first = await shameless(['group', 'parked', 'rate', group, '--limit', '1']);
      expect(lines(first.stdout)).to.deep.equal([failed]);
      expect(first.stderr).to.equal(
        'group parked: 1 parked cell (stopped at --limit; there are more)\n',
      );

      const shard = await shameless([
        'group',
        'parked',
        'rate',
        group,
        '--shard',
        String(parking.shard),
      ]);
      expect(lines(shard.stdout)).to.deep.equal([byMember]);
      expect(shard.stderr).to.equal(`group parked: 1 parked cell of shard ${parking.shard}\n`);
    });

    it('replay: the owner is delivered the cell again; once acknowledged it is no longer parked', async () => {
      const args = ['--shard', String(failing.shard), '--id', String(failing.id)];
      const replay = await shameless(['group', 'replay', 'rate', group, ...args]);
      expect(replay.code, replay.stderr).to.equal(0);
      expect(lines(replay.stdout)).to.deep.equal([
        { shard: failing.shard, id: Number(failing.id), replayPending: true },
      ]);
      const delivered = await member.waitFor('deliveries', ({ deliveries }) =>
        deliveries.deliveries.some((delivery) => delivery.replay),
      );
      const again = delivered.deliveries.deliveries.find((delivery) => delivery.replay)!;
      expect(again.cell!.uuid).to.equal(failing.uuid);

      // Held by the member: still parked, its replay pending.
      const pending = await shameless([
        'group',
        'parked',
        'rate',
        group,
        '--shard',
        String(failing.shard),
      ]);
      expect(
        (lines(pending.stdout) as ParkedLine[]).map((cell) => cell.replayPending),
      ).to.deep.equal([true]);

      member.acknowledge(again);
      await member.waitFor('committed', ({ committed }) => committed.replays.includes(failing.id));
      const left = await shameless(['group', 'parked', 'rate', group]);
      expect((lines(left.stdout) as ParkedLine[]).map((cell) => cell.id)).to.deep.equal([
        Number(parking.id),
      ]);
    });

    it('replay of a cell that is not parked: NOT_FOUND, a hint to list the parked cells (exit 1)', async () => {
      const result = await shameless([
        'group',
        'replay',
        'rate',
        group,
        '--shard',
        String(failing.shard),
        '--id',
        String(failing.id),
      ]);
      expectFailure(
        result,
        1,
        `shameless: NOT_FOUND: cell ${failing.id} of shard ${failing.shard} is not parked in group ${group}`,
        `hint: \`shameless group parked rate ${group}\` lists the parked cells`,
      );
    });

    it('reset while the member is connected: FAILED_PRECONDITION naming it, a hint to describe (exit 1)', async () => {
      const result = await shameless(['group', 'reset', 'rate', group, '--to', 'earliest']);
      expectFailure(
        result,
        1,
        'shameless: FAILED_PRECONDITION: ',
        'worker-1',
        `hint: \`shameless group describe rate ${group}\` lists the members connected`,
      );
    });

    it("reset after the member left: to earliest, not past a shard's end, to latest, to <shard>:<id>; a member joining then starts there", async () => {
      await member.leave();
      const gone = await shameless(['group', 'describe', 'rate', group]);
      const described = parseExactJson(gone.stdout) as { members: unknown[]; shards: ShardRow[] };
      expect(described.members).to.deep.equal([]);
      expect(described.shards.map((shard) => shard.owner)).to.deep.equal([null, null, null, null]);

      const earliest = await shameless(['group', 'reset', 'rate', group, '--to', 'earliest']);
      expect(earliest.code, earliest.stderr).to.equal(0);
      const fromStart = (parseExactJson(earliest.stdout) as { shards: ShardRow[] }).shards;
      expect(fromStart.map((shard) => [shard.cursor, shard.lag])).to.deep.equal(
        [0, 1, 2, 3].map((shard) => [0, written.filter((cell) => cell.shard === shard).length]),
      );

      // A cursor past the shard's end is refused: cells written up to it would be skipped.
      const past = maxIdOf(0) + 1000;
      const beyond = await shameless(['group', 'reset', 'rate', group, '--to', `0:${past}`]);
      expect(beyond.code, beyond.stderr).to.equal(1);
      expect(beyond.stderr).to.include(
        `INVALID_ARGUMENT: shard.cursor: shard 0's highest id is ${maxIdOf(0)}: a cursor past it would skip`,
      );

      const latest = await shameless(['group', 'reset', 'rate', group, '--to', 'latest']);
      expect(latest.code, latest.stderr).to.equal(0);
      const atEnd = (parseExactJson(latest.stdout) as { shards: ShardRow[] }).shards;
      expect(atEnd.map((shard) => shard.cursor)).to.deep.equal([0, 1, 2, 3].map(maxIdOf));
      expect(atEnd.every((shard) => shard.lag === 0)).to.equal(true);

      // One shard back to just before its last cell: that cell, and only it, comes next.
      const shard = written.at(-1)!.shard;
      const before = written.filter((cell) => cell.shard === shard).at(-2)?.id ?? 0n;
      const one = await shameless(['group', 'reset', 'rate', group, '--to', `${shard}:${before}`]);
      expect(one.code, one.stderr).to.equal(0);
      const rows = (parseExactJson(one.stdout) as { shards: ShardRow[] }).shards;
      expect(rows[shard]).to.include({ cursor: Number(before), lag: 1 });
      const unchanged = rows.filter((row) => row.shard !== shard);
      expect(unchanged.every((row) => row.lag === 0)).to.equal(true);

      const next = new RawMember(api, admin.token, { group, memberId: 'worker-2' }, () => 'ack');
      try {
        const assigned = await next.waitFor('assigned', ({ assigned }) => assigned.shard === shard);
        expect(assigned.assigned.cursor).to.equal(before);
        const first = await next.waitFor('deliveries');
        expect(first.deliveries.deliveries.map((delivery) => delivery.cell!.id)).to.deep.equal([
          written.at(-1)!.id,
        ]);
        await next.leave();
      } finally {
        next.close();
      }
    });
  });

  describe('failures', () => {
    it('a group no member ever joined: NOT_FOUND, a hint to check the names', async () => {
      const result = await shameless(['group', 'describe', 'rate', 'nobody-joined']);
      expectFailure(
        result,
        1,
        'shameless: NOT_FOUND: consumer group nobody-joined of model rate does not exist',
        'hint: check the spelling of <model> and <group>: another spelling is another group',
      );
    });

    it('an unknown model: NOT_FOUND with the common hint to `shameless describe`', async () => {
      const result = await shameless(['group', 'parked', 'rates', 'billing']);
      expectFailure(
        result,
        1,
        'shameless: NOT_FOUND: model "rates" is not defined',
        '`shameless describe`',
      );
    });

    it('a value the server refuses is named as the argument it came from, with that command’s --help', async () => {
      const name = await shameless(['group', 'describe', 'rate', 'no spaces']);
      expectFailure(
        name,
        1,
        'shameless: INVALID_ARGUMENT: group: ',
        'hint: fix <group> (sent as the request field group); `shameless group describe --help`',
      );
      const shard = await shameless(['group', 'parked', 'rate', 'billing', '--shard', '9']);
      expectFailure(
        shard,
        1,
        'INVALID_ARGUMENT',
        'hint: fix --shard',
        '`shameless group parked --help`',
      );
    });

    it('reset with a token of the reader role: PERMISSION_DENIED, a hint at the admin role', async () => {
      const result = await shameless(
        ['group', 'reset', 'rate', 'billing', '--to', 'latest'],
        reader,
      );
      expectFailure(
        result,
        1,
        'PERMISSION_DENIED: ResetConsumerGroup needs the admin role',
        'pass a token with the admin role',
      );
      expect(result.stderr).not.to.include(reader.token);
    });

    it('with no server: UNAVAILABLE and a hint naming the address (exit 1)', async () => {
      const result = await runCommand([
        'group',
        'describe',
        'rate',
        'billing',
        '--address',
        '127.0.0.1:1',
      ]);
      expectFailure(
        result,
        1,
        'shameless: UNAVAILABLE: ',
        'hint: is a server running at 127.0.0.1:1?',
      );
    });
  });
});
