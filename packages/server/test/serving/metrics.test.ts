// `serve --metrics-listen` and the access log, through the real binary over a real MariaDB:
// /metrics counts calls by method and code, times them, gauges streams (Pipelines too), pools,
// write groups and the version cache; at debug level each call logs one line without its
// metadata.
import { Metadata } from '@grpc/grpc-js';
import { createTestDatabases, type TestDatabases } from '@shameless/testkit';
import { expect } from 'chai';
import { collect, connectStore, rejection, type StoreApi } from '../support/grpcCalls.js';
import {
  type ServerProcess,
  runServerExpectingFailure,
  startServerProcess,
} from '../support/serverProcess.js';
import { RawPipeline } from '../support/pipelineClient.js';
import { RATE_MODEL, pack, putRate } from '../support/storeFixture.js';
import { GroupMember } from '../support/groupMember.js';

const SECRET = 'metrics-test-secret-token';

/** The value of one sample (`name{labels} value`) in a scrape, or undefined when absent. */
function sample(scrape: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of scrape.split('\n')) {
    const match = /^([a-z_]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const found = Object.fromEntries(
      [...(match[2] ?? '').matchAll(/([a-z_]+)="([^"]*)"/g)].map((pair) => [pair[1], pair[2]]),
    );
    if (Object.entries(labels).every(([key, value]) => found[key] === value))
      return Number(match[3]);
  }
  return undefined;
}

