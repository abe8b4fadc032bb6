// Every code sample of the README and the guides, run as written against a real
// `shameless serve` on a loopback port over a throwaway database of the local MariaDB. The
// guides run in the order a reader meets them (README, then docs/*.md by name) on one store, as
// a reader's `pnpm start` store, so that two guides cannot define one model two ways; the gem
// README example runs last on the same store. How each block is checked:
// docs/development.md#samples-in-the-guides.
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { expect } from 'chai';
import { connect } from '@shameless/client';
import {
  readConfigFile,
  readModelDefinition,
  readTokensFile,
  resolveSettings,
} from '@shameless/server';
import {
  type ListeningProcess,
  type TestDatabases,
  createTestDatabases,
  startListeningProcess,
} from '@shameless/testkit';
import { CommandChecker } from '../src/commands.js';
import { outputDifference } from '../src/expected.js';
import { parseMarkdown } from '../src/markdown.js';
import {
  type Program,
  addBlock,
  compileTypeScript,
  newProgram,
  outputsOfBlocks,
  run,
} from '../src/programs.js';
import { REPO, guides } from '../src/repo.js';
import { type Sample, classify, runnable } from '../src/samples.js';
import { aliasesOf, runTranscript, transcriptSteps } from '../src/transcript.js';

/** Where the guides say a server is: `pnpm start`'s address, replaced by the checker's. */
const GUIDES_ADDRESS = '127.0.0.1:50051';
const PYTHON = '/usr/bin/python3';
const CLI = join(REPO, 'packages/server/bin/shameless.js');
const PROGRAMS_DIRECTORY = join(REPO, 'packages/docs/dist/samples');
const RUN_MS = 60_000;

const docs = guides().map((path) => {
  const file = parseMarkdown(readFileSync(join(REPO, path), 'utf8'));
  return { path, ...classify(path, file) };
});

// A program per TypeScript or Python block, with the blocks that continue it.
const programOf = new Map<Sample, Program>();
const programs: Program[] = [];
for (const doc of docs) {
  const last: Partial<Record<'ts' | 'python', Program>> = {};
  for (const sample of doc.samples) {
    if (sample.kind !== 'program') continue;
    let program = sample.continues ? last[sample.language] : undefined;
    if (!program) {
      program = newProgram(doc.path, sample.language, sample.fence);
      programs.push(program);
      last[sample.language] = program;
    }
    addBlock(program, sample.fence, sample.fence.text);
    programOf.set(sample, program);
  }
}

