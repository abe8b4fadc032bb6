// Links in the repository's Markdown, checked without a network: a relative link names a file or
// folder of the checkout, an anchor names a heading of the file it points into (GitHub's
// anchors) or a line of a source file (#L12, #L12-L20), and an http(s) link is well formed. Paths
// written as code (`packages/client/src/index.ts`) must exist too, so that a guide that names a
// source file notices when the file moves.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { anchorsOf, parseMarkdown, type MarkdownFile } from './markdown.js';

// Code spans that name a path of the checkout: they start with one of its top-level folders.
const REPO_PATH = /^(packages|examples|proto|docs|\.ci|docker)\/[\w./*-]*$/;

export class LinkChecker {
  readonly #parsed = new Map<string, MarkdownFile>();

  constructor(private readonly repo: string) {}

  /** `path:line: what is wrong`, for every link of the file (relative to the checkout). */
  problems(path: string): string[] {
    const file = this.#file(path);
    const problems: string[] = [];
    for (const link of file.links) {
      const problem = this.#problem(path, link.target);
      if (problem) problems.push(`${path}:${link.line}: ${link.target}: ${problem}`);
    }
    for (const span of file.codeSpans) {
      if (!REPO_PATH.test(span.text)) continue;
      if (!this.#pathExists(span.text)) {
        problems.push(`${path}:${span.line}: \`${span.text}\`: no such file or folder`);
      }
    }
    return problems;
  }

  #problem(from: string, target: string): string | undefined {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return externalProblem(target);
    const [pathPart = '', anchor] = splitAnchor(target);
    const resolved = pathPart === '' ? from : normalize(join(dirname(from), decodeURI(pathPart)));
    if (resolved.startsWith('..')) return 'points outside the checkout';
    const absolute = join(this.repo, resolved);
    if (!existsSync(absolute)) return `no such file or folder (${resolved})`;
    if (anchor === undefined) return undefined;
    if (resolved.endsWith('.md')) {
      return anchorsOf(this.#file(resolved)).has(decodeURIComponent(anchor))
        ? undefined
        : `no heading of ${resolved} has the anchor #${anchor}`;
    }
    const lines = /^L(\d+)(?:-L(\d+))?$/.exec(anchor);
    if (!lines || statSync(absolute).isDirectory()) return `#${anchor}: not a heading or a line`;
    const count = readFileSync(absolute, 'utf8').split('\n').length;
    return Number(lines[2] ?? lines[1]) <= count ? undefined : `#${anchor}: past the file's end`;
  }

  /** Whether the path exists; a `*` in it matches any part of one name. */
  #pathExists(path: string): boolean {
    let candidates = [''];
    for (const part of path.split('/').filter((p) => p !== '')) {
      if (!part.includes('*')) {
        candidates = candidates.map((folder) => join(folder, part));
        continue;
      }
      const pattern = new RegExp(
        `^${part.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`,
      );
      candidates = candidates.flatMap((folder) => {
        const absolute = join(this.repo, folder);
        if (!existsSync(absolute) || !statSync(absolute).isDirectory()) return [];
        return readdirSync(absolute)
          .filter((name) => pattern.test(name))
          .map((name) => join(folder, name));
      });
    }
    return candidates.some((candidate) => existsSync(join(this.repo, candidate)));
  }

  #file(path: string): MarkdownFile {
    let file = this.#parsed.get(path);
    if (!file) {
      file = parseMarkdown(readFileSync(join(this.repo, path), 'utf8'));
      this.#parsed.set(path, file);
    }
    return file;
  }
}

function splitAnchor(target: string): [string, string | undefined] {
  const hash = target.indexOf('#');
  return hash === -1 ? [target, undefined] : [target.slice(0, hash), target.slice(hash + 1)];
}

/** Links that leave the checkout are not fetched; they must be well formed http(s) URLs. */
export function externalProblem(target: string): string | undefined {
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    return 'not a well-formed URL';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    return 'only http(s) links leave the checkout';
  if (!/^[a-z0-9-]+(\.[a-z0-9-]+)+$/i.test(url.hostname))
    return `no such host name: ${url.hostname}`;
  return undefined;
}
