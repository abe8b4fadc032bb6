// The choice of MySQL server for tests: MYSQL_URL, else a testcontainers MySQL when a Docker
// engine is reachable, else the local server; logged once. Here (no Docker) the real probe
// takes the fallback path.
import { expect } from 'chai';
import { createConnection } from 'mysql2/promise';
import { chooseTestMysql, LOCAL_MYSQL_URL, testMysqlUrl } from '../src/index.js';

describe('the MySQL server for tests', () => {
  it('MYSQL_URL wins, without asking Docker; the log line hides the password', async () => {
    const lines: string[] = [];
    let probed = false;
    const choice = await chooseTestMysql({
      env: { MYSQL_URL: 'mysql://tester:secret@db.example:3307' },
      startContainer: async () => {
        probed = true;
        return 'mysql://root@container:3306';
      },
      log: (line) => lines.push(line),
    });
    expect(choice).to.include({
      url: 'mysql://tester:secret@db.example:3307',
      source: 'MYSQL_URL',
    });
    expect(probed).to.equal(false);
    expect(lines).to.deep.equal([
      'testkit: MySQL for tests: mysql://tester:***@db.example:3307 (MYSQL_URL: set)',
    ]);
  });

  it('uses the container when one starts', async () => {
    const lines: string[] = [];
    const choice = await chooseTestMysql({
      env: {},
      startContainer: async () => 'mysql://root:pw@127.0.0.1:32768',
      log: (line) => lines.push(line),
    });
    expect(choice).to.include({ url: 'mysql://root:pw@127.0.0.1:32768', source: 'testcontainers' });
    expect(lines[0]).to.match(
      /mysql:\/\/root:\*\*\*@127\.0\.0\.1:32768 \(testcontainers: a Docker engine is reachable; mysql:8\.0 started\)/,
    );
  });

  it('with no Docker engine reachable, falls back to the local server and says why', async () => {
    const original = process.env.DOCKER_HOST;
    // Nothing listens there, so testcontainers finds no engine even on a machine that has one.
    process.env.DOCKER_HOST = 'unix:///nonexistent/docker.sock';
    const lines: string[] = [];
    try {
      const choice = await chooseTestMysql({ env: {}, log: (line) => lines.push(line) });
      expect(choice).to.include({ url: LOCAL_MYSQL_URL, source: 'local' });
      expect(lines).to.have.length(1);
      expect(lines[0]).to.match(
        /^testkit: MySQL for tests: mysql:\/\/root@127\.0\.0\.1:3306 \(local: no MySQL container: .+\)$/,
      );
    } finally {
      if (original === undefined) delete process.env.DOCKER_HOST;
      else process.env.DOCKER_HOST = original;
    }
  });

  it('is chosen once per process, and the server it names takes connections', async () => {
    const first = await testMysqlUrl();
    expect(await testMysqlUrl()).to.equal(first);
    const connection = await createConnection(first);
    try {
      const [rows] = await connection.query('SELECT 1 AS one');
      expect(rows).to.deep.equal([{ one: 1 }]);
    } finally {
      await connection.end();
    }
  });
});
