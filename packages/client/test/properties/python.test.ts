// Property (issue 56): whatever body the server accepts, a Python client generated from proto/
// reads exactly: Debian's python3 with grpcio and msgpack (the packages examples/python uses)
// reads each round's cells with one GetCells and prints what msgpack made of every value
// (test/support/describeBodies.py); each must be the value written, of the Python type it maps
// to (int, float, str, bytes, ExtType, Timestamp, list, dict with keys of any type). A reserved
// extension type is the one thing msgpack refuses unless the client passes an ext_hook.
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import fc from 'fast-check';
import {
  type Described,
  bodies,
  everyFormatBody,
  expectDescribed,
  holdsExtension,
  pythonDescription,
  type Tree,
} from '../support/messagePackTrees.js';
import {
  MODEL,
  VALUE_CELL,
  checkProperty,
  describedByScript,
  propertyTimeoutMs,
  usePropertyStore,
  writeBodies,
} from '../support/propertyRuns.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const REPO = join(HERE, '../../../../..');
const SCRIPT = join(REPO, 'packages/client/test/support/describeBodies.py');
const PYTHON = process.env.PYTHON ?? '/usr/bin/python3';
const RUNS = 15;

/**
 * msgpack's ExtType takes the application types (0 to 127) only: a body holding a reserved one
 * (-128 to -2; -1 is the timestamp) fails to decode without an ext_hook of the client's own.
 */
const RESERVED_TYPE_REFUSED: Described = ['error', 'ValueError', 'code must be 0~127'];
const holdsReservedExtension = (tree: Tree) => holdsExtension(tree, (type) => type < -1);

/** describeBodies.py's line for one body. */
interface PythonReading {
  readonly default: Described;
  readonly anyExtension: Described;
}

describe('property: a Python client reads every body exactly', function () {
  this.timeout(propertyTimeoutMs(RUNS));
  const store = usePropertyStore();
  let stubs: string;

  before(async () => {
    stubs = await generatePythonStubs();
  });

  after(() => stubs && rm(stubs, { recursive: true, force: true }));

  it("msgpack's reading of each value is the value written, of its Python type", async () => {
    await checkProperty(
      fc.asyncProperty(bodies(6), async (trees) => {
        const { written } = await writeBodies(store(), trees);
        const read = await describedByPython(
          store().fixture.address,
          written.map(({ uuid }) => uuid),
          stubs,
        );
        trees.forEach((tree, i) => {
          const expected = pythonDescription(tree);
          const { default: plain = [], anyExtension = [] } = read[i] ?? {};
          const refused = holdsReservedExtension(tree);
          expectDescribed(
            `body ${i}, msgpack's defaults`,
            refused ? RESERVED_TYPE_REFUSED : expected,
            plain,
          );
          expectDescribed(`body ${i}, an ext_hook for every type`, expected, anyExtension);
        });
      }),
      { runs: RUNS, examples: [[[everyFormatBody()]]] },
    );
  });
});

/** Generates the stubs as examples/python/run.sh does, into a directory of their own. */
async function generatePythonStubs(): Promise<string> {
  const directory = await mkdtemp(join(tmpdir(), 'shameless-python-'));
  const protos = join(REPO, 'proto/shameless/v1');
  const files = (await readdir(protos)).filter((name) => name.endsWith('.proto'));
  const { stdout: plugin } = await promisify(execFile)('sh', [
    '-c',
    'command -v grpc_python_plugin',
  ]);
  await promisify(execFile)('protoc', [
    '-I',
    join(REPO, 'proto'),
    `--python_out=${directory}`,
    `--grpc_out=${directory}`,
    `--plugin=protoc-gen-grpc=${plugin.trim()}`,
    ...files.map((name) => join(protos, name)),
  ]);
  return directory;
}

/** describeBodies.py's line for each cell, in order. */
function describedByPython(
  address: string,
  uuids: readonly string[],
  stubs: string,
): Promise<PythonReading[]> {
  return describedByScript<PythonReading>(
    PYTHON,
    [SCRIPT],
    JSON.stringify({ address, model: MODEL, keys: uuids.map((uuid) => [uuid, VALUE_CELL]) }),
    { ...process.env, PYTHONPATH: stubs },
  );
}