describe('the samples of the README and the guides', function () {
  this.timeout(RUN_MS * 2);
  let databases: TestDatabases | undefined;
  let server: ListeningProcess | undefined;
  let address = '';
  let compiled: ReturnType<typeof compileTypeScript>;
  const commands = new CommandChecker(REPO);
  /** What each sample that ran printed: a program's, block by block. */
  const printed = new Map<Sample, string>();
  const programOutputs = new Map<Program, Promise<string[]>>();
  /** The aliases each guide's transcripts have defined so far. */
  const aliases = new Map<string, string[]>();
  const guideOf = (sample: Sample) => docs.find((doc) => doc.samples.includes(sample))!.path;

  // The samples see the PATH a reader has: not the node_modules/.bin folders that pnpm adds to a
  // test's PATH (they hold a `shameless` bin, which would stand in for the guides' alias).
  const path = (process.env.PATH ?? '')
    .split(':')
    .filter((entry) => !entry.includes('node_modules/.bin'))
    .join(':');
  const env = (): NodeJS.ProcessEnv => ({
    ...process.env,
    PATH: path,
    SHAMELESS_ADDRESS: address,
  });
  const rewrite = (text: string) => text.replaceAll(GUIDES_ADDRESS, address);

  before(async function () {
    this.timeout(120_000);
    databases = await createTestDatabases(1, { prefix: 'shameless_test_docs' });
    server = await startListeningProcess(
      [
        CLI,
        'serve',
        '--listen',
        '127.0.0.1:0',
        '--log-level',
        'warn',
        '--partition',
        databases.urls[0]!,
      ],
      { name: 'shameless serve' },
    );
    address = server.address;
    rmSync(PROGRAMS_DIRECTORY, { recursive: true, force: true });
    mkdirSync(PROGRAMS_DIRECTORY, { recursive: true });
    for (const program of programs) program.source = rewrite(program.source);
    compiled = compileTypeScript(
      programs.filter((program) => program.language === 'ts'),
      PROGRAMS_DIRECTORY,
    );
  });

  after(async () => {
    await server?.kill();
    await databases?.drop();
  });

  it('every block of every guide says how it is checked', () => {
    expect(docs.flatMap((doc) => doc.problems)).to.deep.equal([]);
  });

  for (const doc of docs) {
    describe(doc.path, () => {
      let scratch = '';
      before(() => {
        scratch = scratchDirectory(doc.path);
      });
      after(() => rmSync(scratch, { recursive: true, force: true }));

      for (const sample of doc.samples) {
        const title = `${doc.path}:${sample.fence.line}: ${describeSample(sample)}`;
        if (sample.kind === 'skip') {
          // The files a reason names (the test that runs the same thing instead) exist.
          it(`${title}: the files its reason names exist`, () => {
            const named = [
              ...sample.reason.matchAll(/(?:^|\s)((?:packages|examples|proto|\.ci)\/[\w./-]*\w)/g),
            ];
            expect(
              named.map((m) => m[1]!).filter((path) => !existsSync(join(REPO, path))),
            ).to.deep.equal([]);
          });
          if (sample.fence.language !== 'sh') continue;
        }
        it(title, async () => {
          await check(sample, scratch);
        });
      }
    });
  }

  it('the gem README example runs after the guides on their store (their models agree)', async () => {
    const result = await run(process.execPath, [join(REPO, 'examples/dist/gem-readme.js')], {
      cwd: REPO,
      env: env(),
      timeoutMs: RUN_MS,
    });
    expect(result.code, result.stdout + result.stderr).to.equal(0);
  });

  async function check(sample: Sample, scratch: string): Promise<void> {
    switch (sample.kind) {
      case 'program': {
        const program = programOf.get(sample)!;
        const block = program.blocks.findIndex((b) => b.fence === sample.fence);
        const outputs = await outputsOf(program, scratch);
        expect(outputs[block], 'the block ran').to.be.a('string');
        printed.set(sample, outputs[block]!);
        return;
      }
      case 'output': {
        const shown = printed.get(sample.of);
        expect(shown, 'the sample before it ran').to.be.a('string');
        const difference = outputDifference(sample.fence.text, shown!);
        expect(difference, `printed:\n${shown}`).to.equal(undefined);
        return;
      }
      case 'transcript': {
        expect(commands.problems(sample.fence.text, true)).to.deep.equal([]);
        const steps = transcriptSteps(sample.fence.text, sample.fence.line + 1);
        const problems = await runTranscript(steps, {
          cwd: scratch,
          env: env(),
          rewrite,
          preamble: aliases.get(guideOf(sample)) ?? [],
        });
        aliases.set(guideOf(sample), [
          ...(aliases.get(guideOf(sample)) ?? []),
          ...aliasesOf(steps),
        ]);
        expect(problems).to.deep.equal([]);
        return;
      }
      case 'run': {
        expect(commands.problems(sample.fence.text, false)).to.deep.equal([]);
        const result = await run('bash', ['-euo', 'pipefail', '-c', rewrite(sample.fence.text)], {
          cwd: scratch,
          env: env(),
          timeoutMs: RUN_MS,
        });
        expect(result.code, result.stdout + result.stderr).to.equal(0);
        printed.set(sample, result.stdout);
        return;
      }
      case 'skip':
        expect(commands.problems(sample.fence.text, /^\$ /m.test(sample.fence.text))).to.deep.equal(
          [],
        );
        return;
      case 'excerpt': {
        const source = readFileSync(join(REPO, sample.path), 'utf8');
        expect(
          containsLines(source, sample.fence.text),
          `the block is not in ${sample.path}`,
        ).to.equal(true);
        if (runnable(sample)) {
          const compiledExample = join(REPO, 'examples/dist', basename(sample.path, '.ts') + '.js');
          const result = await run(process.execPath, [compiledExample], {
            cwd: REPO,
            env: env(),
            timeoutMs: RUN_MS,
          });
          expect(result.code, result.stdout + result.stderr).to.equal(0);
          printed.set(sample, result.stdout);
        }
        return;
      }
      case 'file': {
        const path = join(scratch, sample.name ?? `${sample.format}.json`);
        writeFileSync(path, sample.fence.text);
        if (sample.format === 'config') resolveSettings({}, {}, readConfigFile(path));
        else if (sample.format === 'tokens') expect(readTokensFile(path)).to.have.length.above(0);
        else {
          // Defined on the guides' store, as `shameless define --file` would.
          const store = await connect({ endpoints: [address], deadlineMs: 10_000 });
          try {
            await store.transport.unary(
              'defineModel',
              { model: readModelDefinition(path) },
              { idempotent: true, hedgeable: false },
            );
          } finally {
            await store.close();
          }
        }
        return;
      }
      case 'proto': {
        const folder = join(REPO, 'proto/shameless/v1');
        const found = readdirSync(folder).some((name) =>
          containsLines(readFileSync(join(folder, name), 'utf8'), sample.fence.text),
        );
        expect(found, 'the block is not in any file of proto/shameless/v1').to.equal(true);
        return;
      }
    }
  }

  function outputsOf(program: Program, scratch: string): Promise<string[]> {
    let outputs = programOutputs.get(program);
    if (!outputs) {
      outputs = runProgram(program, scratch);
      programOutputs.set(program, outputs);
    }
    return outputs;
  }

  async function runProgram(program: Program, scratch: string): Promise<string[]> {
    let command: string;
    let args: string[];
    let programEnv = env();
    if (program.language === 'ts') {
      const result = compiled.get(program)!;
      if ('diagnostics' in result) {
        throw new Error(`${program.id} does not compile:\n${result.diagnostics.join('\n')}`);
      }
      [command, args] = [process.execPath, [result.file]];
    } else {
      const missing = pythonToolchain();
      if (missing) throw new Error(`${program.id} needs ${missing}`);
      const file = join(scratch, `sample-${program.blocks[0]!.fence.line}.py`);
      writeFileSync(file, program.source);
      [command, args] = [PYTHON, [file]];
      programEnv = { ...programEnv, PYTHONPATH: join(scratch, 'gen') };
    }
    const result = await run(command, args, { cwd: scratch, env: programEnv, timeoutMs: RUN_MS });
    if (result.code !== 0) {
      throw new Error(`${program.id} exited ${result.code}:\n${result.stdout}${result.stderr}`);
    }
    return outputsOfBlocks(result.stdout);
  }
});

