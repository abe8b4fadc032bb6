// TLS from the server to its partitions (ssl-mode, ssl-ca, ... in a partition URL): a MariaDB
// with TLS on and a user created REQUIRE SSL, whom MariaDB lets in over TLS only, so a server
// that serves as that user reached its partition over TLS. `shameless serve` runs as a user
// would start it; the refusals are its own start-up messages.
import { expect } from 'chai';
import {
  type MariaDbServer,
  type TestCertificates,
  makeTestCertificates,
  startMariaDbServer,
} from '@shameless/testkit';
import mysql from 'mysql2/promise';
import { sslOptionsOf } from '../../../src/engine/mysql/mysqlTls.js';
import { connectStore } from '../../support/grpcCalls.js';
import { runServerExpectingFailure, startServerProcess } from '../../support/serverProcess.js';

const USER = 'tls_only';
const PASSWORD = 'tls-s3cret';

describe('TLS to a partition', function () {
  this.timeout(120_000);
  let certs: TestCertificates;
  let database: MariaDbServer;
  let root: mysql.Connection;

  before(async () => {
    certs = await makeTestCertificates();
    database = await startMariaDbServer({
      extraArgs: [
        `--ssl-ca=${certs.paths.ca}`,
        `--ssl-cert=${certs.paths.serverCert}`,
        `--ssl-key=${certs.paths.serverKey}`,
      ],
    });
    root = await mysql.createConnection(database.url);
    await root.query(`CREATE USER '${USER}'@'%' IDENTIFIED BY '${PASSWORD}' REQUIRE SSL`);
    await root.query(`GRANT ALL ON *.* TO '${USER}'@'%'`);
  });
  after(async () => {
    await root?.end();
    await database?.destroy();
    await certs?.remove();
  });

  const partitionWith = (query: string) =>
    `mysql://${USER}:${PASSWORD}@127.0.0.1:${database.port}/tls_store${query ? `?${query}` : ''}`;
  const serveArgs = (query: string) => ['--partition', partitionWith(query), '--shards-count', '2'];
  const tlsAccepted = async () => {
    const [[row]] = await root.query<mysql.RowDataPacket[]>(
      "SHOW GLOBAL STATUS LIKE 'Ssl_accepts'",
    );
    return Number(row!.Value);
  };

  /** Serves with the URL parameters, answers DescribeStore, and stops. */
  async function servesWith(query: string): Promise<void> {
    const server = await startServerProcess(serveArgs(query));
    const api = connectStore(server.address);
    try {
      expect((await api.describeStore({})).shardsCount).to.equal(2);
    } finally {
      api.close();
      await server.kill('SIGTERM');
    }
  }

  it('serves over TLS checked against ssl-ca (ssl-mode verify-identity by default)', async () => {
    const before = await tlsAccepted();
    await servesWith(`ssl-ca=${certs.paths.ca}`);
    expect(await tlsAccepted(), 'TLS handshakes MariaDB accepted').to.be.greaterThan(before);
  });

  it('ssl-mode=required encrypts without checking the certificate, which no system CA signed', async () => {
    await servesWith('ssl-mode=required');
  });

  it('without TLS parameters the user is refused, and the message says what to add', async () => {
    const { code, output } = await runServerExpectingFailure(serveArgs(''));
    expect(code).to.not.equal(0);
    expect(output)
      .to.include(`refused user ${USER}`)
      .and.include('REQUIRE SSL also needs ssl-mode or ssl-ca in the URL');
    expect(output).to.not.include(PASSWORD);
  });

  it('a certificate that ssl-ca did not sign stops the start at once, naming ssl-ca', async () => {
    const { code, output } = await runServerExpectingFailure(
      serveArgs(`ssl-ca=${certs.paths.otherCa}`),
    );
    expect(code).to.not.equal(0);
    expect(output).to.include('partition 0 at 127.0.0.1').and.include('TLS failed');
    expect(output).to.include('Check ssl-mode and ssl-ca');
    // Not the message of a partition that stayed unreachable until the start-up timeout.
    expect(output).to.not.include('cannot reach partition');
    expect(output).to.not.include(PASSWORD);
  });

  it('an ssl-ca that cannot be read or holds no CA stops the start, naming the file', async () => {
    const missing = `${certs.dir}/missing.pem`;
    const cases: [string, string][] = [
      [`ssl-ca=${missing}`, `partition 0: ssl-ca: cannot read ${missing} (ENOENT)`],
      [
        `ssl-ca=${certs.paths.serverKey}`,
        `ssl-ca: ${certs.paths.serverKey} holds no PEM certificate`,
      ],
      [`ssl-mode=verify-ca&ssl-cert=${missing}&ssl-key=${missing}`, 'ssl-cert: cannot read'],
    ];
    for (const [query, problem] of cases) {
      const { code, output } = await runServerExpectingFailure(serveArgs(query));
      expect(code, query).to.not.equal(0);
      expect(output, query).to.include(problem);
    }
  });

  it('each mode is the check mysql2 is told to make', () => {
    const caFile = certs.paths.ca;
    expect(sslOptionsOf({ mode: 'required' })).to.deep.equal({
      rejectUnauthorized: false,
      verifyIdentity: false,
    });
    expect(sslOptionsOf({ mode: 'verify-ca', caFile })).to.deep.include({
      ca: certs.ca,
      rejectUnauthorized: true,
      verifyIdentity: false,
    });
    expect(sslOptionsOf({ mode: 'verify-identity', caFile })).to.deep.include({
      rejectUnauthorized: true,
      verifyIdentity: true,
    });
  });
});
