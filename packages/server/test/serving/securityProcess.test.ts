// Security of the real `shameless serve` process: tokens rotated with SIGHUP (a bad file keeps
// the old ones), no token ever in the log, TLS with tokens on a non-loopback address, and the
// bind rule (refused without protection unless --insecure, one warning line when unprotected).
import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { tlsCredentials } from '@shameless/proto';
import {
  type TestCertificates,
  type TestDatabases,
  createTestDatabases,
  makeTestCertificates,
} from '@shameless/testkit';
import { connectStore, rejection } from '../support/grpcCalls.js';
import { runServerExpectingFailure, startServerProcess } from '../support/serverProcess.js';
import { newToken, writeTokensFile } from '../support/tokens.js';

const UNPROTECTED_WARNING = 'serving without TLS or tokens';

/** Polls until the condition holds; fails with the description after the timeout. */
async function eventually(description: string, condition: () => boolean | Promise<boolean>) {
  const giveUpAt = Date.now() + 15_000;
  while (!(await condition())) {
    if (Date.now() > giveUpAt) throw new Error(`timed out waiting until ${description}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const occurrences = (text: string, part: string) => text.split(part).length - 1;

describe('security: the serve process', function () {
  this.timeout(60_000);
  let databases: TestDatabases;
  let dir: string;
  let certs: TestCertificates;
  before(async () => {
    databases = await createTestDatabases(1);
    certs = await makeTestCertificates();
    dir = mkdtempSync(join(tmpdir(), 'shameless-security-'));
  });
  after(async () => {
    await databases?.drop();
    await certs?.remove();
    rmSync(dir, { recursive: true, force: true });
  });
  const storeArgs = () => ['--partition', databases.urls[0]!, '--shards-count', '4'];

  it('re-reads the tokens file on SIGHUP, keeps the old tokens when the new file is bad, and never logs a token', async () => {
    const file = join(dir, 'rotated.json');
    const old = newToken('before', 'reader');
    const next = newToken('after', 'reader');
    const unknown = newToken('stranger', 'admin');
    writeTokensFile(file, [old]);
    const server = await startServerProcess([
      ...storeArgs(),
      '--tokens-file',
      file,
      '--log-level',
      'info',
    ]);
    const withOld = connectStore(server.address, { token: old.token });
    const withNext = connectStore(server.address, { token: next.token });
    const withUnknown = connectStore(server.address, { token: unknown.token });
    const reloads = () => occurrences(server.output(), 'tokens file reloaded');
    try {
      expect((await withOld.describeStore({})).shardsCount).to.equal(4);
      expect((await rejection(withNext.describeStore({}))).code).to.equal(status.UNAUTHENTICATED);

      writeTokensFile(file, [next]);
      server.process.kill('SIGHUP');
      await eventually('the reload is logged', () => reloads() === 1);
      expect((await withNext.describeStore({})).shardsCount).to.equal(4);
      expect((await rejection(withOld.describeStore({}))).code).to.equal(status.UNAUTHENTICATED);

      // A file someone broke by pasting a token into it: refused, old tokens kept, not quoted.
      const pasted = newToken('pasted', 'admin');
      writeFileSync(file, `{"tokens":[${pasted.token}]}`);
      server.process.kill('SIGHUP');
      await eventually('the failed reload is logged', () =>
        server.output().includes('tokens file not reloaded'),
      );
      expect(reloads()).to.equal(1);
      expect((await withNext.describeStore({})).shardsCount).to.equal(4);
      expect((await rejection(withUnknown.describeStore({}))).code).to.equal(
        status.UNAUTHENTICATED,
      );

      const log = server.output();
      expect(log).to.contain('is not valid JSON');
      for (const token of [old, next, unknown, pasted]) expect(log).not.to.contain(token.token);
      expect(log).not.to.contain(UNPROTECTED_WARNING);
    } finally {
      for (const api of [withOld, withNext, withUnknown]) api.close();
      expect(await server.kill('SIGTERM')).to.equal(0);
    }
  });

  it('serves TLS with tokens on a non-loopback address', async () => {
    const file = join(dir, 'tls.json');
    const writer = newToken('ingest', 'writer');
    writeTokensFile(file, [writer]);
    const server = await startServerProcess([
      ...storeArgs(),
      '--listen',
      '0.0.0.0:0',
      '--tls-cert',
      certs.paths.serverCert,
      '--tls-key',
      certs.paths.serverKey,
      '--tokens-file',
      file,
    ]);
    const port = server.address.split(':').pop();
    // Not grpc-js's createSsl, which sends the IP address as the TLS server name (DEP0123).
    const api = connectStore(`127.0.0.1:${port}`, {
      credentials: tlsCredentials({ ca: certs.ca }),
      token: writer.token,
    });
    const plaintext = connectStore(`127.0.0.1:${port}`, { token: writer.token });
    try {
      expect((await api.describeStore({})).shardsCount).to.equal(4);
      const denied = await rejection(api.defineModel({ model: undefined }));
      expect(denied.code).to.equal(status.PERMISSION_DENIED);
      expect(denied.details).to.contain('needs the admin role');
      expect((await rejection(plaintext.describeStore({}))).code).to.equal(status.UNAVAILABLE);
      expect(server.output()).not.to.contain(UNPROTECTED_WARNING);
    } finally {
      api.close();
      plaintext.close();
      await server.kill('SIGTERM');
    }
  });

  it('refuses a non-loopback address without TLS or tokens, saying what to pass', async () => {
    const refused = await runServerExpectingFailure([...storeArgs(), '--listen', '0.0.0.0:0']);
    expect(refused.code).to.equal(1);
    expect(refused.output).to.contain('refusing to listen on 0.0.0.0:0 without TLS or tokens');
    expect(refused.output).to.contain('--insecure');
    expect(refused.output).not.to.match(/\n\s+at /);
  });

  const unprotected = [
    {
      where: 'on a non-loopback address with --insecure',
      args: ['--listen', '0.0.0.0:0', '--insecure'],
    },
    { where: 'on loopback by default', args: [] },
  ];
  for (const { where, args } of unprotected) {
    it(`serves unprotected ${where}, warning once; SIGHUP does not stop it`, async () => {
      const server = await startServerProcess([...storeArgs(), ...args, '--log-level', 'info']);
      try {
        const port = server.address.split(':').pop();
        const api = connectStore(`127.0.0.1:${port}`);
        expect((await api.describeStore({})).shardsCount).to.equal(4);
        server.process.kill('SIGHUP');
        await eventually('the SIGHUP is logged', () =>
          server.output().includes('nothing to reload'),
        );
        expect((await api.describeStore({})).shardsCount).to.equal(4);
        api.close();
        expect(occurrences(server.output(), UNPROTECTED_WARNING)).to.equal(1);
      } finally {
        await server.kill('SIGTERM');
      }
    });
  }

  it('refuses to start with an unusable certificate or tokens file, naming it', async () => {
    const missingCert = join(dir, 'no-such-cert.pem');
    const tls = await runServerExpectingFailure([
      ...storeArgs(),
      '--tls-cert',
      missingCert,
      '--tls-key',
      certs.paths.serverKey,
    ]);
    expect(tls.code).to.equal(1);
    expect(tls.output).to.contain(`cannot start: cannot read the TLS certificate`);
    expect(tls.output).to.contain(missingCert);

    // The server's own certificate given as the CA of client certificates.
    const clientCa = await runServerExpectingFailure([
      ...storeArgs(),
      '--tls-cert',
      certs.paths.serverCert,
      '--tls-key',
      certs.paths.serverKey,
      '--tls-client-ca',
      certs.paths.serverCert,
    ]);
    expect(clientCa.code).to.equal(1);
    expect(clientCa.output).to.contain(
      `cannot start: the TLS client CA certificate file ${certs.paths.serverCert} (--tls-client-ca) ` +
        'holds no CA certificate',
    );
    expect(clientCa.output).not.to.match(/\n\s+at /);

    const badTokens = join(dir, 'bad-tokens.json');
    writeFileSync(badTokens, '{"tokens":[{"name":"x","role":"owner","sha256":""}]}');
    const tokens = await runServerExpectingFailure([...storeArgs(), '--tokens-file', badTokens]);
    expect(tokens.code).to.equal(1);
    expect(tokens.output).to.contain(`${badTokens}: tokens[0].role must be one of`);
  });
});
