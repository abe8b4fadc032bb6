// Where a profiled frame is in the source, as a person would open it: compiled JavaScript is
// mapped back through the source map beside it (tsc writes one for every file) when the
// original file is on disk, and paths are shown from the repository root, or from the package
// name for dependencies.
import { existsSync, readFileSync } from 'node:fs';
import { SourceMap, type SourceMapPayload } from 'node:module';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export class SourceLocator {
  readonly #maps = new Map<string, { map: SourceMap; sourceRoot: string } | null>();

  /** Paths are shown relative to `root`. */
  constructor(readonly root: string) {}

  /**
   * `file:line` of a V8 call frame (0-based line and column); the file alone when it has no
   * line, and `(native)` when it has no file (a builtin or a binding).
   */
  locate(url: string, lineNumber: number, columnNumber: number): string {
    if (url === '') return '(native)';
    if (!url.startsWith('file://')) return lineNumber < 0 ? url : `${url}:${lineNumber + 1}`;
    let path = fileURLToPath(url);
    let line = lineNumber + 1;
    const mapped = lineNumber < 0 ? undefined : this.#original(path, lineNumber, columnNumber);
    if (mapped) ({ path, line } = mapped);
    return lineNumber < 0 ? this.#show(path) : `${this.#show(path)}:${line}`;
  }

  #original(path: string, lineNumber: number, columnNumber: number) {
    const source = this.#mapOf(path);
    if (!source) return undefined;
    const entry = source.map.findEntry(lineNumber, columnNumber) as {
      originalSource?: string;
      originalLine?: number;
    };
    if (entry.originalSource === undefined || entry.originalLine === undefined) return undefined;
    const original = resolve(dirname(path), source.sourceRoot, entry.originalSource);
    return existsSync(original) ? { path: original, line: entry.originalLine + 1 } : undefined;
  }

  #mapOf(path: string) {
    let known = this.#maps.get(path);
    if (known === undefined) {
      known = null;
      try {
        const payload = JSON.parse(readFileSync(`${path}.map`, 'utf8')) as SourceMapPayload;
        known = { map: new SourceMap(payload), sourceRoot: payload.sourceRoot || '' };
      } catch {
        // No map (or not one we can read): the compiled location stands.
      }
      this.#maps.set(path, known);
    }
    return known;
  }

  #show(path: string): string {
    const dependency = path.lastIndexOf('/node_modules/');
    if (dependency >= 0) return path.slice(dependency + '/node_modules/'.length);
    return relative(this.root, path);
  }
}
