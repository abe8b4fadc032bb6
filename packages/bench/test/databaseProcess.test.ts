// MariaDB's CPU is charged to the right process only if the bench finds the server it talks to:
// asked of the real server, its pid file must name a running mariadbd (or mysqld), and a server
// on another host must not be mistaken for a local one.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { mysqlUrlFromEnv } from '@shameless/testkit';
import mysql from 'mysql2/promise';
import { serverConnection } from '../src/subjects/benchStore.js';
import { type DatabaseIdentity, localDatabasePid } from '../src/measure/databaseProcess.js';

async function identity(): Promise<DatabaseIdentity> {
  const connection = await mysql.createConnection(serverConnection(mysqlUrlFromEnv()));
  try {
    const [rows] = await connection.query(
      'SELECT @@hostname AS hostname, @@pid_file AS pid_file, @@datadir AS datadir',
    );
    const row = (rows as Record<string, string>[])[0]!;
    return { hostname: row.hostname!, pidFile: row.pid_file!, dataDir: row.datadir! };
  } finally {
    await connection.end();
  }
}

describe('localDatabasePid', () => {
  it("finds the running server's process through its own pid file", async function () {
    const server = await identity();
    // MySQL on another host (MYSQL_URL) has no local process to find.
    if (server.hostname !== hostname()) this.skip();
    const found = await localDatabasePid(server);
    assert.ok('pid' in found, `found: ${JSON.stringify(found)}`);
    assert.match(readFileSync(`/proc/${found.pid}/comm`, 'utf8').trim(), /^(mariadbd|mysqld)$/);
  });

  it('does not look for a server that runs on another host', async () => {
    const found = await localDatabasePid({ ...(await identity()), hostname: 'elsewhere.invalid' });
    assert.deepEqual(found, { unknown: 'MySQL runs on elsewhere.invalid, not this machine' });
  });

  it('says why when the pid file names no database server', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'bench-pid-'));
    try {
      await writeFile(join(directory, 'node.pid'), `${process.pid}\n`);
      const found = await localDatabasePid({
        hostname: hostname(),
        pidFile: 'node.pid',
        dataDir: directory,
      });
      assert.deepEqual(found, {
        unknown: `its pid file names ${process.pid}, which is not a running mariadbd or mysqld`,
      });
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });
});
