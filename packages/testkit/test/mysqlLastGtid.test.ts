// What mysql2 hands back about each commit's GTID once a session tracks `last_gtid`: the
// behaviour a server's consistency tokens are built on (issue 53), pinned against a real primary
// and replica.
//
// - mysql2 asks for session tracking (CLIENT_SESSION_TRACK) in its default flags. After
//   `SET SESSION session_track_system_variables='last_gtid'`, an OK packet that ends a
//   transaction which wrote to the binary log carries the new GTID:
//   `header.stateChanges.systemVariables.last_gtid` (`<domain>-<server_id>-<sequence>`), with
//   SERVER_SESSION_STATE_CHANGED (0x4000) set in `header.serverStatus`.
// - Autocommit: each writing statement's own ResultSetHeader carries it. In a transaction: only
//   COMMIT's does; the statements inside carry no `stateChanges` at all.
// - A multi-statement query (`multipleStatements: true`) such as `BEGIN; INSERT …; INSERT …;
//   COMMIT`: the callback API's `rows` is an array with one ResultSetHeader per statement, in
//   order (`fields` is an array of `undefined`), and only the last one, COMMIT's, has
//   `stateChanges`. The promise API resolves `[rows, fields]` with the same `rows`.
// - No GTID, so no `stateChanges`: ROLLBACK, a COMMIT of a transaction that only read, and (ROW
//   binary log format) a COMMIT of a transaction whose statements changed no row.
import { expect } from 'chai';
import mysql, { type ResultSetHeader } from 'mysql2';
import { createConnection, type Connection, type RowDataPacket } from 'mysql2/promise';
import { startReplicatedMariaDb, type ReplicatedMariaDb } from '../src/index.js';

const SERVER_SESSION_STATE_CHANGED = 0x4000;

interface TrackedHeader extends ResultSetHeader {
  stateChanges?: { systemVariables?: Record<string, string> };
}

function lastGtid(header: unknown): string | undefined {
  return (header as TrackedHeader).stateChanges?.systemVariables?.last_gtid;
}

describe('mysql2 and the last_gtid session tracker', () => {
  let set: ReplicatedMariaDb;
  let session: Connection;
  let primaryServerId: number;

  async function binlogPosition(): Promise<string> {
    const [[row]] = await session.query<RowDataPacket[]>('SELECT @@gtid_binlog_pos AS gtids');
    return String(row?.gtids);
  }

  before(async () => {
    set = await startReplicatedMariaDb({ replicas: 1, gtidDomainId: 9 });
    session = await createConnection({ uri: set.primary.url, multipleStatements: true });
    await session.query('CREATE DATABASE tracked');
    await session.query('CREATE TABLE tracked.t (id INT PRIMARY KEY)');
    await session.query("SET SESSION session_track_system_variables = 'last_gtid'");
    const [[row]] = await session.query<RowDataPacket[]>('SELECT @@server_id AS id');
    primaryServerId = Number(row?.id);
  });

  after(async () => {
    await session?.end();
    await set?.destroy();
  });

  it('an autocommitted write: its own header carries the GTID it committed', async () => {
    const [header] = await session.query<ResultSetHeader>('INSERT INTO tracked.t VALUES (1)');
    const gtid = lastGtid(header);
    expect(gtid).to.match(new RegExp(`^9-${primaryServerId}-\\d+$`));
    expect(gtid).to.equal(await binlogPosition());
    expect(header.serverStatus & SERVER_SESSION_STATE_CHANGED).to.equal(
      SERVER_SESSION_STATE_CHANGED,
    );
  });

  it('a transaction in separate queries: only COMMIT carries the GTID', async () => {
    const [begin] = await session.query<ResultSetHeader>('BEGIN');
    const [insert] = await session.query<ResultSetHeader>('INSERT INTO tracked.t VALUES (2)');
    const [commit] = await session.query<ResultSetHeader>('COMMIT');
    expect(begin).to.not.have.property('stateChanges');
    expect(insert).to.not.have.property('stateChanges');
    expect(lastGtid(commit)).to.equal(await binlogPosition());
  });

  it('one multi-statement transaction, callback API: the last of its headers carries it', async () => {
    const plain = mysql.createConnection({ uri: set.primary.url, multipleStatements: true });
    try {
      const sql = [
        "SET SESSION session_track_system_variables = 'last_gtid'",
        'BEGIN',
        'INSERT INTO tracked.t VALUES (3)',
        'INSERT INTO tracked.t VALUES (4)',
        'COMMIT',
      ].join('; ');
      const { rows, fields } = await new Promise<{ rows: unknown; fields: unknown }>(
        (resolve, reject) =>
          plain.query(sql, (error, rows, fields) =>
            error ? reject(error) : resolve({ rows, fields }),
          ),
      );

      expect(rows).to.be.an('array').with.length(5);
      const headers = rows as ResultSetHeader[];
      expect(headers.map((header) => header.constructor.name)).to.deep.equal(
        Array(5).fill('ResultSetHeader'),
      );
      expect(headers.map((header) => header.affectedRows)).to.deep.equal([0, 0, 1, 1, 0]);
      expect(headers.slice(0, 4).map(lastGtid)).to.deep.equal(Array(4).fill(undefined));
      expect(lastGtid(headers[4])).to.equal(await binlogPosition());
      expect(fields).to.deep.equal(Array(5).fill(undefined));
    } finally {
      await new Promise<void>((resolve) => plain.end(() => resolve()));
    }
  });

  it('autocommitted statements in one query: each header carries its own GTID', async () => {
    const before = await binlogPosition();
    const [headers] = await session.query<ResultSetHeader[]>(
      'INSERT INTO tracked.t VALUES (5); INSERT INTO tracked.t VALUES (6)',
    );
    const sequence = (gtid: string | undefined) => Number(gtid?.split('-')[2]);
    expect(headers.map(lastGtid).map(sequence)).to.deep.equal([
      sequence(before) + 1,
      sequence(before) + 2,
    ]);
  });

  it('no GTID after a rollback, a read-only transaction or a write that changed nothing', async () => {
    const before = await binlogPosition();
    for (const sql of [
      'BEGIN; INSERT INTO tracked.t VALUES (7); ROLLBACK',
      'BEGIN; SELECT * FROM tracked.t; COMMIT',
      'BEGIN; UPDATE tracked.t SET id = id WHERE id = 999; COMMIT',
      'BEGIN; DELETE FROM tracked.t WHERE id = 999; COMMIT',
    ]) {
      const [results] = await session.query<ResultSetHeader[]>(sql);
      expect(results.map(lastGtid), sql).to.deep.equal([undefined, undefined, undefined]);
    }
    expect(await binlogPosition()).to.equal(before);
  });

  it('the GTID a commit returned is what MASTER_GTID_WAIT on the replica waits for', async () => {
    const [replica] = set.replicas;
    const [header] = await session.query<ResultSetHeader>('INSERT INTO tracked.t VALUES (8)');
    const onReplica = await createConnection(replica!.url);
    try {
      const [[waited]] = await onReplica.query<RowDataPacket[]>(
        'SELECT MASTER_GTID_WAIT(?, 10) AS outcome',
        [lastGtid(header)],
      );
      expect(waited?.outcome).to.equal(0);
      const [rows] = await onReplica.query<RowDataPacket[]>(
        'SELECT id FROM tracked.t WHERE id = 8',
      );
      expect(rows).to.deep.equal([{ id: 8 }]);
    } finally {
      await onReplica.end();
    }
  });
});
