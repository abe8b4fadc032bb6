// How each fenced block of a guide is checked, decided from its language and the sample marker
// before it (`<!-- sample: … -->`). A block the checker cannot tell how to check is a problem,
// so a new sample cannot escape by accident: docs/development.md#samples-in-the-guides lists
// the rules.
import type { Fence, MarkdownFile } from './markdown.js';

export type FileFormat = 'config' | 'tokens' | 'model';

export type Sample =
  /** TypeScript (compiled and run with node) or Python (run with /usr/bin/python3). */
  | {
      readonly kind: 'program';
      readonly fence: Fence;
      readonly language: 'ts' | 'python';
      /** Part of the program of the block of its language before it. */
      readonly continues: boolean;
    }
  /** `$ ` lines run one after another in one bash, each compared with the lines after it. */
  | { readonly kind: 'transcript'; readonly fence: Fence }
  /** A shell script run with bash; it must exit 0. */
  | { readonly kind: 'run'; readonly fence: Fence }
  /** What the block before it prints. */
  | { readonly kind: 'output'; readonly fence: Fence; readonly of: Sample }
  /** Not run, for the reason given; its shell commands are still checked against --help. */
  | { readonly kind: 'skip'; readonly fence: Fence; readonly reason: string }
  /** Lines of a source file that the build compiles (and, for examples/*.ts, CI runs). */
  | { readonly kind: 'excerpt'; readonly fence: Fence; readonly path: string }
  /** A file for the server, read as the server reads it; `name` if later samples use it. */
  | {
      readonly kind: 'file';
      readonly fence: Fence;
      readonly format: FileFormat;
      readonly name?: string;
    }
  /** Lines of a `.proto` file in proto/. */
  | { readonly kind: 'proto'; readonly fence: Fence };

export interface Classified {
  readonly samples: readonly Sample[];
  /** `path:line: what is wrong`, one per block (or marker) that cannot be checked. */
  readonly problems: readonly string[];
}

const LANGUAGES: Record<string, string> = {
  ts: 'ts',
  typescript: 'ts',
  python: 'python',
  py: 'python',
  sh: 'sh',
  bash: 'sh',
  shell: 'sh',
  console: 'sh',
  json: 'json',
  proto: 'proto',
  protobuf: 'proto',
};

const EXECUTED = new Set(['program', 'run', 'excerpt']);

export function classify(path: string, file: MarkdownFile): Classified {
  const samples: Sample[] = [];
  const problems: string[] = [];
  const at = (line: number) => `${path}:${line}`;
  for (const orphan of file.orphanMarkers) {
    problems.push(`${at(orphan.line)}: a sample marker with no fenced block right after it`);
  }
  for (const fence of file.fences) {
    const language = LANGUAGES[fence.language] ?? fence.language;
    const marker = fence.marker ? parseMarker(fence.marker.text) : undefined;
    const where = at(fence.line);
    const problem = (text: string) => problems.push(`${where}: ${text}`);
    if (marker === undefined) {
      if (language === 'ts' || language === 'python') {
        samples.push({ kind: 'program', fence, language, continues: false });
      } else if (language === 'sh' && /^\$ /m.test(fence.text)) {
        samples.push({ kind: 'transcript', fence });
      } else if (language === 'proto') {
        samples.push({ kind: 'proto', fence });
      } else {
        problem(
          `a \`\`\`${fence.language} block with no sample marker: say how to check it ` +
            '(<!-- sample: run | output | skip: why | … -->, see docs/development.md)',
        );
      }
      continue;
    }
    const { kind, rest } = marker;
    switch (kind) {
      case 'skip':
        if (rest.length < 10) problem('a skipped sample must say why it cannot run (skip: why)');
        else samples.push({ kind: 'skip', fence, reason: rest });
        break;
      case 'output': {
        const before = samples.at(-1);
        if (rest !== '') problem(`"output" takes nothing after it, got "${rest}"`);
        else if (!before || before.fence !== file.fences[file.fences.indexOf(fence) - 1]) {
          problem('an output block must follow the block whose output it shows');
        } else if (!EXECUTED.has(before.kind) || (before.kind === 'excerpt' && !runnable(before))) {
          problem(`an output block must follow a sample that runs, not a ${before.kind} block`);
        } else samples.push({ kind: 'output', fence, of: before });
        break;
      }
      case 'continues':
        if (language !== 'ts' && language !== 'python') {
          problem('only TypeScript and Python blocks continue a program');
        } else if (
          !samples.some((sample) => sample.kind === 'program' && sample.language === language)
        ) {
          problem(`no ${language} block before this one to continue`);
        } else samples.push({ kind: 'program', fence, language, continues: true });
        break;
      case 'run':
        if (language !== 'sh') problem('only shell blocks (sh, bash) are run as scripts');
        else if (rest !== '') problem(`"run" takes nothing after it, got "${rest}"`);
        else samples.push({ kind: 'run', fence });
        break;
      case 'excerpt':
        if (!/^(examples\/[\w-]+\.ts|packages\/[\w-]+\/(src|test)\/[\w/.-]+\.ts)$/.test(rest)) {
          problem(
            'an excerpt names a TypeScript file the build compiles: examples/*.ts or packages/*/src|test/…',
          );
        } else samples.push({ kind: 'excerpt', fence, path: rest });
        break;
      case 'config':
      case 'tokens':
      case 'model':
        if (language !== 'json') problem(`a ${kind} file is JSON`);
        else if (rest !== '' && !/^[\w.-]+$/.test(rest)) problem(`bad file name "${rest}"`);
        else samples.push({ kind: 'file', fence, format: kind, ...(rest ? { name: rest } : {}) });
        break;
      default:
        problem(`unknown sample marker "${kind}"`);
    }
  }
  return { samples, problems };
}

/** An excerpt that CI can run as a program of its own: an example. */
export function runnable(sample: Sample): boolean {
  return sample.kind !== 'excerpt' || sample.path.startsWith('examples/');
}

function parseMarker(text: string): { kind: string; rest: string } {
  const match = /^([a-z-]+)\s*:?\s*([\s\S]*)$/.exec(text.trim());
  return match ? { kind: match[1]!, rest: match[2]!.trim() } : { kind: text, rest: '' };
}
