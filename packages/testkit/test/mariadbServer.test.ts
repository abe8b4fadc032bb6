import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { createConnection, type RowDataPacket } from 'mysql2/promise';
import { createTestDatabases, startMariaDbServer, type MariaDbServer } from '../src/index.js';

async function query<T extends RowDataPacket>(url: string, sql: string): Promise<T[]> {
  const connection = await createConnection(url);
  try {
    const [rows] = await connection.query<T[]>(sql);
    return rows;
  } finally {
    await connection.end();
  }
}

async function connectionError(url: string): Promise<unknown> {
  return createConnection(url).then(
    async (connection) => {
      await connection.end();
      return undefined;
    },
    (error: unknown) => error,
  );
}

describe('startMariaDbServer', () => {
  const servers: MariaDbServer[] = [];

  after(async () => {
    await Promise.all(servers.map((server) => server.destroy()));
  });

  it('keeps committed rows across a crash and a clean restart, then cleans up', async () => {
    const server = await startMariaDbServer();
    servers.push(server);
    expect(server.url).to.equal(`mysql://root@127.0.0.1:${server.port}`);
    expect(server.running).to.equal(true);

    const [database] = (await createTestDatabases(1, { baseUrl: server.url })).urls;
    const databaseUrl = database ?? '';
    await query(databaseUrl, 'CREATE TABLE cells (id INT PRIMARY KEY, body VARCHAR(20))');
    await query(databaseUrl, "INSERT INTO cells VALUES (1, 'survives')");

    await server.kill();
    expect(server.running).to.equal(false);
    expect(await connectionError(server.url)).to.have.property('code', 'ECONNREFUSED');

    await server.start();
    expect(await query(databaseUrl, 'SELECT body FROM cells')).to.deep.equal([
      { body: 'survives' },
    ]);

    await query(databaseUrl, "INSERT INTO cells VALUES (2, 'clean stop')");
    await server.stop();
    expect(server.running).to.equal(false);
    await server.start();
    expect(await query(databaseUrl, 'SELECT id FROM cells ORDER BY id')).to.deep.equal([
      { id: 1 },
      { id: 2 },
    ]);

    await server.destroy();
    expect(existsSync(server.dataDir), 'the data directory is left over').to.equal(false);
    expect(await connectionError(server.url)).to.have.property('code', 'ECONNREFUSED');
    await server.destroy(); // a second destroy is harmless
    await server.start().then(
      () => expect.fail('a destroyed server started'),
      (error: unknown) => expect(error).to.be.instanceOf(Error),
    );
  });

  it('pauses (the server answers nothing, its connections open) and resumes', async () => {
    const server = await startMariaDbServer();
    servers.push(server);
    const connection = await createConnection(server.url);
    try {
      await server.pause();
      const answered = connection.query('SELECT 1 AS one');
      const late = Symbol('no answer');
      const first = await Promise.race([
        answered,
        new Promise((resolve) => setTimeout(resolve, 500, late)),
      ]);
      expect(first, 'an answer while paused').to.equal(late);
      server.resume();
      const [rows] = await answered;
      expect(rows).to.deep.equal([{ one: 1 }]);
    } finally {
      server.resume();
      await connection.end();
    }
  });

  it('runs servers side by side, each with its own data and root login', async () => {
    const [first, second] = await Promise.all([startMariaDbServer(), startMariaDbServer()]);
    servers.push(first, second);

    expect(first.port).to.not.equal(second.port);
    expect(first.dataDir).to.not.equal(second.dataDir);
    await query(first.url, 'CREATE DATABASE only_on_first');
    const onSecond = await query(second.url, "SHOW DATABASES LIKE 'only_on_first'");
    expect(onSecond).to.deep.equal([]);
    const [user] = await query(first.url, 'SELECT CURRENT_USER() AS user');
    expect(user?.user).to.match(/^root@/);
    // Never the machine's /tmp: a starting mariadbd deletes every #sql* file in its tmpdir,
    // the live temporary tables of the machine's own server among them.
    for (const server of [first, second]) {
      const [row] = await query(server.url, 'SELECT @@tmpdir AS tmpdir');
      expect(String(row?.tmpdir)).to.equal(join(dirname(server.dataDir), 'tmp'));
    }
  });

  it('refuses to start twice, or on a port another MariaDB holds', async () => {
    const server = await startMariaDbServer();
    servers.push(server);

    const error = await server.start().catch((caught: unknown) => caught);
    expect(error)
      .to.be.instanceOf(Error)
      .with.property('message')
      .match(/already running/);
    expect(server.running).to.equal(true);

    // The other server accepts root logins too, so readiness must not be judged by that alone.
    const clash = await startMariaDbServer({ port: server.port }).catch(
      (caught: unknown) => caught,
    );
    expect(clash)
      .to.be.instanceOf(Error)
      .with.property('message')
      .match(/Address already in use/);
  });

  it('passes firstStartArgs on the first start only', async () => {
    const server = await startMariaDbServer({
      extraArgs: ['--max-connections=41'],
      firstStartArgs: ['--max-connections=37'],
    });
    servers.push(server);
    const maxConnections = async () =>
      (await query(server.url, 'SELECT @@max_connections AS n'))[0]?.n;

    expect(await maxConnections()).to.equal(37);
    await server.stop();
    await server.start();
    expect(await maxConnections()).to.equal(41);
  });

  it('runs as the user it is given, which owns its files', async function () {
    if (process.getuid?.() !== 0) {
      this.skip(); // only root can run mariadbd as another user
    }
    const mysqlUid = Number((await promisify(execFile)('id', ['-u', 'mysql'])).stdout);
    const server = await startMariaDbServer({ user: 'mysql' });
    servers.push(server);

    const pid = (await readFile(join(dirname(server.dataDir), 'mysqld.pid'), 'utf8')).trim();
    expect((await stat(`/proc/${pid}`)).uid).to.equal(mysqlUid);
    expect((await stat(server.dataDir)).uid).to.equal(mysqlUid);
    expect((await stat(join(server.dataDir, 'ibdata1'))).uid).to.equal(mysqlUid);
    expect(await query(server.url, 'SELECT 1 AS up')).to.deep.equal([{ up: 1 }]);
  });

  it('reports the tail of the server log when mariadbd cannot start', async () => {
    const error = await startMariaDbServer({ extraArgs: ['--no-such-option-for-testkit'] }).catch(
      (caught: unknown) => caught,
    );

    expect(error).to.be.instanceOf(Error);
    const message = (error as Error).message;
    expect(message).to.match(/mariadbd exited with code \d+ before accepting connections/);
    expect(message).to.include('no-such-option-for-testkit');
  });
});
