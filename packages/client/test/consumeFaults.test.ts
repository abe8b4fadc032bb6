// Consumer group members through failures, against real `shameless serve` processes over the
// local MariaDB: a member process SIGKILLed, a member cut off silently (a TCP proxy that drops
// its traffic), a server restarted, the server holding a member's stream killed. The bounds
// asserted are the (2 s for a takeover after a crash, session timeout + 2 s after a
// silent cut), measured on the test machine; the figures are printed.

import { expect } from 'chai';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  freePort,
  startListeningProcess,
  startTcpProxy,
  type ListeningProcess,
  type TcpProxy,
} from '@shameless/testkit';
import { UnavailableError, connect, type Consumer, type Model, type Store } from '../src/index.js';
import {
  Events,
  Handled,
  logOf,
  num,
  startGroupServer,
  waitFor,
  writeRates,
  type GroupServer,
} from './support/consumers.js';
import { RATE_SCHEMA } from './support/rateModel.js';
import { startServeProcess, startTwoServers } from './support/serveProcess.js';

const SHARDS = 16;
const SESSION_TIMEOUT_MS = 2000;
const CONSUME_PROCESS = join(dirname(fileURLToPath(import.meta.url)), 'support/consumeProcess.js');

/** What a member process printed, as it stands. */
interface ProcessReport {
  readonly handled: { shard: number; id: number }[];
  readonly committed: Map<number, number>;
  readonly shards: number[];
}

function reportOf(member: ListeningProcess): ProcessReport {
  const report: ProcessReport = { handled: [], committed: new Map(), shards: [] };
  for (const line of member.output().split('\n')) {
    if (!line.startsWith('{')) continue;
    const entry = JSON.parse(line) as {
      t: string;
      shard: number;
      id: number;
      cursor: number;
      shards: number[];
    };
    if (entry.t === 'handled') report.handled.push({ shard: entry.shard, id: entry.id });
    else if (entry.t === 'committed') report.committed.set(entry.shard, entry.cursor);
    else if (entry.t === 'shards') report.shards.splice(0, Infinity, ...entry.shards);
  }
  return report;
}

