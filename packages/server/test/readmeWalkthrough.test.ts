// The README's command-line walkthrough, run as written against a real server: a new user types
// these commands after the examples ran on the same store, so the walkthrough must not collide
// with a model an example defines, and what it shows as output must be what the CLI prints.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { runCommand } from './support/serverProcess.js';
import { RATE_MODEL, type StoreFixture, startStoreFixture } from './support/storeFixture.js';

const README = join(dirname(fileURLToPath(import.meta.url)), '../../../../README.md');

interface Step {
  /** The command line after `$ `, without its trailing comment. */
  line: string;
  /** The lines the README shows after it. */
  shown: string[];
}

/** The `$ ` lines of the first sh block under "## The command line", each with what follows it. */
function walkthroughSteps(): Step[] {
  const readme = readFileSync(README, 'utf8');
  const section = readme.slice(readme.indexOf('\n## The command line\n'));
  const block = /```sh\n([\s\S]*?)```/.exec(section)![1]!;
  const steps: Step[] = [];
  for (const text of block.split('\n').filter((line) => line !== '')) {
    if (text.startsWith('$ ')) steps.push({ line: withoutComment(text.slice(2)), shown: [] });
    else steps.at(-1)!.shown.push(text);
  }
  return steps;
}

/** Shell words of a line: bare words and '…' quoted ones, as the walkthrough uses them. */
function words(line: string): string[] {
  return [...line.matchAll(/'([^']*)'|(\S+)/g)].map((match) => match[1] ?? match[2]!);
}

function withoutComment(line: string): string {
  const comment = /\s#(?=(?:[^']*'[^']*')*[^']*$)/.exec(line);
  return (comment ? line.slice(0, comment.index) : line).trim();
}

describe('the README command-line walkthrough', function () {
  let store: StoreFixture;

  before(async () => {
    // 16 shards, as `pnpm start` serves, so find-shard prints what the README shows.
    store = await startStoreFixture({ shardsCount: 16 });
    // What `pnpm example:gem` leaves in the store: the gem README's `rate`.
    await store.api.defineModel({ model: RATE_MODEL });
  });
  after(() => store?.close());

  it('runs as written after the examples, printing what it shows', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'shameless-walkthrough-'));
    const files = new Map<string, string>();
    let uuid = '';
    let ran = 0;
    for (const { line, shown } of walkthroughSteps()) {
      const [first, ...rest] = words(line);
      if (first === 'alias') continue;
      if (first === 'cat') {
        files.set(rest[0]!, join(directory, rest[0]!));
        writeFileSync(join(directory, rest[0]!), shown.join('\n'));
        continue;
      }
      if (line.includes('--follow')) continue; // runs until Ctrl-C
      const env: Record<string, string> = { SHAMELESS_ADDRESS: store.address };
      const all = [first!, ...rest];
      while (/^[A-Z_]+=/.test(all[0]!)) {
        const [name, value] = all.shift()!.split('=') as [string, string];
        env[name] = value;
      }
      expect(all.shift(), line).to.equal('shameless');
      const args = all.map(
        (word) => files.get(word) ?? (/^[0-9a-f]{8}-…$/.test(word) ? uuid : word),
      );
      const result = await runCommand(args, { env });
      ran += 1;
      const fails = shown[0]?.startsWith('shameless: ') ?? false;
      expect(result.code, `${line}\n${result.stderr}`).to.equal(fails ? 1 : 0);
      const printed = (result.stdout + result.stderr).split('\n');
      for (const expected of shown) {
        // An elided line (…) is checked up to the elision when it is a message, not JSON.
        if (!expected.includes('…')) expect(printed, line).to.include(expected);
        else if (!expected.startsWith('{')) {
          const prefix = expected.slice(0, expected.indexOf('…'));
          expect(
            printed.some((printedLine) => printedLine.startsWith(prefix)),
            `${line}: ${prefix}`,
          ).to.equal(true);
        }
      }
      if (args[0] === 'put') uuid = (JSON.parse(result.stdout) as { uuid: string }).uuid;
    }
    expect(ran, 'commands run').to.be.greaterThan(5);
  });
});
