// A consumer group through its failures together (issue 52's acceptance run): three members in
// processes of their own over two `shameless serve` processes and two partitions of the local
// MariaDB, 16 shards, 20,000 cells written while members are SIGKILLed and started again five
// times and one server is killed and started again. At the end: every cell was handled at
// least once; within each ownership of a shard its cells were handled in id order; no cell was
// handled after a cursor at or past it was confirmed durable; the group's lag is 0.

import { expect } from 'chai';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  createTestDatabases,
  freePort,
  startListeningProcess,
  type ListeningProcess,
  type TestDatabases,
} from '@shameless/testkit';
import { connect, type Store } from '../src/index.js';
import { logOf, waitFor, writeRates } from './support/consumers.js';
import { RATE_SCHEMA } from './support/rateModel.js';
import { startServeProcess, type ServeProcess } from './support/serveProcess.js';

const SHARDS = 16;
const CELLS = 20_000;
const GROUP = 'chaos';
const MEMBER = join(dirname(fileURLToPath(import.meta.url)), 'support/chaosMember.js');

/** One line a member process printed. */
interface Line {
  readonly at: number;
  readonly t: 'handled' | 'committed';
  readonly shard: number;
  readonly id: number;
  readonly cursor: number;
  readonly own: number;
}

/** A member slot: its id, and the processes that ran it one after the other. */
interface Slot {
  readonly memberId: string;
  readonly runs: ListeningProcess[];
}

/** What each member process printed, parsed as it comes (outputs grow to megabytes). */
const parsed = new Map<ListeningProcess, { offset: number; lines: Line[] }>();

function linesOf(run: ListeningProcess): Line[] {
  let state = parsed.get(run);
  if (!state) parsed.set(run, (state = { offset: 0, lines: [] }));
  const output = run.output();
  const end = output.lastIndexOf('\n') + 1;
  for (const line of output.slice(state.offset, end).split('\n')) {
    if (line.startsWith('{')) state.lines.push(JSON.parse(line) as Line);
  }
  state.offset = Math.max(state.offset, end);
  return state.lines;
}

/**
 * Per shard, the highest cursor confirmed by each moment: the confirmations in time order with
 * the running maximum, to ask what was confirmed before a handler started.
 */
function confirmedBefore(confirmations: readonly Line[]): (shard: number, at: number) => number {
  const byShard = new Map<number, { at: number; cursor: number }[]>();
  for (const line of [...confirmations].sort((a, b) => a.at - b.at)) {
    const list = byShard.get(line.shard) ?? [];
    const highest = Math.max(list.at(-1)?.cursor ?? 0, line.cursor);
    list.push({ at: line.at, cursor: highest });
    byShard.set(line.shard, list);
  }
  return (shard, at) => {
    const list = byShard.get(shard) ?? [];
    let low = 0;
    let high = list.length - 1;
    let found = 0;
    while (low <= high) {
      const middle = (low + high) >>> 1;
      if (list[middle]!.at < at) {
        found = list[middle]!.cursor;
        low = middle + 1;
      } else high = middle - 1;
    }
    return found;
  };
}

