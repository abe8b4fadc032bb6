// The import-graph check must fail on each way a room can be broken, or CI would pass a layout
// that runs back up. Run by `pnpm lint` (node --test).
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { FLOORS, checkRoot } from './importGraph.mjs';

const root = mkdtempSync(join(tmpdir(), 'import-graph-'));
after(() => rmSync(root, { recursive: true, force: true }));

/** A source root of `files` (path → text) under a fresh folder; returns its path. */
function sources(name, files) {
  const base = join(root, name);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(base, path)), { recursive: true });
    writeFileSync(join(base, path), text);
  }
  return base;
}

const FLOORS_UNDER_TEST = ['low', ['left', 'right'], 'high', '.'];

describe('import graph', () => {
  it('passes imports that run down, type-only ones included', () => {
    const base = sources('down', {
      'low/a.ts': 'export const a = 1;\n',
      'left/b.ts': "import { a } from '../low/a.js';\nexport const b = a;\n",
      'high/c.ts': "import type { b } from '../left/b.js';\nimport { a } from '../low/a.js';\n",
      'index.ts': "export * from './high/c.js';\n",
    });
    assert.deepEqual(checkRoot(base, FLOORS_UNDER_TEST).problems, []);
  });

  it('fails an import of a floor above, naming both files', () => {
    const base = sources('up', {
      'low/a.ts': "import type { C } from '../high/c.js';\n",
      'high/c.ts': 'export type C = number;\n',
    });
    const { problems } = checkRoot(base, FLOORS_UNDER_TEST);
    assert.equal(problems.length, 1);
    assert.match(
      problems[0],
      /low\/a\.ts imports .*high\/c\.ts: 'low' may not import 'high', a floor above it/,
    );
  });

  it('fails an import between rooms on one floor', () => {
    const base = sources('side', {
      'left/b.ts': "export { r } from '../right/r.js';\n",
      'right/r.ts': 'export const r = 1;\n',
    });
    assert.match(checkRoot(base, FLOORS_UNDER_TEST).problems.join('\n'), /a room on its own floor/);
  });

  it('fails files that import each other around a loop, even inside one room', () => {
    const base = sources('loop', {
      'low/a.ts': "import { b } from './b.js';\nexport const a = b;\n",
      'low/b.ts': "import { c } from './c.js';\nexport const b = c;\n",
      'low/c.ts': "import { a } from './a.js';\nexport const c = a;\n",
    });
    const [problem, ...rest] = checkRoot(base, FLOORS_UNDER_TEST).problems;
    assert.deepEqual(rest, []);
    assert.match(
      problem,
      /around a loop: .*low\/(a|b|c)\.ts, .*low\/(a|b|c)\.ts, .*low\/(a|b|c)\.ts/,
    );
  });

  it('fails a folder that has no floor, so a new room must be given one', () => {
    const base = sources('unplaced', { 'attic/x.ts': 'export const x = 1;\n' });
    assert.match(checkRoot(base, FLOORS_UNDER_TEST).problems[0], /folder 'attic' has no floor/);
  });

  it("passes this repository's own packages", () => {
    for (const [path, floors] of Object.entries(FLOORS)) {
      assert.deepEqual(checkRoot(path, floors).problems, [], path);
    }
  });
});
