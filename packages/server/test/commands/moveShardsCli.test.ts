// `shameless move-shards` on the command line: its help lists the forms, and a malformed command
// is refused before any call (exit 2, the flag named, no stack trace). What a move does is
// test/moves/moveShards.test.ts.
import { expect } from 'chai';
import { type CommandResult, runCommand } from '../support/serverProcess.js';

/** No server listens here: a command that got as far as calling would fail with exit 1. */
const NOWHERE = { SHAMELESS_ADDRESS: '127.0.0.1:1' };

function expectNoStack(result: CommandResult) {
  expect(result.stderr).not.to.match(/\n\s+at /);
}

describe('shameless move-shards: usage', function () {
  this.timeout(30_000);

  it('--help lists the forms, the examples and the client options', async () => {
    const help = await runCommand(['move-shards', '--help']);
    expect(help.code).to.equal(0);
    for (const form of [
      '--shards <first>-<last> --to <url>',
      '--split --to <url>',
      '--finish',
      '--abort',
      '--status',
      'shameless move-shards --split --to mysql://',
      '--address <host:port>',
      '--token <token>',
    ]) {
      expect(help.stdout, form).to.include(form);
    }
    // And the command is listed by the bare help.
    const bare = await runCommand(['--help']);
    expect(bare.stdout).to.include('move-shards');
  });

  it('refuses a malformed command before any call, naming what to fix (exit 2)', async () => {
    const cases: [string[], string][] = [
      [[], 'give one of --shards <range> --to <url>, --split --to <url> …, --finish, --abort'],
      [['--shards', '2-3'], '--shards: give exactly one --to <url>'],
      [['--shards', '2-3', '--to', 'mysql://a/b', '--to', 'mysql://c/d'], 'exactly one --to'],
      [['--split'], '--split: give one --to <url> per partition'],
      [['--shards', '2-3', '--split', '--to', 'mysql://a/b'], 'give one of'],
      [['--finish', '--abort'], 'give one of'],
      [['--finish', '--to', 'mysql://a/b'], '--to goes with --shards or --split'],
      [['--shards', '5-2', '--to', 'mysql://a/b'], '--shards: 5-2 is empty (first after last)'],
      [['--shards', 'x', '--to', 'mysql://a/b'], '--shards: expected an integer'],
      [['--shards', '1-2-3', '--to', 'mysql://a/b'], '--shards: expected <first>-<last>'],
      [['--shards', '-1', '--to', 'mysql://a/b'], '--shards'],
      [['--shards', '4294967296', '--to', 'mysql://a/b'], '--shards: expected an integer'],
      [['--bogus'], "unknown option '--bogus'"],
      [['--to'], "option '--to <url>' argument missing"],
    ];
    for (const [args, message] of cases) {
      const result = await runCommand(['move-shards', ...args], { env: NOWHERE });
      const what = `move-shards ${args.join(' ')}`;
      expect(result.code, `${what}: ${result.stderr}`).to.equal(2);
      expect(result.stderr, what).to.include(message);
      expect(result.stdout, what).to.equal('');
      expectNoStack(result);
    }
  });

  it('a well-formed command reaches for the server: exit 1 with the hint, when none is there', async () => {
    const result = await runCommand(['move-shards', '--status'], { env: NOWHERE });
    expect(result.code).to.equal(1);
    expect(result.stderr).to.include('UNAVAILABLE');
    expect(result.stderr).to.include('is a server running at 127.0.0.1:1?');
    expectNoStack(result);
  });
});