describe('a consumer group through member crashes and a server restart', function () {
  this.timeout(300_000);
  let databases: TestDatabases;
  const servers: ServeProcess[] = [];
  let serverArgs: string[][];
  const slots: Slot[] = [];
  let store: Store;

  const startMember = async (slot: Slot, endpoints: string) => {
    slot.runs.push(
      await startListeningProcess([MEMBER, endpoints, GROUP, slot.memberId], {
        name: `member ${slot.memberId}`,
        timeoutMs: 30_000,
      }),
    );
  };

  before(async () => {
    databases = await createTestDatabases(2);
    const ports = [await freePort(), await freePort()];
    serverArgs = ports.map((port) => [
      ...databases.urls.flatMap((url) => ['--partition', url]),
      ...['--shards-count', String(SHARDS), '--listen', `127.0.0.1:${port}`],
    ]);
    // One after the other: the first lays out the fresh databases.
    for (const args of serverArgs) servers.push(await startServeProcess(args));
    store = await connect({ endpoints: [servers[1]!.address] });
    await store.defineModel(RATE_SCHEMA);
  });
  after(async () => {
    for (const slot of slots) for (const run of slot.runs) await run.kill('SIGKILL');
    await store?.close();
    for (const server of servers) await server.kill('SIGKILL');
    await databases?.drop();
  });

  it('handles every cell at least once, in order within each ownership, never after its confirmation, and ends with no lag', async () => {
    const endpoints = servers.map((server) => server.address).join(',');
    for (const memberId of ['m1', 'm2', 'm3']) {
      const slot: Slot = { memberId, runs: [] };
      slots.push(slot);
      await startMember(slot, endpoints);
    }
    const Rate = await store.defineModel(RATE_SCHEMA);

    // The writes, and the faults beside them: a member killed and started again every 1.5 s
    // (five times, round the slots), and the first server killed and started again once. The
    // last cells are written once the faults are over, so that every fault falls within the
    // writes whatever the machine's speed.
    const startedAt = performance.now();
    const early = writeRates(Rate, CELLS - 2000, 'chaos-early', () => ({}), 50);
    const faults = (async () => {
      for (let kill = 0; kill < 5; kill++) {
        await new Promise((resolve) => setTimeout(resolve, 1500));
        const slot = slots[kill % slots.length]!;
        await slot.runs.at(-1)!.kill('SIGKILL');
        if (kill === 2) {
          await servers[0]!.kill('SIGKILL');
          servers[0] = await startServeProcess(serverArgs[0]!);
        }
        await startMember(slot, endpoints);
      }
    })();
    await faults;
    await Promise.all([early, writeRates(Rate, 2000, 'chaos-late', () => ({}), 50)]);
    const wroteMs = performance.now() - startedAt;

    const log = await logOf(Rate);
    const cells = [...log.values()].reduce((sum, ids) => sum + ids.length, 0);
    expect(cells).to.equal(CELLS);
    const allRuns = slots.flatMap((slot) => slot.runs);
    const handledKeys = () => {
      const keys = new Set<string>();
      for (const run of allRuns) {
        for (const line of linesOf(run))
          if (line.t === 'handled') keys.add(`${line.shard}/${line.id}`);
      }
      return keys;
    };
    await waitFor(
      () => handledKeys().size === CELLS,
      60_000,
      () => `every cell handled (${handledKeys().size} of ${CELLS})`,
    );
    await waitFor(
      async () =>
        (await store.describeConsumerGroup('rate', GROUP)).shards.every((shard) => shard.lag === 0),
      30_000,
      'the group with no lag',
    );

    // Within one ownership (a run of a member, a shard's n-th assignment in it), ids ascend.
    for (const run of allRuns) {
      const last = new Map<string, number>();
      for (const line of linesOf(run)) {
        if (line.t !== 'handled') continue;
        const ownership = `${line.shard}#${line.own}`;
        const before = last.get(ownership) ?? 0;
        expect(line.id, `shard ${line.shard}, ownership ${line.own}`).to.be.greaterThan(before);
        last.set(ownership, line.id);
      }
    }

    // No cell handled after a cursor at or past it was confirmed, to whichever member. (A
    // handler's line is printed as it starts; a confirmation's up to 5 ms after it arrived.)
    const everything = allRuns.flatMap(linesOf);
    const confirmations = everything.filter((line) => line.t === 'committed');
    const handled = everything.filter((line) => line.t === 'handled');
    const confirmed = confirmedBefore(confirmations);
    const violations = handled.filter((line) => confirmed(line.shard, line.at) >= line.id);
    expect(violations, 'cells handled after their confirmation').to.deep.equal([]);

    const twice = handled.length - CELLS;
    console.log(
      `      ${CELLS} cells over ${SHARDS} shards: handled ${handled.length} times ` +
        `(${twice} again after crashes), ${confirmations.length} confirmations, ` +
        `${allRuns.length} member processes, written in ${Math.round(wroteMs)} ms`,
    );
  });
});
