// Shell commands in the guides checked without running them: a `pnpm` script exists, a
// `shameless` command (or a command's command: `group parked`) and each of its flags appear in
// its --help, a `pnpm bench` or `pnpm fuzz` flag in that program's --help, a script named by path
// exists.
// Applied to every shell block, so that a block skipped because it cannot run in CI (it runs for
// minutes, needs other hosts) still cannot name a flag or script that is gone.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

// pnpm's own commands, which are no script of ours.
const PNPM_COMMANDS = new Set([
  'install',
  'i',
  'add',
  'remove',
  'update',
  'exec',
  'dlx',
  'pack',
  'store',
  'list',
  'ls',
  'why',
  'init',
  'create',
]);

/** The scripts whose flags are checked, and the built program each runs (its --help lists them). */
const SCRIPT_CLIS: Readonly<Record<string, string>> = {
  bench: 'packages/bench/dist/src/cli.js',
  fuzz: 'packages/server/dist/test/fuzz/cli.js',
};

export class CommandChecker {
  readonly #helps = new Map<string, string>();
  readonly #scripts: Set<string>;

  constructor(private readonly repo: string) {
    const manifest = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as {
      scripts?: Record<string, string>;
    };
    this.#scripts = new Set(Object.keys(manifest.scripts ?? {}));
  }

  /** What is wrong with the commands of a shell block; `transcript`: only its `$ ` lines. */
  problems(text: string, transcript: boolean): string[] {
    const problems: string[] = [];
    for (const command of commandsOf(text, transcript)) {
      const words = wordsOf(command);
      while (words.length > 0 && /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[0]!)) words.shift();
      const [first, ...rest] = words;
      if (first === undefined) continue;
      if (first === 'pnpm') problems.push(...this.#pnpm(rest));
      else if (first === 'shameless') problems.push(...this.#shameless(rest));
      else if (first === 'node' && rest[0]?.endsWith('packages/server/bin/shameless.js')) {
        problems.push(...this.#shameless(rest.slice(1)));
      } else if (/^(\.\/)?(examples|packages|\.ci)\//.test(first)) {
        if (!existsSync(join(this.repo, first))) problems.push(`${first}: no such file`);
      }
    }
    return problems;
  }

  #pnpm(words: string[]): string[] {
    const [name, ...args] = words[0] === 'run' ? words.slice(1) : words;
    if (name === undefined || name.startsWith('-') || PNPM_COMMANDS.has(name)) return [];
    if (!this.#scripts.has(name)) return [`pnpm ${name}: no such script in package.json`];
    const cli = SCRIPT_CLIS[name];
    if (cli === undefined) return [];
    const help = this.#help(name, [join(this.repo, cli), '--help']);
    return unknownFlags(args, help).map(
      (flag) => `pnpm ${name} ${flag}: not in pnpm ${name} --help`,
    );
  }

  #shameless(words: string[]): string[] {
    const [command, ...args] = words;
    if (command === undefined || command.startsWith('-')) return [];
    const cli = join(this.repo, 'packages/server/bin/shameless.js');
    const commands = this.#help('', [cli, '--help']);
    if (!new RegExp(`^\\s+${command}\\b`, 'm').test(commands)) {
      return [`shameless ${command}: not a command of shameless --help`];
    }
    let name = command;
    let flags = args;
    let help = this.#help(name, [cli, command, '--help']);
    // A command with commands of its own (`group`) takes one of them, whose --help has the flags.
    const [sub, ...rest] = args;
    if (sub !== undefined && !sub.startsWith('-') && /^Commands:/m.test(help)) {
      if (!new RegExp(`^\\s+${sub}\\b`, 'm').test(help.slice(help.search(/^Commands:/m)))) {
        return [`shameless ${command} ${sub}: not a command of shameless ${command} --help`];
      }
      name = `${command} ${sub}`;
      flags = rest;
      help = this.#help(name, [cli, command, sub, '--help']);
    }
    return unknownFlags(flags, help).map(
      (flag) => `shameless ${name} ${flag}: not in shameless ${name} --help`,
    );
  }

  #help(key: string, args: string[]): string {
    let help = this.#helps.get(key);
    if (help === undefined) {
      help = execFileSync(process.execPath, args, { encoding: 'utf8' });
      this.#helps.set(key, help);
    }
    return help;
  }
}

function unknownFlags(args: readonly string[], help: string): string[] {
  return args
    .filter((arg) => arg.startsWith('--'))
    .map((arg) => arg.split('=')[0]!)
    .filter((flag) => !new RegExp(`(^|[\\s,[])${flag}(?=[\\s,=<[]|$)`, 'm').test(help));
}

/**
 * The simple commands of a block: lines joined where they end in `\`, comments dropped, split at
 * `&&`, `||`, `;` and `|`. In a transcript only the `$ ` lines count (the others are output).
 */
export function commandsOf(text: string, transcript: boolean): string[] {
  const joined = text.replace(/\\\n/g, ' ').split('\n');
  const lines = transcript
    ? joined.filter((line) => line.startsWith('$ ')).map((line) => line.slice(2))
    : joined;
  return lines.flatMap((line) => splitOutsideQuotes(withoutComment(line)));
}

/** The line without its shell comment (a `#` outside quotes, at a word's start). */
export function withoutComment(line: string): string {
  let quote: string | undefined;
  for (let i = 0; i < line.length; i++) {
    const char = line[i]!;
    if (quote) {
      if (char === quote) quote = undefined;
    } else if (char === "'" || char === '"') quote = char;
    else if (char === '#' && (i === 0 || /\s/.test(line[i - 1]!))) return line.slice(0, i);
  }
  return line;
}

function splitOutsideQuotes(line: string): string[] {
  const parts: string[] = [];
  let quote: string | undefined;
  let current = '';
  for (let i = 0; i < line.length; i++) {
    const char = line[i]!;
    if (quote) {
      if (char === quote) quote = undefined;
      current += char;
    } else if (char === "'" || char === '"') {
      quote = char;
      current += char;
    } else if (char === ';' || char === '|' || (char === '&' && line[i + 1] === '&')) {
      if (line[i + 1] === char) i++;
      parts.push(current);
      current = '';
    } else current += char;
  }
  parts.push(current);
  return parts.map((part) => part.trim()).filter((part) => part !== '');
}

/** Shell words: bare words and quoted ones, quotes removed. */
export function wordsOf(command: string): string[] {
  return [...command.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)].map(
    (match) => match[1] ?? match[2] ?? match[3]!,
  );
}
