// Property (issue 56): whatever body the server accepts, the CLI prints exactly, each value in
// the JSON form docs/cli.md gives its type: integers exact to 64 bits, floats with a fraction or
// an exponent ({"$float"} for NaN and the infinities), {"$base64"}, {"$ext"} with a timestamp's
// instant, {"$map"} for a map a JSON object cannot hold. One `shameless where` a round prints
// every body the round wrote.
import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import fc from 'fast-check';
import {
  type ExactJson,
  bodies,
  cliExpected,
  describeCliJson,
  everyFormatBody,
  expectDescribed,
  parseJsonExactly,
} from '../support/messagePackTrees.js';
import {
  MODEL,
  VALUE_CELL,
  checkProperty,
  propertyTimeoutMs,
  usePropertyStore,
  writeBodies,
} from '../support/propertyRuns.js';

const CLI = join(dirname(fileURLToPath(import.meta.url)), '../../../../server/bin/shameless.js');
const RUNS = 10;

describe('property: the CLI prints every body exactly, each value typed as documented', function () {
  this.timeout(propertyTimeoutMs(RUNS));
  const store = usePropertyStore();

  it('shameless where prints each value of each body in its documented JSON form', async () => {
    await checkProperty(
      fc.asyncProperty(bodies(6), async (trees) => {
        const { batch } = await writeBodies(store(), trees);
        const printed = await printedBodies(store().fixture.address, batch);
        if (printed.length !== trees.length) {
          throw new Error(`where printed ${printed.length} records, ${trees.length} were written`);
        }
        trees.forEach((tree, item) => {
          expectDescribed(
            `body ${item}, printed`,
            cliExpected(tree),
            describeCliJson(printed[item]!),
          );
        });
      }),
      { runs: RUNS, examples: [[[everyFormatBody()]]] },
    );
  });
});

/** The body of each record of the batch, as `shameless where` prints them, in item order. */
async function printedBodies(address: string, batch: number): Promise<ExactJson[]> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [CLI, 'where', MODEL, `batch=${batch}`, '--cell', VALUE_CELL, '--address', address],
    { maxBuffer: 256 << 20 },
  );
  return stdout
    .trim()
    .split('\n')
    .map((line) => {
      const record = parseJsonExactly(line);
      return field(field(field(record, 'cells'), VALUE_CELL), 'body');
    });
}

function field(json: ExactJson, name: string): ExactJson {
  const entry =
    json !== null && typeof json === 'object' && !Array.isArray(json) && 'entries' in json
      ? (json as { entries: readonly [string, ExactJson][] }).entries.find(([key]) => key === name)
      : undefined;
  if (entry === undefined) throw new Error(`no "${name}" in the printed JSON`);
  return entry[1];
}
