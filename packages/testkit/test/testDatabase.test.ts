import { expect } from 'chai';
import { createConnection, type RowDataPacket } from 'mysql2/promise';
import { createTestDatabases, mysqlUrlFromEnv, testMysqlUrl } from '../src/index.js';

async function existingDatabases(names: string[]): Promise<string[]> {
  const connection = await createConnection(await testMysqlUrl());
  try {
    const [rows] = await connection.query<RowDataPacket[]>(
      'SELECT SCHEMA_NAME AS name FROM information_schema.SCHEMATA WHERE SCHEMA_NAME IN (?)',
      [names],
    );
    return rows.map((row) => String(row.name)).sort();
  } finally {
    await connection.end();
  }
}

describe('mysqlUrlFromEnv', () => {
  const original = process.env.MYSQL_URL;
  afterEach(() => {
    if (original === undefined) {
      delete process.env.MYSQL_URL;
    } else {
      process.env.MYSQL_URL = original;
    }
  });

  it('prefers MYSQL_URL and falls back to the local server', () => {
    process.env.MYSQL_URL = 'mysql://tester@db.example:3307';
    expect(mysqlUrlFromEnv()).to.equal('mysql://tester@db.example:3307');
    delete process.env.MYSQL_URL;
    expect(mysqlUrlFromEnv()).to.equal('mysql://root@127.0.0.1:3306');
  });
});

describe('createTestDatabases', () => {
  it('creates distinct databases reachable through their URLs, and drops them', async () => {
    const databases = await createTestDatabases(3, { prefix: 'testkit_selftest' });
    try {
      expect(new Set(databases.names).size).to.equal(3);
      for (const name of databases.names) {
        expect(name).to.match(/^testkit_selftest_\d+_[0-9a-f]{8}_\d$/);
        expect(name.length).to.be.at.most(64);
      }
      expect(await existingDatabases(databases.names)).to.deep.equal([...databases.names].sort());

      for (const [index, url] of databases.urls.entries()) {
        const connection = await createConnection(url);
        try {
          const [rows] = await connection.query<RowDataPacket[]>('SELECT DATABASE() AS current');
          expect(rows[0]?.current).to.equal(databases.names[index]);
        } finally {
          await connection.end();
        }
      }
    } finally {
      await databases.drop();
    }

    expect(await existingDatabases(databases.names)).to.deep.equal([]);
    await databases.drop(); // a second drop is harmless
  });

  it('replaces a database already present in the base URL', async () => {
    const serverUrl = await testMysqlUrl();
    const databases = await createTestDatabases(1, {
      baseUrl: `${serverUrl}/not_a_database?connectTimeout=5000`,
    });
    try {
      const url = new URL(databases.urls[0] ?? '');
      expect(url.pathname).to.equal(`/${databases.names[0]}`);
      expect(url.searchParams.get('connectTimeout')).to.equal('5000');
      expect(url.host).to.equal(new URL(serverUrl).host);
    } finally {
      await databases.drop();
    }
  });

  it('rejects prefixes that would need more than backtick quoting', async () => {
    for (const prefix of ['bad`name', 'semi;colon', 'space d', '']) {
      const error = await createTestDatabases(1, { prefix }).catch((caught: unknown) => caught);
      expect(error, prefix)
        .to.be.instanceOf(Error)
        .with.property('message')
        .match(/invalid/);
    }
  });

  it('rejects names longer than MySQL allows', async () => {
    const error = await createTestDatabases(1, { prefix: 'x'.repeat(50) }).catch(
      (caught: unknown) => caught,
    );
    expect(error)
      .to.be.instanceOf(Error)
      .with.property('message')
      .match(/longer than 64/);
  });

  it('rejects a count that is not a positive integer', async () => {
    for (const count of [0, -1, 1.5]) {
      const error = await createTestDatabases(count).catch((caught: unknown) => caught);
      expect(error, String(count)).to.be.instanceOf(RangeError);
    }
  });
});
