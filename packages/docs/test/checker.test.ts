// The checker itself, on small guides written here: it refuses what it cannot check, notices an
// output that differs, a link that leads nowhere and a flag that is gone. Without these, a
// checker that passes everything would look the same as one that checks.
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { CommandChecker, commandsOf } from '../src/commands.js';
import { outputDifference } from '../src/expected.js';
import { LinkChecker, externalProblem } from '../src/links.js';
import { anchorsOf, parseMarkdown, slug } from '../src/markdown.js';
import { REPO } from '../src/repo.js';
import { classify } from '../src/samples.js';
import { runTranscript, transcriptSteps } from '../src/transcript.js';

const fence = '```';
const classified = (markdown: string) => classify('guide.md', parseMarkdown(markdown));

describe('the docs checker', () => {
  describe('telling how each block is checked', () => {
    it('takes TypeScript, Python, transcripts and proto without a marker', () => {
      const { samples, problems } = classified(
        [
          `${fence}ts`,
          'console.log(1);',
          fence,
          `${fence}python`,
          'print(1)',
          fence,
          `${fence}sh`,
          '$ echo hi',
          'hi',
          fence,
          `${fence}proto`,
          'service Store {',
          fence,
        ].join('\n'),
      );
      expect(problems).to.deep.equal([]);
      expect(samples.map((sample) => sample.kind)).to.deep.equal([
        'program',
        'program',
        'transcript',
        'proto',
      ]);
    });

    it('refuses a block it cannot tell how to check, naming its line', () => {
      for (const language of ['json', 'text', '', 'sh', 'yaml']) {
        const { problems } = classified(`Text.\n\n${fence}${language}\n{}\n${fence}\n`);
        expect(problems, language).to.have.length(1);
        expect(problems[0]).to.match(/^guide\.md:3: a ```\S* block with no sample marker/);
      }
    });

    it('refuses a skip without a reason, an unknown marker and a marker before no block', () => {
      const { problems } = classified(
        [
          '<!-- sample: skip -->',
          '',
          `${fence}sh`,
          'pnpm start',
          fence,
          '<!-- sample: compile-only -->',
          `${fence}ts`,
          'let x = 1;',
          fence,
          '<!-- sample: output -->',
          '',
          'A paragraph, not a block.',
        ].join('\n'),
      );
      expect(problems).to.deep.equal([
        'guide.md:10: a sample marker with no fenced block right after it',
        'guide.md:3: a skipped sample must say why it cannot run (skip: why)',
        'guide.md:7: unknown sample marker "compile-only"',
      ]);
    });

    it('takes an output only right after a block that runs', () => {
      const { problems, samples } = classified(
        [
          `${fence}ts`,
          'console.log(1);',
          fence,
          '<!-- sample: output -->',
          fence,
          '1',
          fence,
          '<!-- sample: skip: it runs for an hour -->',
          `${fence}sh`,
          'pnpm bench',
          fence,
          '<!-- sample: output -->',
          fence,
          'a table',
          fence,
        ].join('\n'),
      );
      expect(samples.map((sample) => sample.kind)).to.deep.equal(['program', 'output', 'skip']);
      expect(problems).to.deep.equal([
        'guide.md:13: an output block must follow a sample that runs, not a skip block',
      ]);
    });

    it('continues a program only with a block of its language before it', () => {
      const { problems } = classified(
        ['<!-- sample: continues -->', `${fence}ts`, 'let y = 2;', fence].join('\n'),
      );
      expect(problems).to.deep.equal(['guide.md:2: no ts block before this one to continue']);
    });
  });

  describe('comparing output with what a guide shows', () => {
    it('takes stand-ins for UUIDs, timestamps, text and lines', () => {
      const printed = [
        '{"uuid":"3284af5e-3213-478a-b22d-f3a48fc0ee1a","at":"2026-11-28T05:17:08.970Z","shard":3}',
        'one',
        'two',
        'last',
      ].join('\n');
      const shown = [
        '{"uuid":"ba707083-…","at":"2026-11-23T16:49:31.994Z","shard":…}',
        '…',
        'last',
      ].join('\n');
      expect(outputDifference(shown, printed)).to.equal(undefined);
    });

    it('names the first line that differs', () => {
      expect(outputDifference('a\nb\nc', 'a\nB\nc')).to.equal(
        'the guide shows "b" where it printed "B"',
      );
      expect(outputDifference('a', 'a\nb')).to.match(/printed more than the guide shows/);
      expect(outputDifference('a\nb', 'a')).to.match(/printed less than the guide shows/);
      // A shortened UUID stands for a UUID, not for any text.
      expect(outputDifference('id ba707083-…', 'id 42')).to.not.equal(undefined);
    });
  });

  describe('running a transcript', () => {
    it('fails a step whose output or exit differs from what the guide shows', async () => {
      const cwd = mkdtempSync(join(tmpdir(), 'shameless-docs-checker-'));
      try {
        const text = [
          '$ cat note.txt',
          'written from the guide',
          '$ V=two',
          '$ echo one $V',
          'one two',
          '$ echo three',
          'four',
          '$ false',
          '$ echo shameless: NOT_FOUND: a call that succeeds',
          'shameless: NOT_FOUND: a call that succeeds',
        ].join('\n');
        const problems = await runTranscript(transcriptSteps(text, 1), {
          cwd,
          env: process.env,
          rewrite: (command) => command,
        });
        expect(problems.map((problem) => problem.split('\n')[0])).to.deep.equal([
          'line 6: $ echo three: the guide shows "four" where it printed "three"',
          'line 8: $ false: exit 1, the guide shows success:',
          'line 9: $ echo shameless: NOT_FOUND: a call that succeeds: exit 0, the guide shows a failure:',
        ]);
      } finally {
        rmSync(cwd, { recursive: true, force: true });
      }
    });
  });

  describe('commands in shell blocks', () => {
    const checker = new CommandChecker(REPO);

    it('knows scripts, shameless commands and their flags, and bench and fuzz flags', () => {
      expect(
        checker.problems(
          [
            'pnpm install && pnpm start   # comment',
            'pnpm bench --quick --no-coalesce',
            'pnpm fuzz --minutes 5 --seed 7 --max-depth 2000',
            'shameless serve --listen 0.0.0.0:50051 \\',
            '  --tls-cert server.pem',
            'node packages/server/bin/shameless.js plan --model rate.json',
            'shameless group parked rate billing --shard 3 --limit 10',
          ].join('\n'),
          false,
        ),
      ).to.deep.equal([]);
    });

    it('names a script, command, flag or path that is not there', () => {
      expect(
        checker.problems(
          [
            'pnpm strat',
            'pnpm bench --quik',
            'pnpm fuzz --seconds 5',
            'shameless serve --tls-certificate x',
            'shameless serv',
            'shameless group park rate billing',
            'shameless group describe rate billing --shard 3',
            'examples/ruby/run.sh',
          ].join('\n'),
          false,
        ),
      ).to.deep.equal([
        'pnpm strat: no such script in package.json',
        'pnpm bench --quik: not in pnpm bench --help',
        'pnpm fuzz --seconds: not in pnpm fuzz --help',
        'shameless serve --tls-certificate: not in shameless serve --help',
        'shameless serv: not a command of shameless --help',
        'shameless group park: not a command of shameless group --help',
        'shameless group describe --shard: not in shameless group describe --help',
        'examples/ruby/run.sh: no such file',
      ]);
    });

    it('reads only the $ lines of a transcript, and no comments', () => {
      expect(commandsOf('$ a x # b c\nprinted\n$ d "# e" | f', true)).to.deep.equal([
        'a x',
        'd "# e"',
        'f',
      ]);
    });
  });

  describe('links', () => {
    it('makes GitHub anchors', () => {
      expect(slug("MySQL's buffer pool")).to.equal('mysqls-buffer-pool');
      expect(slug('A store made with `legacy_created_at_is_bigint`')).to.equal(
        'a-store-made-with-legacy_created_at_is_bigint',
      );
      expect(slug('Pipeline: the same calls on one stream')).to.equal(
        'pipeline-the-same-calls-on-one-stream',
      );
      expect(slug('What serving changes, and when')).to.equal('what-serving-changes-and-when');
      expect([...anchorsOf(parseMarkdown('# A\n\n## A\n\n## A'))]).to.deep.equal([
        'a',
        'a-1',
        'a-2',
      ]);
    });

    it('finds a missing file, heading, line and code path, and a malformed URL', () => {
      const repo = mkdtempSync(join(tmpdir(), 'shameless-docs-links-'));
      try {
        mkdirSync(join(repo, 'docs'));
        mkdirSync(join(repo, 'packages/a/src'), { recursive: true });
        writeFileSync(join(repo, 'packages/a/src/x.ts'), 'one\ntwo\n');
        writeFileSync(join(repo, 'docs/other.md'), '# Other\n\n## Part two\n');
        writeFileSync(
          join(repo, 'docs/guide.md'),
          [
            '# Guide',
            '',
            '[fine](other.md#part-two) [fine](#guide) [fine](../packages/a/src/x.ts#L2)',
            '[gone](missing.md) [no heading](other.md#part-three) [no line](../packages/a/src/x.ts#L9)',
            '`packages/a/src/x.ts` and `packages/*/src/x.ts` exist, `packages/a/src/y.ts` does not',
            '[bad](https://no_host/) [fine](https://example.com/a) `[not a link](nowhere.md)`',
            '```md',
            '[inside a block](nowhere.md)',
            '```',
          ].join('\n'),
        );
        expect(new LinkChecker(repo).problems('docs/guide.md')).to.deep.equal([
          'docs/guide.md:4: missing.md: no such file or folder (docs/missing.md)',
          'docs/guide.md:4: other.md#part-three: no heading of docs/other.md has the anchor #part-three',
          "docs/guide.md:4: ../packages/a/src/x.ts#L9: #L9: past the file's end",
          'docs/guide.md:6: https://no_host/: no such host name: no_host',
          'docs/guide.md:5: `packages/a/src/y.ts`: no such file or folder',
        ]);
        expect(externalProblem('ftp://example.com/')).to.match(/only http/);
      } finally {
        rmSync(repo, { recursive: true, force: true });
      }
    });
  });
});