function describeSample(sample: Sample): string {
  switch (sample.kind) {
    case 'program':
      return sample.continues ? `${sample.language}, continued` : `${sample.language} program`;
    case 'output':
      return `output of line ${sample.of.fence.line}`;
    case 'skip':
      return `not run: ${sample.reason}`;
    case 'excerpt':
      return `excerpt of ${sample.path}`;
    case 'file':
      return `${sample.format} file${sample.name ? ` ${sample.name}` : ''}`;
    default:
      return sample.kind;
  }
}

/** Whether the lines of `block` appear one after another in `source` (trailing spaces aside). */
function containsLines(source: string, block: string): boolean {
  const trim = (text: string) => text.split('\n').map((line) => line.trimEnd());
  const haystack = trim(source);
  const needle = trim(block.replace(/\n+$/, ''));
  return haystack.some((_, i) => needle.every((line, j) => haystack[i + j] === line));
}

/**
 * A directory that looks like the checkout (its top-level entries linked in) where a guide's
 * samples run, so that `packages/…` and `examples/…` resolve as from the checkout while the
 * files a sample writes land nowhere else.
 */
function scratchDirectory(guide: string): string {
  const directory = mkdtempSync(join(tmpdir(), `shameless-docs-${basename(guide, '.md')}-`));
  for (const entry of readdirSync(REPO)) {
    if (entry !== '.git') symlinkSync(join(REPO, entry), join(directory, entry));
  }
  return directory;
}

/** What the Python samples need and the machine lacks, if anything. */
function pythonToolchain(): string | undefined {
  try {
    execFileSync(PYTHON, ['-c', 'import grpc, google.protobuf, msgpack']);
    return undefined;
  } catch {
    return `${PYTHON} with grpc, protobuf and msgpack (apt-get install python3-grpcio python3-protobuf python3-msgpack, as .ci/run does)`;
  }
}