describe('serve --metrics-listen and the access log', function () {
  let databases: TestDatabases;
  let server: ServerProcess;
  let api: StoreApi;
  let metricsUrl: string;
  const scrape = async () => {
    const response = await fetch(metricsUrl);
    expect(response.status).to.equal(200);
    expect(response.headers.get('content-type')).to.match(/^text\/plain/);
    return response.text();
  };

  before(async () => {
    databases = await createTestDatabases(1);
    server = await startServerProcess([
      '--partition',
      databases.urls[0]!,
      '--shards-count',
      '4',
      '--metrics-listen',
      '127.0.0.1:0',
      '--log-level',
      'debug',
    ]);
    // The log line comes through pino's own buffer: it may trail the "listening" line.
    let url: RegExpExecArray | null = null;
    for (let i = 0; i < 50 && !url; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      url = /"url":"(http:\/\/[^"]+\/metrics)"/.exec(server.output());
    }
    expect(url, server.output()).not.to.equal(null);
    metricsUrl = url![1]!;
    api = connectStore(server.address);
    await api.defineModel({ model: RATE_MODEL });
  });
  after(async () => {
    api?.close();
    await server?.kill();
    await databases?.drop();
  });

  it('counts calls by method and status code, with their latency', async () => {
    const before = await scrape();
    const okBefore =
      sample(before, 'shameless_rpc_handled_total', { method: 'Put', code: 'OK' }) ?? 0;
    const values = {
      hotel_id: 7,
      room_type: 'double',
      check_in_date: '2026-01-01',
      gateway: 'g',
      discount_type: 'none',
    };
    await api.put({ model: 'rate', values: pack(values), requestId: 'metrics-1' });
    await api.put({ model: 'rate', values: pack(values), requestId: 'metrics-2' });
    await rejection(api.getCell({ model: 'nope', uuid: 'u', cell: 'base' }));

    const after = await scrape();
    expect(sample(after, 'shameless_rpc_handled_total', { method: 'Put', code: 'OK' })).to.equal(
      okBefore + 2,
    );
    expect(
      sample(after, 'shameless_rpc_handled_total', { method: 'GetCell', code: 'NOT_FOUND' }),
    ).to.equal(1);
    expect(sample(after, 'shameless_rpc_duration_seconds_count', { method: 'Put' })).to.equal(
      okBefore + 2,
    );
    expect(
      sample(after, 'shameless_rpc_duration_seconds_bucket', { method: 'Put', le: '+Inf' }),
    ).to.equal(okBefore + 2);
    expect(sample(after, 'shameless_rpc_in_flight', { method: 'Put' })).to.equal(0);
  });

  it('reads pool usage and write groups from the engine', async () => {
    const text = await scrape();
    expect(sample(text, 'shameless_pool_connection_limit', { partition: '0' })).to.equal(16);
    const inUse = sample(text, 'shameless_pool_connections', { partition: '0', state: 'in_use' });
    const idle = sample(text, 'shameless_pool_connections', { partition: '0', state: 'idle' });
    expect(inUse).to.be.a('number');
    expect(idle! + inUse!).to.be.greaterThan(0);
    expect(sample(text, 'shameless_pool_waiting', { partition: '0' })).to.equal(0);
    // The two puts above: one create, one update, each its own write transaction at least.
    const groups = sample(text, 'shameless_write_groups_total', { partition: '0' })!;
    expect(groups).to.be.at.least(2);
    expect(sample(text, 'shameless_write_group_size_count', { partition: '0' })).to.equal(groups);
    expect(
      sample(text, 'shameless_write_group_size_bucket', { partition: '0', le: '+Inf' }),
    ).to.equal(groups);
    expect(sample(text, 'shameless_writes_total', { partition: '0' })).to.be.at.least(2);
  });

  it('counts point reads run by a prepared statement, and the statements prepared', async () => {
    const uuid = await putRate(api, 9, '2026-03-01');
    // One after another, the reads reuse the pool's few open connections: the second time one
    // of them sends the text, it prepares it (a pool of 16 would have by the 32nd read).
    for (let i = 0; i < 40; i++) await api.getCell({ model: 'rate', uuid, cell: '' });
    const text = await scrape();
    const reads = (how: string) =>
      sample(text, 'shameless_prepared_reads_total', { partition: '0', how }) ?? 0;
    const statements = (outcome: string) =>
      sample(text, 'shameless_prepared_statements_total', { partition: '0', outcome }) ?? 0;
    expect(reads('handle')).to.be.at.least(1);
    expect(reads('text')).to.be.at.least(1);
    expect(reads('handle') + reads('text')).to.be.at.least(40);
    expect(statements('prepared')).to.be.at.least(1);
    expect(statements('refused')).to.equal(0);
  });

  it('gauges the version cache by part: the cells of records just created, and those written to', async () => {
    const bytes = (text: string, part: string) =>
      sample(text, 'shameless_version_cache_bytes', { part })!;
    const before = await scrape();
    await putRate(api, 8, '2026-02-01');
    const afterCreate = await scrape();
    // Its base version 0 and its meta cell at no version, each a key and an entry at least.
    expect(bytes(afterCreate, 'created') - bytes(before, 'created')).to.be.at.least(2 * 256);
    expect(bytes(afterCreate, 'written')).to.equal(bytes(before, 'written'));
    // The same values again: an update, which asks for base; meta stays where it was.
    await putRate(api, 8, '2026-02-01');
    const afterUpdate = await scrape();
    expect(bytes(afterUpdate, 'created'))
      .to.be.above(bytes(before, 'created'))
      .and.below(bytes(afterCreate, 'created'));
    expect(bytes(afterUpdate, 'written') - bytes(before, 'written')).to.be.at.least(256);
  });

  it('gauges open streams, and what admission holds, while a follow stream is open', async () => {
    const stream = api.client.each({
      model: 'rate',
      shards: [0],
      cursors: {},
      follow: true,
      batchSize: 0,
      heartbeatIntervalMs: 0,
    });
    stream.on('error', () => {}); // cancelled below
    await new Promise((resolve) => stream.once('data', resolve)); // the first heartbeat: it is open
    const open = await scrape();
    expect(sample(open, 'shameless_open_streams', { method: 'Each' })).to.equal(1);
    // Admission: the follower holds a stream slot and what it may buffer (832 KiB), beside the
    // defaults' bounds.
    expect(sample(open, 'shameless_admission_held', { kind: 'streams' })).to.equal(1);
    expect(sample(open, 'shameless_admission_held', { kind: 'bytes' })).to.be.at.least(832 * 1024);
    expect(sample(open, 'shameless_admission_limit', { kind: 'calls' })).to.equal(256);
    expect(sample(open, 'shameless_admission_limit', { kind: 'streams' })).to.equal(128);
    expect(sample(open, 'shameless_admission_limit', { kind: 'bytes' })).to.equal(
      256 * 1024 * 1024,
    );
    stream.cancel();
    let finished = open;
    const stillOpen = () => [
      sample(finished, 'shameless_open_streams', { method: 'Each' }),
      sample(finished, 'shameless_admission_held', { kind: 'streams' }),
    ];
    for (let i = 0; i < 50 && stillOpen().some((count) => count !== 0); i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      finished = await scrape();
    }
    expect(stillOpen()).to.deep.equal([0, 0]);
    expect(
      sample(finished, 'shameless_rpc_handled_total', { method: 'Each', code: 'CANCELLED' }),
    ).to.equal(1);
  });

  it('gauges open Pipeline streams, and counts their calls by method', async () => {
    const before = await scrape();
    const described =
      sample(before, 'shameless_rpc_handled_total', { method: 'DescribeStore', code: 'OK' }) ?? 0;
    const pipeline = new RawPipeline(api.client);
    await pipeline.call({ $case: 'describeStore', describeStore: {} });
    const during = await scrape();
    expect(sample(during, 'shameless_pipeline_streams', {})).to.equal(1);
    expect(
      sample(during, 'shameless_rpc_handled_total', { method: 'DescribeStore', code: 'OK' }),
    ).to.equal(described + 1);
    pipeline.end();
    await pipeline.status;
    expect(sample(await scrape(), 'shameless_pipeline_streams', {})).to.equal(0);
  });

  it("gauges a consumer group's members and lag per shard, and counts its deliveries", async () => {
    for (let hotel = 500; hotel < 540; hotel++) await putRate(api, hotel);
    const member = await GroupMember.join(api, { group: 'metered' });
    try {
      // Every cell of the store (earlier tests wrote some too), delivered and not acknowledged.
      const batches = await collect(
        api.client.each({
          model: 'rate',
          shards: [],
          cursors: {},
          follow: false,
          batchSize: 0,
          heartbeatIntervalMs: 0,
        }),
      );
      const cells = batches.reduce(
        (sum, message) =>
          sum + (message.event?.$case === 'batch' ? message.event.batch.cells.length : 0),
        0,
      );
      await member.until(() => member.deliveries.length === cells);
      // Nothing acknowledged: the lag of the shards is all their cells, once read (every 5 s).
      const labels = { model: 'rate', group: 'metered' };
      const lagOf = (scrape: string) =>
        ['0', '1', '2', '3'].reduce(
          (sum, shard) =>
            sum + (sample(scrape, 'shameless_consumer_group_lag', { ...labels, shard }) ?? 0),
          0,
        );
      let scraped = await scrape();
      for (let i = 0; i < 120 && lagOf(scraped) !== cells; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        scraped = await scrape();
      }
      expect(lagOf(scraped)).to.equal(cells);
      expect(sample(scraped, 'shameless_consumer_group_members', labels)).to.equal(1);
      expect(
        sample(scraped, 'shameless_consumer_group_deliveries_total', {
          ...labels,
          outcome: 'delivered',
        }),
      ).to.equal(cells);
      await member.leave();
      const left = await scrape();
      expect(sample(left, 'shameless_consumer_group_members', labels)).to.equal(0);
    } finally {
      if (!member.ended) member.cancel();
    }
  });

  it('serves only GET /metrics', async () => {
    const response = await fetch(metricsUrl.replace('/metrics', '/other'));
    expect(response.status).to.equal(404);
  });

  it('logs one debug line per call: method, code, ms and peer, never metadata', async () => {
    const metadata = new Metadata();
    metadata.set('authorization', `Bearer ${SECRET}`);
    await new Promise((resolve, reject) =>
      api.client.describeStore({}, metadata, (error, response) =>
        error ? reject(error) : resolve(response),
      ),
    );
    await collect(
      api.client.each({
        model: 'rate',
        shards: [1],
        cursors: {},
        follow: false,
        batchSize: 0,
        heartbeatIntervalMs: 0,
      }),
    );
    let calls: Record<string, unknown>[] = [];
    for (let i = 0; i < 50; i++) {
      calls = server
        .output()
        .split('\n')
        .filter((line) => line.includes('"msg":"call"'))
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      if (calls.some((call) => call.method === 'Each' && call.code === 'OK')) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const describe = calls.find((call) => call.method === 'DescribeStore');
    expect(describe).to.include({ level: 20, code: 'OK' });
    expect(describe!.ms).to.be.a('number');
    expect(describe!.peer).to.match(/127\.0\.0\.1/);
    expect(calls.find((call) => call.method === 'GetCell')).to.include({ code: 'NOT_FOUND' });
    expect(calls.some((call) => call.method === 'Each' && call.code === 'OK')).to.equal(true);
    expect(server.output()).not.to.include(SECRET);
  });

  it('refuses to start when the metrics port is taken, naming it', async () => {
    const taken = metricsUrl.replace(/^http:\/\/|\/metrics$/g, '');
    const result = await runServerExpectingFailure([
      '--partition',
      databases.urls[0]!,
      '--shards-count',
      '4',
      '--metrics-listen',
      taken,
    ]);
    expect(result.code).to.equal(1);
    expect(result.output).to.include(`--metrics-listen ${taken}: the port is in use`);
  });
});
