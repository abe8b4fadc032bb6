// The model folder is a stack: each file imports only files of lower layers (type-only imports
// and module augmentations included), so there is no circle and no upward arrow. Reads the
// sources' import specifiers; a new file must be given its layer here.

import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const MODEL_DIR = join(dirname(fileURLToPath(import.meta.url)), '../../src/model');

/** Bottom first. A file may import files of the layers below its own, never its own or above. */
const LAYERS: readonly (readonly string[])[] = [
  ['schema', 'errors', 'integers', 'callOptions'],
  ['definition', 'storedDefinition'],
  ['body', 'bodyAsSent', 'conditions'], // the wire codec
  ['modelPort'],
  ['cell'],
  ['record'],
  ['query', 'cellStream', 'consumer', 'consumerGroups'],
  ['modelIndex'],
  ['model'],
  ['store'],
  ['index'],
];

/** The sibling files a source names: `'./cell.js'` in an import, export or augmentation. */
export function siblingImports(source: string): string[] {
  const names = new Set<string>();
  for (const match of source.matchAll(/['"]\.\/([\w-]+)\.js['"]/g)) names.add(match[1] as string);
  return [...names].sort();
}

/** Arrows that break the stack: upward, sideways (same layer), or to an unknown file. */
export function stackViolations(
  imports: ReadonlyMap<string, readonly string[]>,
  layers: readonly (readonly string[])[],
): string[] {
  const layerOf = new Map<string, number>();
  layers.forEach((files, layer) => files.forEach((file) => layerOf.set(file, layer)));
  const violations: string[] = [];
  for (const [file, targets] of imports) {
    const from = layerOf.get(file);
    if (from === undefined) {
      violations.push(`${file}.ts has no layer: add it to LAYERS`);
      continue;
    }
    for (const target of targets) {
      const to = layerOf.get(target);
      if (to === undefined) violations.push(`${file} -> ${target}: ${target} has no layer`);
      else if (to >= from) {
        violations.push(`${file} -> ${target}: ${to === from ? 'same layer' : 'upward'}`);
      }
    }
  }
  return violations;
}

function modelImports(): Map<string, string[]> {
  const imports = new Map<string, string[]>();
  for (const entry of readdirSync(MODEL_DIR)) {
    if (!entry.endsWith('.ts')) continue;
    imports.set(entry.slice(0, -3), siblingImports(readFileSync(join(MODEL_DIR, entry), 'utf8')));
  }
  return imports;
}

describe('the model folder is a one-way stack', () => {
  it('no file imports its own layer or one above (so there is no circle)', () => {
    const imports = modelImports();
    expect(imports.size, 'files read').to.be.greaterThan(10);
    expect(stackViolations(imports, LAYERS)).to.deep.equal([]);
  });

  it('the check catches an upward arrow, a circle and a file with no layer', () => {
    const layers = [['schema'], ['cell'], ['record']];
    expect(
      stackViolations(
        new Map([
          ['cell', ['record']],
          ['record', ['cell']],
          ['extra', []],
        ]),
        layers,
      ),
    ).to.deep.equal(['cell -> record: upward', 'extra.ts has no layer: add it to LAYERS']);
    expect(
      siblingImports(`import type { X } from './cell.js';\ndeclare module './modelPort.js' {}`),
    ).to.deep.equal(['cell', 'modelPort']);
  });
});