/** Writes rates in small rounds until stopped. */
function keepWriting(model: Model<typeof RATE_SCHEMA>, tag: string): () => Promise<void> {
  let writing = true;
  const writer = (async () => {
    for (let round = 0; writing; round++) {
      await writeRates(model, 10, `${tag}-${round}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  })();
  return async () => {
    writing = false;
    await writer;
  };
}

describe('consumer groups through failures', function () {
  this.timeout(90_000);
  let fixture: GroupServer;
  let store: Store;
  let Rate: Model<typeof RATE_SCHEMA>;
  const consumers: Consumer[] = [];
  const track = <C extends Consumer>(consumer: C): C => {
    consumers.push(consumer as unknown as Consumer);
    return consumer;
  };
  const stores: Store[] = [];

  before(async () => {
    fixture = await startGroupServer(SHARDS);
    store = await connect({ endpoints: [fixture.server.address] });
    Rate = await store.defineModel(RATE_SCHEMA);
  });
  afterEach(async () => {
    await Promise.all(consumers.splice(0).map((consumer) => consumer.close()));
    await Promise.all(stores.splice(0).map((other) => other.close()));
  });
  after(async () => {
    await store?.close();
    await fixture?.close();
  });

  it('a member process SIGKILLed: the survivor owns its shards within 2 s, and no committed cell comes again', async () => {
    const stopWriting = keepWriting(Rate, 'kill');
    const child = await startListeningProcess(
      [CONSUME_PROCESS, fixture.server.address, 'crash', 'crash-a', '5'],
      { name: 'a consumer process' },
    );
    try {
      await waitFor(() => reportOf(child).shards.length === SHARDS, 10_000, 'the process at work');
      const handled = new Handled();
      /** Cells the survivor was handed at or below a cursor it knew committed. */
      const again: string[] = [];
      const survivor = track(
        Rate.consume(
          { group: 'crash', memberId: 'crash-b', sessionTimeoutMs: SESSION_TIMEOUT_MS },
          (cell) => {
            const shard = cell.shard!;
            const id = num(cell.id!);
            const committed = survivor.committed.get(shard);
            if (committed !== undefined && id <= num(committed)) again.push(`${shard}/${id}`);
            handled.add({ shard, id, attempt: 1, replay: false, by: 'b' });
          },
        ),
      );
      await waitFor(
        () => survivor.shards.length === 8 && reportOf(child).shards.length === 8,
        10_000,
        'an 8/8 split',
      );
      // Long enough for cursors to be committed under load (about once a second).
      const split = reportOf(child);
      await waitFor(
        () => {
          const now = reportOf(child);
          return split.shards.every(
            (shard) => (now.committed.get(shard) ?? 0) > (split.committed.get(shard) ?? 0),
          );
        },
        10_000,
        "the process's cursors committed since the split",
      );

      const before = reportOf(child);
      const killedAt = performance.now();
      await child.kill('SIGKILL');
      const takeoverMs = await waitFor(
        () => survivor.shards.length === SHARDS,
        10_000,
        () => `the survivor to own every shard (it owns ${survivor.shards})`,
      );
      const sinceKill = performance.now() - killedAt;
      await new Promise((resolve) => setTimeout(resolve, 500));
      await stopWriting();
      const log = await logOf(Rate);
      await waitFor(
        () => {
          const counts = handled.counts();
          for (const { shard, id } of reportOf(child).handled) counts.set(`${shard}/${id}`, 1);
          return [...log].every(([shard, ids]) => ids.every((id) => counts.has(`${shard}/${id}`)));
        },
        20_000,
        'every cell handled by one member or the other',
      );
      const last = reportOf(child);
      const byChild = new Set(last.handled.map(({ shard, id }) => `${shard}/${id}`));
      const twice = handled.all.filter(({ shard, id }) => byChild.has(`${shard}/${id}`));
      console.log(
        `      SIGKILL: the survivor owned every shard ${Math.round(takeoverMs)} ms after the ` +
          `kill (${Math.round(sinceKill)} ms with the kill itself); ${last.handled.length} cells ` +
          `handled by the killed process, ${handled.all.length} by the survivor, ${twice.length} ` +
          'by both (above the cursors committed when it died: at least once)',
      );
      expect(takeoverMs).to.be.at.most(2000);
      // No cell at or below a cursor the killed process was told was committed came again.
      for (const { shard, id } of twice) {
        expect(id, `cell ${id} of shard ${shard}`).to.be.greaterThan(
          last.committed.get(shard) ?? 0,
        );
      }
      for (const shard of before.shards) {
        const committed = last.committed.get(shard) ?? 0;
        const below = handled.all.filter((x) => x.shard === shard && x.id <= committed);
        expect(below, `shard ${shard}: cells at or below ${committed}`).to.deep.equal([]);
      }
      expect(again, 'cells at or below a cursor the survivor knew committed').to.deep.equal([]);
    } finally {
      await child.kill('SIGKILL');
      await stopWriting();
    }
  });

  it('a member cut off silently: its shards go to the other within session timeout + 2 s; it comes back', async () => {
    const [host, port] = fixture.server.address.split(':') as [string, string];
    const proxy: TcpProxy = await startTcpProxy({ target: { host, port: Number(port) } });
    const stopWriting = keepWriting(Rate, 'cut');
    try {
      const cutStore = await connect({ endpoints: [proxy.address] });
      stores.push(cutStore);
      const CutRate = await cutStore.defineModel(RATE_SCHEMA);
      const handled = new Handled();
      const events = { a: new Events(), b: new Events() };
      const member = (model: Model<typeof RATE_SCHEMA>, name: 'a' | 'b') =>
        track(
          model.consume(
            {
              group: 'cut',
              memberId: `cut-${name}`,
              sessionTimeoutMs: SESSION_TIMEOUT_MS,
              onEvent: events[name].hook,
            },
            (cell) =>
              handled.add({
                shard: cell.shard!,
                id: num(cell.id!),
                attempt: 1,
                replay: false,
                by: name,
              }),
          ),
        );
      const a = member(CutRate, 'a');
      await waitFor(() => a.shards.length === SHARDS, 10_000, 'a to own every shard');
      const b = member(Rate, 'b');
      await waitFor(() => a.shards.length === 8 && b.shards.length === 8, 10_000, 'an 8/8 split');

      proxy.setFaults({ blackhole: true });
      const takeoverMs = await waitFor(
        () => b.shards.length === SHARDS,
        SESSION_TIMEOUT_MS + 10_000,
        () => `b to own every shard (it owns ${b.shards})`,
      );
      // a, hearing nothing for its session timeout, takes the stream for dead.
      const deadAfterMs = await waitFor(
        () => a.shards.length === 0,
        10_000,
        'a to drop its shards',
      );
      console.log(
        `      silent cut-off: the other member owned every shard ${Math.round(takeoverMs)} ms ` +
          `after the cut (session timeout ${SESSION_TIMEOUT_MS} ms); the cut member dropped its ` +
          `shards ${Math.round(takeoverMs + deadAfterMs)} ms after it`,
      );
      expect(takeoverMs).to.be.at.most(SESSION_TIMEOUT_MS + 2000);
      const gaveUp = events.a.of('reconnecting')[0];
      expect(gaveUp?.error).to.be.instanceOf(UnavailableError);
      expect(gaveUp?.error.message).to.match(/nothing heard from the server/);

      // The network comes back: a joins again under its id and gets its share back.
      proxy.setFaults({});
      proxy.resetAll();
      await waitFor(
        () => a.shards.length === 8 && b.shards.length === 8,
        20_000,
        () => `a back, 8/8 (a: ${a.shards}, b: ${b.shards})`,
      );
      expect(events.a.of('joined').every((e) => e.memberId === 'cut-a')).to.equal(true);

      // A close whose leave never reaches the server: its connection cut, then reset. The
      // member still stops, and says that nothing was handed over.
      proxy.setFaults({ blackhole: true });
      const closing = a.close();
      proxy.resetAll();
      await closing;
      const [left, ...more] = events.a.of('left');
      expect(more).to.deep.equal([]);
      expect(left?.handedOver).to.equal(false);
      expect(left?.error).to.be.instanceOf(UnavailableError);
      await waitFor(() => b.shards.length === SHARDS, 10_000, 'b to own every shard again');
      proxy.setFaults({});
      await stopWriting();
      const log = await logOf(Rate);
      await waitFor(() => handled.covers(log), 20_000, 'every cell handled');
    } finally {
      await stopWriting();
      await proxy.close();
    }
  });

  it('a server restart: the member joins again under its id and goes on', async () => {
    const port = await freePort();
    const own = await startGroupServer(4, port);
    try {
      const ownStore = await connect({ endpoints: [own.server.address] });
      stores.push(ownStore);
      const OwnRate = await ownStore.defineModel(RATE_SCHEMA);
      const handled = new Handled();
      const events = new Events();
      const consumer = track(
        OwnRate.consume({ group: 'restart', onEvent: events.hook }, (cell) =>
          handled.add({
            shard: cell.shard!,
            id: num(cell.id!),
            attempt: 1,
            replay: false,
            by: 'a',
          }),
        ),
      );
      await writeRates(OwnRate, 100, 'before-restart');
      const before = await logOf(OwnRate);
      await waitFor(() => handled.covers(before), 10_000, 'the cells before the restart');

      await own.server.kill('SIGKILL');
      await waitFor(() => consumer.shards.length === 0, 10_000, 'the member to lose its stream');
      own.server = await startServeProcess([...own.args]);
      const upAt = performance.now();
      const backMs = await waitFor(
        () => consumer.shards.length === 4,
        15_000,
        'the member to own every shard again',
      );
      console.log(
        `      server restart: the member owned every shard again ${Math.round(backMs)} ms after ` +
          `the server listened again (${events.of('reconnecting').length} reconnection attempts)`,
      );
      void upAt;
      await writeRates(OwnRate, 100, 'after-restart');
      const after = await logOf(OwnRate);
      await waitFor(() => handled.covers(after), 10_000, 'the cells written after the restart');
      expect(events.of('reconnecting').length).to.be.greaterThan(0);
      expect(events.of('reconnecting')[0]!.error).to.be.instanceOf(UnavailableError);
      expect(events.of('joined').map((e) => e.memberId)).to.deep.equal([
        consumer.memberId,
        consumer.memberId,
      ]);
    } finally {
      await own.close();
    }
  });

  it('the server holding its stream killed: the member goes to the other endpoint', async () => {
    const two = await startTwoServers();
    try {
      const [first, second] = two.servers;
      const both = await connect({ endpoints: [first.address, second.address] });
      stores.push(both);
      const BothRate = await both.defineModel(RATE_SCHEMA);
      const consumer = track(BothRate.consume({ group: 'failover' }, () => {}));
      await waitFor(() => consumer.shards.length === 4, 10_000, 'every shard assigned');
      const holding = async () => {
        const group = await both.describeConsumerGroup(BothRate, 'failover');
        return group.members[0]?.server.split(':').pop();
      };
      const pid = await holding();
      const victim = [first, second].find((server) => String(server.process.pid) === pid)!;
      expect(victim, `the server with pid ${pid}`).to.not.equal(undefined);
      await victim.kill('SIGKILL');
      await waitFor(
        async () => consumer.shards.length === 4 && (await holding()) !== pid,
        10_000,
        'the member on the other server',
      );
    } finally {
      await two.close();
    }
  });
});
