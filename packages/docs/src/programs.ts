// The guides' TypeScript and Python samples as programs: a block and the blocks that continue
// it make one program, with a line printed between blocks so that each block's output can be
// told apart. TypeScript programs are type-checked with the repository's strict settings and
// compiled together, in one pass; every program then runs as a child process.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import type { Fence } from './markdown.js';
import { REPO } from './repo.js';

/** Printed between the blocks of a program. */
export const BOUNDARY = '@@shameless-docs: next block@@';

export interface ProgramBlock {
  readonly fence: Fence;
  /** 1-based line of the program where the block's text starts. */
  readonly firstLine: number;
}

export interface Program {
  /** `README.md:123`: the guide and the line of its first block. */
  readonly id: string;
  readonly guide: string;
  readonly language: 'ts' | 'python';
  readonly blocks: ProgramBlock[];
  source: string;
}

export function newProgram(guide: string, language: 'ts' | 'python', fence: Fence): Program {
  return { id: `${guide}:${fence.line}`, guide, language, blocks: [], source: '' };
}

/** Adds a block to a program, after a line that prints the boundary when it is not the first. */
export function addBlock(program: Program, fence: Fence, text: string): void {
  if (program.blocks.length > 0) {
    program.source +=
      program.language === 'ts'
        ? `console.log(${JSON.stringify(BOUNDARY)});\n`
        : `print(${JSON.stringify(BOUNDARY)}, flush=True)\n`;
  }
  const firstLine = program.source.split('\n').length;
  program.blocks.push({ fence, firstLine });
  program.source += `${text}\n`;
}

/** Where line `line` of a program comes from: `docs/sdk.md:57`. */
export function sourceLine(program: Program, line: number): string {
  const block = [...program.blocks].reverse().find((b) => b.firstLine <= line);
  if (!block) return program.id;
  return `${program.guide}:${block.fence.line + 1 + line - block.firstLine}`;
}

/** A program's output, block by block. */
export function outputsOfBlocks(stdout: string): string[] {
  return stdout.split(`${BOUNDARY}\n`);
}

const BASE_CONFIG = join(REPO, 'tsconfig.base.json');

/**
 * Writes each TypeScript program to `directory` (as `<n>.ts`, next to the package's
 * node_modules, so that `@shameless/client` resolves), type-checks and compiles them all, and
 * returns each program's compiled file, or its diagnostics, each named by its guide's line.
 */
export function compileTypeScript(
  programs: readonly Program[],
  directory: string,
): Map<Program, { file: string } | { diagnostics: string[] }> {
  const files = new Map<string, Program>();
  programs.forEach((program, i) => {
    const file = join(directory, `sample${i}.ts`);
    writeFileSync(file, program.source);
    files.set(file, program);
  });
  const base = ts.readConfigFile(BASE_CONFIG, ts.sys.readFile);
  const { options } = ts.parseJsonConfigFileContent(base.config, ts.sys, directory);
  const program = ts.createProgram([...files.keys()], {
    ...options,
    composite: false,
    declaration: false,
    sourceMap: false,
    incremental: false,
    noEmit: false,
    rootDir: directory,
    outDir: directory,
  });
  const diagnostics = new Map<Program, string[]>();
  const emitted = program.emit();
  for (const diagnostic of [...ts.getPreEmitDiagnostics(program), ...emitted.diagnostics]) {
    const text = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
    const owner = diagnostic.file ? files.get(diagnostic.file.fileName) : undefined;
    if (!owner) {
      // A problem of the options or of a library: every program shares it.
      for (const each of programs) diagnostics.set(each, [...(diagnostics.get(each) ?? []), text]);
      continue;
    }
    const { line } = diagnostic.file!.getLineAndCharacterOfPosition(diagnostic.start ?? 0);
    diagnostics.set(owner, [
      ...(diagnostics.get(owner) ?? []),
      `${sourceLine(owner, line + 1)}: TS${diagnostic.code}: ${text}`,
    ]);
  }
  const results = new Map<Program, { file: string } | { diagnostics: string[] }>();
  for (const [file, owner] of files) {
    const problems = diagnostics.get(owner);
    results.set(
      owner,
      problems ? { diagnostics: problems } : { file: file.replace(/\.ts$/, '.js') },
    );
  }
  return results;
}

export interface Run {
  readonly code: number | string;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a command to its end (killed after `timeoutMs`); never rejects. */
export function run(
  command: string,
  args: readonly string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number; input?: string },
): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    // A command that does not read its input may have exited before it is written: the pipe's
    // EPIPE is then no failure of the sample (its exit status and output say how it went).
    child.stdin.on('error', () => {});
    child.stdin.end(options.input ?? '');
    const timer = setTimeout(() => {
      stderr += `\n(killed after ${options.timeoutMs} ms)`;
      child.kill('SIGKILL');
    }, options.timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      resolve({ code: 'spawn failed', stdout, stderr: `${stderr}${error.message}` });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? signal ?? 'unknown', stdout, stderr });
    });
  });
}
