// A shell transcript of a guide (`$ ` lines, each followed by what it prints), run as written in
// one bash, one command after another, as a reader types them: an alias or a variable set by
// one line holds for the next. Each command's output is compared with the lines the guide shows
// after it (see expected.ts); one that shows none is only required to succeed. Three rules
// stand in for what a reader does by hand:
// - `$ cat FILE` followed by lines shows a file the reader has made: it is written from them;
// - `ba707083-…` in a command is the UUID that an earlier command printed last;
// - a command whose comment says "until Ctrl-C" runs for two seconds, must still be running
//   then, and is stopped.
// Output that starts with `shameless: ` is a failed call: its command must exit non-zero. The
// aliases of a guide's earlier transcripts hold in its later ones, as in a reader's terminal.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FULL_UUID, SHORT_UUID, outputDifference } from './expected.js';
import { withoutComment } from './commands.js';
import { run } from './programs.js';

export interface TranscriptStep {
  /** The command as written after `$ `. */
  readonly command: string;
  readonly shown: readonly string[];
  /** 1-based line of the guide. */
  readonly line: number;
}

const UNTIL_CTRL_C = /#.*until Ctrl-C/;
const FOLLOW_MS = 2000;

/** The alias definitions among the steps, which a reader's shell keeps for later blocks. */
export function aliasesOf(steps: readonly TranscriptStep[]): string[] {
  return steps.map((step) => step.command).filter((command) => /^alias\s/.test(command));
}

export function transcriptSteps(text: string, firstLine: number): TranscriptStep[] {
  const steps: { command: string; shown: string[]; line: number }[] = [];
  text.split('\n').forEach((line, i) => {
    if (line.startsWith('$ '))
      steps.push({ command: line.slice(2), shown: [], line: firstLine + i });
    else if (line !== '' || steps.at(-1)?.shown.length) steps.at(-1)?.shown.push(line);
  });
  return steps;
}

/**
 * Runs the steps in `cwd` with `env`; `rewrite` may change a command before it runs (the
 * guides' server address for the checker's). Returns one problem per step that did not do what
 * the guide shows.
 */
export async function runTranscript(
  steps: readonly TranscriptStep[],
  options: {
    cwd: string;
    env: NodeJS.ProcessEnv;
    rewrite: (command: string) => string;
    /** Commands run first, unchecked: the aliases of the guide's earlier transcripts. */
    preamble?: readonly string[];
  },
): Promise<string[]> {
  const out = mkdtempSync(join(tmpdir(), 'shameless-docs-transcript-'));
  try {
    const script = ['shopt -s expand_aliases', '__uuid=', ...(options.preamble ?? [])];
    steps.forEach((step, i) => {
      const cat = /^cat ([\w.-]+)(\s+#.*)?$/.exec(step.command);
      if (cat && step.shown.length > 0) {
        writeFileSync(join(options.cwd, cat[1]!), `${step.shown.join('\n')}\n`);
      }
      const command = options.rewrite(step.command).replace(SHORT_UUID, '"$__uuid"');
      const file = join(out, String(i));
      if (UNTIL_CTRL_C.test(step.command)) {
        script.push(
          `${withoutComment(command)} >'${file}' 2>&1 &`,
          '__pid=$!',
          `sleep ${FOLLOW_MS / 1000}`,
          `if kill -0 $__pid 2>/dev/null; then kill -TERM $__pid; wait $__pid; echo running >'${file}.status';`,
          `else wait $__pid; echo $? >'${file}.status'; fi`,
        );
      } else {
        script.push(`{ ${command}`, `} >'${file}' 2>&1`, `echo $? >'${file}.status'`);
      }
      script.push(
        `__last=$(grep -oE '${FULL_UUID.source}' '${file}' | tail -n 1)`,
        '[ -n "$__last" ] && __uuid=$__last',
        'true',
      );
    });
    const result = await run('bash', ['-c', script.join('\n')], {
      cwd: options.cwd,
      env: options.env,
      timeoutMs: 120_000,
    });
    const problems: string[] = [];
    steps.forEach((step, i) => {
      const where = `line ${step.line}: $ ${step.command}`;
      let status: string;
      let printed: string;
      try {
        status = readFileSync(join(out, `${i}.status`), 'utf8').trim();
        printed = readFileSync(join(out, String(i)), 'utf8');
      } catch {
        problems.push(`${where}: did not run (bash: ${result.code} ${result.stderr.trim()})`);
        return;
      }
      const fails = step.shown[0]?.startsWith('shameless: ') ?? false;
      if (UNTIL_CTRL_C.test(step.command)) {
        if (status !== 'running') {
          problems.push(`${where}: ended (exit ${status}) before Ctrl-C:\n${printed}`);
        }
      } else if (fails ? status === '0' : status !== '0') {
        problems.push(
          `${where}: exit ${status}, the guide shows ${fails ? 'a failure' : 'success'}:\n${printed}`,
        );
        return;
      }
      if (step.shown.length > 0) {
        const difference = outputDifference(step.shown.join('\n'), printed);
        if (difference) problems.push(`${where}: ${difference}\nprinted:\n${printed}`);
      }
    });
    return problems;
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}
