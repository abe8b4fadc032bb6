// The `shameless serve` process: data survives a restart, a changed layout is refused, and
// SIGTERM shuts down gracefully.
import { expect } from 'chai';
import { status } from '@grpc/grpc-js';
import type { EachResponse } from '@shameless/proto';
import { createTestDatabases, startTcpProxy, type TestDatabases } from '@shameless/testkit';
import { connectHealth, connectStore, rejection } from '../support/grpcCalls.js';
import { runServerExpectingFailure, startServerProcess } from '../support/serverProcess.js';
import { RATE_MODEL, pack, requestId, unpack } from '../support/storeFixture.js';

describe('shameless serve (process)', function () {
  this.timeout(60_000);
  let databases: TestDatabases;
  before(async () => {
    databases = await createTestDatabases(2);
  });
  after(() => databases?.drop());

  const partitionArgs = () => databases.urls.flatMap((url) => ['--partition', url]);

  it('keeps all data across a restart', async () => {
    const first = await startServerProcess([...partitionArgs(), '--shards-count', '4']);
    const api = connectStore(first.address);
    await api.defineModel({ model: RATE_MODEL });
    const put = await api.put({
      model: 'rate',
      values: pack({
        hotel_id: 9,
        room_type: 'r',
        check_in_date: 'd',
        gateway: 'g',
        discount_type: 't',
        price: 1,
      }),
      requestId: requestId(),
    });
    api.close();
    expect(await first.kill('SIGTERM')).to.equal(0);

    const second = await startServerProcess([...partitionArgs(), '--shards-count', '4']);
    const again = connectStore(second.address);
    const cell = await again.getCell({
      model: 'rate',
      uuid: put.uuid,
      cell: 'base',
      refKey: undefined,
    });
    expect(unpack(cell.cell!.body).price).to.equal(1);
    const description = await again.describeStore({});
    expect(description.models.map((m) => m.name)).to.deep.equal(['rate']);
    again.close();
    await second.kill('SIGTERM');
  });

  it('refuses to start with another shard count or partition list, saying why', async () => {
    const otherCount = await runServerExpectingFailure([...partitionArgs(), '--shards-count', '8']);
    expect(otherCount.code).to.equal(1);
    expect(otherCount.output).to.match(
      /created with shardsCount=4 and 2 partition\(s\).*started with shardsCount=8/s,
    );
    expect(otherCount.output).to.match(/--shards-count 4/);

    const reordered = await runServerExpectingFailure([
      '--partition',
      databases.urls[1]!,
      '--partition',
      databases.urls[0]!,
      '--shards-count',
      '4',
    ]);
    expect(reordered.code).to.equal(1);
    expect(reordered.output).to.match(/as partition 1/);

    const notMultiple = await runServerExpectingFailure([
      ...partitionArgs(),
      '--shards-count',
      '5',
    ]);
    expect(notMultiple.output).to.match(/must be a multiple of the number of partitions/);
    const badFlag = await runServerExpectingFailure(['--shards-count', 'lots']);
    expect(badFlag.code).to.equal(2);
    expect(badFlag.output).to.match(/--shards-count: expected an integer/);
  });

  it('refuses to start with --legacy-created-at-is-bigint when the models’ tables hold DATETIME', async () => {
    const legacy = await runServerExpectingFailure([
      ...partitionArgs(),
      '--shards-count',
      '4',
      '--legacy-created-at-is-bigint',
    ]);
    expect(legacy.code).to.equal(1);
    expect(legacy.output).to.match(
      /cannot start: table rate_00000\d has created_at DATETIME \(and 3 more tables\), but this store is configured to write BIGINT milliseconds/,
    );
  });

  it('on SIGTERM: health goes NOT_SERVING, open streams end UNAVAILABLE, the process exits 0', async () => {
    const server = await startServerProcess([
      ...partitionArgs(),
      '--shards-count',
      '4',
      '--grace-ms',
      '5000',
    ]);
    const api = connectStore(server.address);
    const health = connectHealth(server.address);
    const check = () => health.check('shameless.v1.Store');
    expect(await check()).to.equal('SERVING');

    // A log of 2,000 cells, 2 MB.
    await api.defineModel({ model: RATE_MODEL });
    const payload = 'x'.repeat(1024);
    for (let batch = 0; batch < 4; batch++) {
      await api.putMany({
        puts: Array.from({ length: 500 }, (_, i) => ({
          model: 'rate',
          values: pack({
            hotel_id: 1000 + batch,
            room_type: `sigterm-${i}`,
            check_in_date: 'd',
            gateway: 'g',
            discount_type: 't',
            payload,
          }),
          requestId: requestId(),
        })),
      });
    }
    // The streams reach the server through a proxy that holds each chunk it sends back for
    // 20 ms, so that the read is still being sent when the signal comes.
    const [host, port] = server.address.split(':');
    const proxy = await startTcpProxy({
      target: { host: host!, port: Number(port) },
      faults: { delayServerToClient: { probability: 1, ms: 20 } },
    });
    const streams = connectStore(proxy.address);
    const outcome = (stream: NodeJS.EventEmitter) =>
      new Promise<string>((resolve) => {
        stream.on('end', () => resolve('end'));
        stream.on('error', (error) => resolve(`error ${(error as { code?: number }).code}`));
      });
    const read = streams.client.each({
      model: 'rate',
      shards: [],
      cursors: {},
      follow: false,
      batchSize: 10,
      heartbeatIntervalMs: 0,
    });
    let cells = 0;
    read.on('data', (message: EachResponse) => {
      if (message.event?.$case === 'batch') cells += message.event.batch.cells.length;
    });
    const readEnded = outcome(read);
    const follow = streams.client.each({
      model: 'rate',
      shards: [],
      cursors: {},
      follow: true,
      batchSize: 0,
      heartbeatIntervalMs: 100,
    });
    follow.on('data', () => {});
    const followEnded = outcome(follow);
    await new Promise((resolve) => setTimeout(resolve, 300));
    server.process.kill('SIGTERM');
    // A follow stream never ends by itself, and the log read was cut short: an OK would tell
    // the client the log is over, or whole.
    expect(await followEnded).to.equal(`error ${status.UNAVAILABLE}`);
    expect(await readEnded).to.equal(`error ${status.UNAVAILABLE}`);
    expect(cells, 'cells read before the shutdown').to.be.below(2000);
    expect(await server.exited).to.equal(0);
    const after = await rejection(api.describeStore({}));
    expect(after.code).to.equal(status.UNAVAILABLE);
    health.close();
    api.close();
    streams.close();
    await proxy.close();
  });

  it('on SIGTERM: exits though its stdout and stderr are pipes whose reader went away', async () => {
    // As `shameless serve 2>&1 | head -3` leaves it: the shutdown's log lines cannot be
    // written. The signal comes as soon as the listening line is read.
    const server = await startServerProcess([
      ...partitionArgs(),
      '--shards-count',
      '4',
      '--log-level',
      'info',
    ]);
    server.process.stdout!.destroy();
    server.process.stderr!.destroy();
    server.process.kill('SIGTERM');
    const outcome = await Promise.race([
      server.exited,
      new Promise((resolve) => setTimeout(() => resolve('still running after 10 s'), 10_000)),
    ]);
    if (outcome === 'still running after 10 s') server.process.kill('SIGKILL');
    expect(outcome).to.equal(0);
  });

  it('on SIGTERM: ends health Watch streams after NOT_SERVING and exits without waiting out the grace', async function () {
    // Waiting out the 60 s grace would fail this test by its timeout.
    this.timeout(30_000);
    const server = await startServerProcess([
      ...partitionArgs(),
      '--shards-count',
      '4',
      '--grace-ms',
      '60000',
    ]);
    const health = connectHealth(server.address);
    const watch = health.watch('shameless.v1.Store');
    const statuses: string[] = [];
    const ended = new Promise<string>((resolve) => {
      watch.on('data', (response: { status: string }) => statuses.push(response.status));
      watch.on('end', () => resolve('end'));
      watch.on('error', (error) => resolve(`error ${(error as { code?: number }).code}`));
    });
    while (statuses.length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    server.process.kill('SIGTERM');
    expect(await ended).to.equal('end');
    expect(statuses).to.deep.equal(['SERVING', 'NOT_SERVING']);
    expect(await server.exited).to.equal(0);
    health.close();
  });
});
