// `shameless serve --replica`, as an operator meets it (issue 53): a replica of a partition the
// store does not have, a malformed --replica, or a primary that does not log its commits is
// refused before serving, saying what to change, with the exit code of other configuration
// errors; a replica that does not answer at start is no reason to refuse: it is down, and its
// reads go to the primary.
import { expect } from 'chai';
import { Replica_State } from '@shameless/proto';
import {
  type MariaDbServer,
  type ReplicatedMariaDb,
  freePort,
  startMariaDbServer,
  startReplicatedMariaDb,
} from '@shameless/testkit';
import { connectStore } from '../support/grpcCalls.js';
import { RATE_MODEL, pack, requestId } from '../support/storeFixture.js';
import { runServerExpectingFailure, startServerProcess } from '../support/serverProcess.js';
import { callWith, sessionRead, waitForReplicaState, withDatabase } from './support.js';

describe('shameless serve --replica: what start refuses, and what it does not (issue 53)', function () {
  this.timeout(60_000);
  /** A primary with its binary log (and no replica). */
  let logged: ReplicatedMariaDb;
  /** A server without log-bin, as MariaDB starts by default. */
  let unlogged: MariaDbServer;

  before(async () => {
    [logged, unlogged] = await Promise.all([
      startReplicatedMariaDb({ replicas: 0 }),
      startMariaDbServer(),
    ]);
  });
  after(async () => {
    await logged?.destroy();
    await unlogged?.destroy();
  });

  it('a replica of a partition the store does not have: exit 1, naming it and the partitions there are', async () => {
    const primary = withDatabase(logged.primary.url, 'refused');
    const failed = await runServerExpectingFailure([
      '--partition',
      primary,
      '--replica',
      `1=${withDatabase(unlogged.url, 'refused')}`,
    ]);
    expect(failed.code).to.equal(1);
    expect(failed.output).to.match(
      /shameless: cannot start: replica 0 \(mysql:\/\/root@127\.0\.0\.1:\d+\/refused\) names partition 1; the store has partitions 0 to 0/,
    );
  });

  it('a malformed --replica: exit 2 before anything starts, with the form expected', async () => {
    for (const value of [
      'nonsense',
      '-1=mysql://root@127.0.0.1:3306/x',
      'x=mysql://a:secret@h/db',
    ]) {
      const failed = await runServerExpectingFailure([
        '--partition',
        withDatabase(logged.primary.url, 'refused'),
        '--replica',
        value,
      ]);
      expect(failed.code, value).to.equal(2);
      expect(failed.output, value).to.include('expected <partition index>=<mysql url>');
      expect(failed.output, 'no password shown').not.to.include('secret');
    }
  });

  it('a primary without log-bin: exit 1, saying to start it with log-bin or to drop --replica', async () => {
    const failed = await runServerExpectingFailure([
      '--partition',
      withDatabase(unlogged.url, 'unlogged'),
      '--replica',
      `0=${withDatabase(logged.primary.url, 'unlogged')}`,
    ]);
    expect(failed.code).to.equal(1);
    expect(failed.output).to.match(
      /cannot start: partition 0 \(127\.0\.0\.1:\d+\/unlogged\) has read replicas but does not log its commits \(log_bin is OFF\): start its MariaDB with log-bin/,
    );
  });

  it('a replica that does not answer at start: the server serves, the replica is down, its reads go to the primary', async () => {
    const nobody = await freePort();
    const server = await startServerProcess([
      '--partition',
      withDatabase(logged.primary.url, 'served'),
      '--replica',
      `0=mysql://root@127.0.0.1:${nobody}/served`,
    ]);
    const api = connectStore(server.address);
    try {
      await api.defineModel({ model: RATE_MODEL });
      const put = await callWith(api.client, api.client.put, {
        model: 'rate',
        values: pack({
          hotel_id: 1,
          room_type: 'double',
          check_in_date: '2026-01-01',
          gateway: 'g',
          discount_type: 'd',
        }),
        requestId: requestId(),
      });
      const token = put.trailers['shameless-session-token'];
      expect(token, 'a write still answers its token').to.match(/^1:0=\d+-\d+-\d+$/);
      await waitForReplicaState(api, Replica_State.STATE_DOWN, 10_000);
      for (const metadata of [sessionRead(token), sessionRead()]) {
        const read = await callWith(
          api.client,
          api.client.getCell,
          { model: 'rate', uuid: put.response.uuid, cell: 'base' },
          metadata,
        );
        expect(read.response.cell!.refKey).to.equal(0);
      }
    } finally {
      api.close();
      await server.kill();
    }
  });
});
