// Riding out a restart: the only `shameless serve` process is killed under 8 writers and
// started again on the same port about 1.3 s later. With the SDK's defaults (a 5 s deadline)
// the writers' calls wait for the server instead of failing, spending no retry budget while no
// server is up, and every acknowledged put is stored exactly once. Real server processes over
// the local MariaDB; no timing assertions (the figures are printed).

import { expect } from 'chai';
import { setTimeout as sleep } from 'node:timers/promises';
import { createTestDatabases, freePort, type TestDatabases } from '@shameless/testkit';
import { connect, type Store } from '../src/index.js';
import { RATE_SCHEMA, rateValues } from './support/rateModel.js';
import { startServeProcess, type ServeProcess } from './support/serveProcess.js';

const WRITERS = 8;
const DOWN_MS = 1300;

describe('a restart under load', function () {
  this.timeout(60_000);
  let databases: TestDatabases;
  let server: ServeProcess | undefined;
  let store: Store | undefined;

  before(async () => {
    databases = await createTestDatabases(1);
  });
  after(async () => {
    await store?.close();
    await server?.kill('SIGKILL');
    await databases?.drop();
  });

  it('8 writers with a 5 s deadline see no error across a 1.3 s restart', async () => {
    const port = await freePort();
    // The later --listen wins over startServeProcess's own.
    const args = [
      ...['--partition', databases.urls[0] as string, '--shards-count', '2'],
      ...['--listen', `127.0.0.1:${port}`],
    ];
    const startedAt = performance.now();
    server = await startServeProcess(args);
    // Starting takes a while itself: the restart sleeps what is left of DOWN_MS.
    const startMs = performance.now() - startedAt;
    expect(server.address).to.equal(`127.0.0.1:${port}`);
    store = await connect({ endpoints: [server.address], deadlineMs: 5000, coalesce: false });
    const Rate = await store.defineModel(RATE_SCHEMA);

    const failures: string[] = [];
    const acknowledged: { uuid: string; room: string }[] = [];
    let writing = true;
    const writer = async (worker: number): Promise<void> => {
      for (let n = 0; writing; n++) {
        const room = `w${worker}-${n}`;
        try {
          const record = await Rate.put(rateValues(900 + worker, room, '2026-01-01'));
          acknowledged.push({ uuid: record.uuid, room });
        } catch (error) {
          failures.push(`${room}: ${(error as Error).name}: ${(error as Error).message}`);
        }
      }
    };
    const writers = Promise.all(Array.from({ length: WRITERS }, (_, worker) => writer(worker)));

    await sleep(500);
    const beforeKill = store.transport.stats();
    const ackedBeforeKill = acknowledged.length;
    const downAt = performance.now();
    await server.kill('SIGKILL');
    await sleep(Math.max(0, DOWN_MS - startMs - (performance.now() - downAt)));
    server = await startServeProcess(args);
    const downMs = performance.now() - downAt;
    const ackedWhileDown = acknowledged.length;
    await sleep(1000);
    writing = false;
    await writers;
    const stats = store.transport.stats();

    console.log(
      `      restart: down ${Math.round(downMs)} ms (until listening again); ` +
        `${acknowledged.length} puts acknowledged (${ackedBeforeKill} before the kill, ` +
        `${acknowledged.length - ackedWhileDown} after the restart); ` +
        `${stats.attempts - beforeKill.attempts} attempts, ${stats.retries - beforeKill.retries} ` +
        `retries, ${stats.budgetRefusals - beforeKill.budgetRefusals} budget refusals since the ` +
        `kill; budget ${beforeKill.budgetTokens} -> ${stats.budgetTokens} tokens`,
    );
    expect(failures, 'calls that surfaced an error').to.deep.equal([]);
    expect(acknowledged.length - ackedWhileDown, 'puts after the restart').to.be.greaterThan(0);
    expect(stats.budgetRefusals - beforeKill.budgetRefusals, 'budget refusals').to.equal(0);

    // Every acknowledged put is there, once: the same uuid for its tuple, read back.
    for (const { uuid, room } of acknowledged) {
      const found = await Rate.where({
        hotel_id: Number(room.slice(1, room.indexOf('-'))) + 900,
        room_type: room,
        check_in_date: '2026-01-01',
      }).toArray();
      expect(
        found.map((record) => record.uuid),
        room,
      ).to.deep.equal([uuid]);
    }
  });
});
