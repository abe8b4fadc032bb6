import { existsSync } from 'node:fs';
import { expect } from 'chai';
import { createConnection, type RowDataPacket } from 'mysql2/promise';
import {
  startReplicatedMariaDb,
  type MariaDbServer,
  type ReplicatedMariaDb,
} from '../src/index.js';

async function query<T extends RowDataPacket>(
  url: string,
  sql: string,
  values: unknown[] = [],
): Promise<T[]> {
  const connection = await createConnection(url);
  try {
    const [rows] = await connection.query<T[]>(sql, values);
    return rows;
  } finally {
    await connection.end();
  }
}

async function failure(promise: Promise<unknown>): Promise<Error> {
  return promise.then(
    () => expect.fail('expected a failure'),
    (error: unknown) => {
      expect(error).to.be.instanceOf(Error);
      return error as Error;
    },
  );
}

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Count and sums of a table, equal on two servers only when they hold the same rows. */
async function fingerprint(url: string, table: string): Promise<RowDataPacket | undefined> {
  const [row] = await query(
    url,
    `SELECT COUNT(*) AS n, SUM(id) AS ids, SUM(v) AS vs FROM ${table}`,
  );
  return row;
}

describe('startReplicatedMariaDb', () => {
  let set: ReplicatedMariaDb;

  before(async () => {
    set = await startReplicatedMariaDb({ replicas: 2, gtidDomainId: 5 });
  });

  after(async () => {
    await set?.destroy();
  });

  it('replicates databases, tables and rows created on the primary after setup', async () => {
    await query(set.primary.url, 'CREATE DATABASE created_later');
    await query(set.primary.url, 'CREATE TABLE created_later.t (id INT PRIMARY KEY, v INT)');
    await query(set.primary.url, 'INSERT INTO created_later.t VALUES (1, 10), (2, 20)');

    for (const replica of set.replicas) {
      await set.waitForReplicaToCatchUp(replica);
      expect(
        await query(replica.url, 'SELECT id, v FROM created_later.t ORDER BY id'),
      ).to.deep.equal([
        { id: 1, v: 10 },
        { id: 2, v: 20 },
      ]);
    }
  });

  it('stamps GTIDs with the chosen domain; every server has its own server_id', async () => {
    await query(set.primary.url, 'CREATE DATABASE IF NOT EXISTS stamped');
    const [position] = await query(set.primary.url, 'SELECT @@gtid_binlog_pos AS gtids');

    const ids = await Promise.all(
      [set.primary, ...set.replicas].map(async (server) => {
        const [row] = await query(server.url, 'SELECT @@server_id AS id');
        return row?.id as number;
      }),
    );
    expect(new Set(ids).size).to.equal(3);
    const [primaryId] = ids;
    expect(position?.gtids).to.match(new RegExp(`^5-${primaryId}-\\d+$`));
  });

  it('refuses writes on a replica, from root too', async () => {
    await query(set.primary.url, 'CREATE DATABASE IF NOT EXISTS refused');
    await query(set.primary.url, 'CREATE TABLE IF NOT EXISTS refused.t (id INT PRIMARY KEY)');
    const [replica] = set.replicas;
    await set.waitForReplicaToCatchUp(replica!);

    for (const sql of ['INSERT INTO refused.t VALUES (1)', 'CREATE DATABASE not_on_a_replica']) {
      const error = await failure(query(replica!.url, sql));
      expect(error).to.have.property('code', 'ER_OPTION_PREVENTS_STATEMENT');
    }
    const [readOnly] = await query(replica!.url, 'SELECT @@read_only AS ro, CURRENT_USER() AS me');
    expect(readOnly).to.deep.equal({ ro: 1, me: 'root@127.0.0.1' });
  });

  it('holds a stopped replica back, names why when waited on, and lets it catch up', async () => {
    const [stopped, running] = set.replicas as [MariaDbServer, MariaDbServer];
    await query(set.primary.url, 'CREATE DATABASE held');
    await query(set.primary.url, 'CREATE TABLE held.t (id INT PRIMARY KEY, v INT)');
    await set.waitForReplicaToCatchUp(stopped);

    await set.stopReplication(stopped);
    expect(await set.replicaStatus(stopped)).to.include({
      ioThread: 'No',
      sqlThread: 'No',
      replicating: false,
      secondsBehindPrimary: null,
    });
    await query(set.primary.url, 'INSERT INTO held.t VALUES (1, 1)');

    const error = await failure(set.waitForReplicaToCatchUp(stopped, 300));
    expect(error.message).to.match(/did not reach the primary's position 5-\d+-\d+ within 300 ms/);
    expect(error.message).to.include('Slave_SQL_Running No');
    expect(error.message).to.include(`last 15 lines of ${stopped.logFile}`);
    expect(await query(stopped.url, 'SELECT id FROM held.t')).to.deep.equal([]);
    await set.waitForReplicaToCatchUp(running);
    expect(await query(running.url, 'SELECT id FROM held.t')).to.deep.equal([{ id: 1 }]);

    await set.startReplication(stopped);
    await set.waitForReplicaToCatchUp(stopped);
    expect(await query(stopped.url, 'SELECT id FROM held.t')).to.deep.equal([{ id: 1 }]);
    expect(await set.replicaStatus(stopped)).to.include({ replicating: true });
  });

  it('resumes replication after a replica is killed while the primary writes', async () => {
    const [replica] = set.replicas;
    await query(set.primary.url, 'CREATE DATABASE crashed');
    await query(
      set.primary.url,
      'CREATE TABLE crashed.t (id INT AUTO_INCREMENT PRIMARY KEY, v INT)',
    );
    const primary = await createConnection(set.primary.url);
    let writes = 0;
    let lastWrite = Infinity;
    try {
      // Rows go on being written before, during and after the crash.
      const writer = (async () => {
        for (; writes < lastWrite; writes++) {
          await primary.query('INSERT INTO crashed.t (v) VALUES (?)', [writes]);
        }
      })();
      await until(() => writes >= 300);
      await replica!.kill();
      lastWrite = writes + 300;
      await writer;
    } finally {
      await primary.end();
    }

    await replica!.start();
    await set.waitForReplicaToCatchUp(replica!);
    expect(await fingerprint(replica!.url, 'crashed.t')).to.deep.equal(
      await fingerprint(set.primary.url, 'crashed.t'),
    );
    expect(await fingerprint(replica!.url, 'crashed.t')).to.have.property('n', writes);
    expect(await set.replicaStatus(replica!)).to.include({ replicating: true, lastSqlError: '' });
  });

  it('starts replicating again on restart, even after stopReplication', async () => {
    const [, replica] = set.replicas;
    await set.stopReplication(replica!);
    await replica!.stop();
    await replica!.start();
    await query(set.primary.url, 'CREATE DATABASE after_restart');
    await set.waitForReplicaToCatchUp(replica!);
    expect(await query(replica!.url, "SHOW DATABASES LIKE 'after_restart'")).to.have.length(1);
  });

  it('follows a primary that was killed and started again', async () => {
    await set.primary.kill();
    await set.primary.start();
    await query(set.primary.url, 'CREATE DATABASE after_primary_crash');
    for (const replica of set.replicas) {
      // Replicas retry their connection every second; the wait allows for a busy machine.
      await set.waitForReplicaToCatchUp(replica);
      expect(await query(replica.url, "SHOW DATABASES LIKE 'after_primary_crash'")).to.have.length(
        1,
      );
    }
  });

  it('refuses a server that is not one of its replicas', async () => {
    const error = await failure(set.waitForReplicaToCatchUp(set.primary));
    expect(error.message).to.match(/is not one of this set's replicas/);
  });
});

describe('startReplicatedMariaDb: lifetime', () => {
  it('destroys every server and its directory', async () => {
    const set = await startReplicatedMariaDb({ replicas: 1 });
    const servers = [set.primary, ...set.replicas];
    await set.destroy();
    for (const server of servers) {
      expect(server.running).to.equal(false);
      expect(existsSync(server.dataDir), `${server.dataDir} is left over`).to.equal(false);
    }
    await set.destroy(); // a second destroy is harmless
  });

  it('rejects a replica count that is not a whole number', async () => {
    const error = await failure(startReplicatedMariaDb({ replicas: 1.5 }));
    expect(error).to.be.instanceOf(RangeError);
  });
});
