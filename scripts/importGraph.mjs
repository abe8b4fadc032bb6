#!/usr/bin/env node
// The import graph of each package's source, checked against the floors its folders stand on.
//
// A folder is named for what it owns, and imports between folders go one way: each folder of a
// package may import the folders on the floors below it, never those above (see FLOORS). No two
// files may import each other, directly or around a loop. `pnpm lint` runs this with `--check`,
// so CI fails when an import runs back up; without `--check` it prints each package's floors and
// the imports between them, bottom first.
//
// Imports are read with TypeScript's own scanner (`ts.preProcessFile`), type-only ones included:
// a type that lives a floor too high is a room in the wrong place all the same.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * Per source root, its folders from the bottom floor up. A file directly in the root stands on
 * the floor named '.'; folders on one floor (an array) may not import each other. A folder not
 * listed is an error, so a new room has to be given its floor.
 */
export const FLOORS = {
  'packages/server/src/engine': [
    'base',
    'model',
    'mysql',
    'schema',
    'read',
    'log',
    ['write', 'groups'],
    'moves',
    '.',
  ],
  'packages/server/src/grpc': ['call', ['middleware', 'service'], '.'],
  'packages/server/src': ['engine', 'grpc', 'metrics', 'serving', 'commands', '.'],
  'packages/client/src/transport': ['call', 'policy', ['middleware', 'batch', 'wire'], '.'],
  'packages/client/src': ['transport', 'groups', 'model', '.'],
  'packages/bench/src': ['load', ['measure', 'subjects'], 'workloads', 'report', '.'],
};

function sourceFiles(directory) {
  const files = [];
  for (const name of readdirSync(directory)) {
    const path = join(directory, name);
    if (statSync(path).isDirectory()) files.push(...sourceFiles(path));
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) files.push(path);
  }
  return files;
}

/** Relative imports of `file`, resolved to the .ts files they name. */
function importsOf(file) {
  const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  return importedFiles
    .map((imported) => imported.fileName)
    .filter((name) => name.startsWith('.'))
    .map((name) => resolve(dirname(file), name).replace(/\.js$/, '.ts'));
}

/** The folder of `file` directly under `root` ('.' for a file in the root itself). */
function roomOf(root, file) {
  const parts = relative(root, file).split(sep);
  return parts.length === 1 ? '.' : parts[0];
}

function floorIndex(floors, room) {
  return floors.findIndex((floor) =>
    Array.isArray(floor) ? floor.includes(room) : floor === room,
  );
}

/** Files that import each other around a loop: strongly connected components of two or more. */
function cycles(graph) {
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const found = [];
  let next = 0;
  const visit = (file) => {
    index.set(file, next);
    low.set(file, next);
    next += 1;
    stack.push(file);
    onStack.add(file);
    for (const target of graph.get(file) ?? []) {
      if (!graph.has(target)) continue;
      if (!index.has(target)) {
        visit(target);
        low.set(file, Math.min(low.get(file), low.get(target)));
      } else if (onStack.has(target)) {
        low.set(file, Math.min(low.get(file), index.get(target)));
      }
    }
    if (low.get(file) === index.get(file)) {
      const component = [];
      let member;
      do {
        member = stack.pop();
        onStack.delete(member);
        component.push(member);
      } while (member !== file);
      if (component.length > 1) found.push(component);
    }
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return found;
}

/** Checks one source root; returns its problems and the counts of imports between rooms. */
export function checkRoot(rootPath, floors) {
  const root = resolve(REPO, rootPath);
  const problems = [];
  const between = new Map();
  const graph = new Map();
  for (const file of sourceFiles(root)) {
    const targets = importsOf(file);
    graph.set(file, targets);
    const from = roomOf(root, file);
    const fromFloor = floorIndex(floors, from);
    if (fromFloor < 0) {
      problems.push(`${relative(REPO, file)}: folder '${from}' has no floor in ${rootPath}`);
      continue;
    }
    for (const target of targets) {
      if (!target.startsWith(root + sep)) continue;
      const to = roomOf(root, target);
      if (to === from) continue;
      const toFloor = floorIndex(floors, to);
      const key = `${from} -> ${to}`;
      between.set(key, (between.get(key) ?? 0) + 1);
      if (toFloor >= fromFloor) {
        problems.push(
          `${relative(REPO, file)} imports ${relative(REPO, target)}: '${from}' may not import '${to}', ` +
            (toFloor === fromFloor ? 'a room on its own floor' : 'a floor above it'),
        );
      }
    }
  }
  for (const component of cycles(graph)) {
    problems.push(
      `these files import each other around a loop: ${component
        .map((file) => relative(REPO, file))
        .sort()
        .join(', ')}`,
    );
  }
  return { problems, between };
}

function main() {
  const check = process.argv.includes('--check');
  if (process.argv.includes('--help')) {
    console.log(
      'usage: node scripts/importGraph.mjs [--check]\n\n' +
        "Prints each package's folders by floor, bottom first, and the imports between them.\n" +
        '--check  print only problems, and exit 1 when an import runs back up or files import\n' +
        '         each other around a loop (pnpm lint runs this).',
    );
    return;
  }
  let failed = false;
  // Nested roots (the engine inside the server's source) see the same loops: each is told once.
  const told = new Set();
  for (const [rootPath, floors] of Object.entries(FLOORS)) {
    const { problems, between } = checkRoot(rootPath, floors);
    if (!check) {
      console.log(`${rootPath}, bottom floor first:`);
      floors.forEach((floor, level) => {
        for (const room of [floor].flat()) {
          const down = [...between]
            .filter(([key]) => key.startsWith(`${room} -> `))
            .map(([key, count]) => `${key.split(' -> ')[1]} (${count})`);
          console.log(
            `  ${level + 1}. ${room}${down.length ? `  imports ${down.join(', ')}` : ''}`,
          );
        }
      });
    }
    for (const problem of problems) {
      if (!told.has(problem)) console.error(`import graph: ${problem}`);
      told.add(problem);
    }
    failed ||= problems.length > 0;
  }
  if (failed) {
    console.error('import graph: move the type or helper down a floor, or the importing file up.');
    process.exitCode = 1;
  } else if (check) {
    console.log(`import graph: ${Object.keys(FLOORS).length} source roots, every import runs down`);
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
