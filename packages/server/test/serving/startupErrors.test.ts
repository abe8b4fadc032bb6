// Starting the server, as an operator meets it: a bad setting is named before anything starts, a
// wrong MySQL password fails at once saying what to check, a busy port is named with what to do,
// and stopping `pnpm start` stops the server.
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createTestDatabases, type TestDatabases } from '@shameless/testkit';
import { runServerExpectingFailure } from '../support/serverProcess.js';

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '../../../../..');

/** Resolves once `pid` no longer exists; rejects after `timeoutMs`. */
async function processGone(pid: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
    if (Date.now() > deadline) throw new Error(`process ${pid} is still running`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('shameless serve: startup errors', function () {
  this.timeout(60_000);
  let databases: TestDatabases;
  before(async () => {
    databases = await createTestDatabases(1);
  });
  after(() => databases?.drop());

  it('a wrong MySQL password fails at once, saying to check the credentials, never showing them', async () => {
    const url = new URL(databases.urls[0]!);
    url.password = 'not-the-password';
    // A startup timeout longer than the helper waits: only a failure without retries ends in time.
    const failed = await runServerExpectingFailure([
      '--partition',
      url.toString(),
      '--startup-timeout-ms',
      '120000',
      '--log-level',
      'info',
    ]);
    expect(failed.code).to.equal(1);
    expect(failed.output).to.match(
      /cannot start: partition 0 at [^ ]+ refused user \w+ \(ER_ACCESS_DENIED_ERROR\)\. Check the user name and password in --partition \/ SHAMELESS_PARTITIONS \(mysql:\/\/\w+:\*\*\*@/,
    );
    expect(failed.output).not.to.include('not-the-password');
    expect(failed.output).not.to.include('waiting for partition');
    expect(failed.output).not.to.include('Is MySQL running');
  });

  it('a bad --listen, --metrics-listen or --log-level is refused before starting: exit 2, naming the flag', async () => {
    const cases: [string[], string][] = [
      [['--listen', 'nonsense'], '--listen: expected host:port with a port from 0 to 65535'],
      [['--listen', '127.0.0.1:99999'], '--listen: expected host:port'],
      [['--metrics-listen', '127.0.0.1:99999'], '--metrics-listen: expected host:port'],
      [['--log-level', 'verbose'], '--log-level: expected one of fatal, error, warn, info, debug'],
    ];
    for (const [args, message] of cases) {
      const failed = await runServerExpectingFailure(['--partition', databases.urls[0]!, ...args]);
      expect(failed.code, args.join(' ')).to.equal(2);
      expect(failed.output.trim().split('\n'), 'one line').to.have.length(1);
      expect(failed.output, args.join(' ')).to.include(`shameless: ${message}`);
      expect(failed.output, args.join(' ')).not.to.match(
        /refusing to listen|options\.port|custom levels/,
      );
    }
  });

  it('a port in use is named, with what to do', async () => {
    const holder: Server = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const { port } = holder.address() as { port: number };
    try {
      const failed = await runServerExpectingFailure([
        '--partition',
        databases.urls[0]!,
        '--listen',
        `127.0.0.1:${port}`,
      ]);
      expect(failed.code).to.equal(1);
      expect(failed.output).to.include(
        `shameless: cannot start: cannot listen on 127.0.0.1:${port}: the address is in use by another program`,
      );
      expect(failed.output).to.match(
        /--listen host:port \(SHAMELESS_LISTEN; port 0 picks a free one\)/,
      );
      expect(failed.output).not.to.include('No address added');
    } finally {
      holder.close();
    }
  });

  it('`pnpm start` runs the server as its script’s own process: stopping pnpm stops the server', async () => {
    // `pnpm run serve` is what `pnpm start` execs once the build is done.
    const scripts = (
      JSON.parse(await readFile(join(repoRoot, 'package.json'), 'utf8')) as {
        scripts: Record<string, string>;
      }
    ).scripts;
    expect(scripts.start).to.match(/&& exec pnpm run serve$/);

    const pnpm = spawn(
      'pnpm',
      ['run', 'serve', '--listen', '127.0.0.1:0', '--partition', databases.urls[0]!],
      { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    pnpm.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    pnpm.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const pnpmExited = new Promise((resolve) => pnpm.once('exit', resolve));
    let serverPid: number | undefined;
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no listening line:\n${output}`)), 30_000);
        pnpm.stdout!.on('data', () => {
          if (/listening on/.test(output)) {
            clearTimeout(timer);
            resolve();
          }
        });
      });
      const children = await readFile(`/proc/${pnpm.pid}/task/${pnpm.pid}/children`, 'utf8');
      serverPid = Number(children.trim().split(/\s+/)[0]);
      const command = await readFile(`/proc/${serverPid}/cmdline`, 'utf8');
      // The script's shell was replaced by node: signals pnpm forwards reach the server itself.
      expect(command.split('\0')[0]).to.match(/node$/);
      expect(command).to.include('shameless.js\0serve');

      pnpm.kill('SIGTERM');
      await pnpmExited;
      await processGone(serverPid, 20_000);
    } finally {
      pnpm.kill('SIGKILL');
      if (serverPid) {
        try {
          process.kill(serverPid, 'SIGKILL');
        } catch {
          // Already gone, as it should be.
        }
      }
    }
  });
});
