// Property (issue 56): whatever body the server accepts, the SDK reads exactly, each value of
// the type docs/sdk.md maps it to (safe integers as numbers, larger ones as bigints, floats as
// numbers, Buffers, MessagePackExtensions, Maps for maps with keys of other types, a timestamp
// as a Date), through getCells, find and each alike; and what it read, written back, is the
// MessagePack the SDK's writer promises (docs/sdk.md, "Integers" and "Maps inside a body").
import fc from 'fast-check';
import { WriteMode } from '@shameless/proto';
import {
  bodies,
  describeSdkValue,
  expectDescribed,
  everyFormatBody,
  parseTree,
  sdkExpected,
  sdkWritten,
  formatsDescribed,
} from '../support/messagePackTrees.js';
import {
  type PropertyStore,
  VALUE_CELL,
  type WrittenCell,
  checkProperty,
  propertyTimeoutMs,
  usePropertyStore,
  writeBodies,
} from '../support/propertyRuns.js';

const RUNS = 25;

describe('property: the SDK reads every body exactly, and writes back what it read', function () {
  this.timeout(propertyTimeoutMs(RUNS));
  const store = usePropertyStore();

  it('getCells, find and each give each value its documented type and exact value; writeCells writes it back as promised', async () => {
    await checkProperty(
      fc.asyncProperty(bodies(6), async (trees) => {
        const { written } = await writeBodies(store(), trees, WriteMode.WRITE_MODE_REPLACE);
        const read = await readEveryWay(store(), written);
        for (const [source, values] of read) {
          values.forEach((value, i) =>
            expectDescribed(
              `${source}, body ${i}`,
              sdkExpected(written[i]!.tree),
              describeSdkValue(value),
            ),
          );
        }
        await expectWrittenBack(store(), written, read[0]![1]);
      }),
      { runs: RUNS, examples: [[[everyFormatBody()]]] },
    );
  });
});

/** The bodies the SDK read, by each way it reads cells, in the order written. */
async function readEveryWay(
  { model }: PropertyStore,
  written: readonly WrittenCell[],
): Promise<[string, unknown[]][]> {
  const keys = written.map(({ uuid }) => ({ uuid, cell: VALUE_CELL }) as const);
  const fromGetCells = (await model.getCells(keys)).map((cell) => cell?.body);
  const fromFind = await Promise.all(
    written.map(
      async ({ uuid }) => (await model.find(uuid, { cells: [VALUE_CELL] }))?.cell(VALUE_CELL).body,
    ),
  );
  const shards = [...new Set(written.map(({ version }) => version.shard))];
  const cursors = Object.fromEntries(
    shards.map((shard) => [
      shard,
      Math.min(
        ...written
          .filter(({ version }) => version.shard === shard)
          .map(({ version }) => Number(version.id)),
      ) - 1,
    ]),
  );
  const logged = new Map<string, unknown>();
  for await (const cell of model.each({ shards, cursors })) {
    if (cell.name === VALUE_CELL) logged.set(cell.uuid, cell.body);
  }
  return [
    ['getCells', fromGetCells],
    ['find', fromFind],
    ['each', written.map(({ uuid }) => logged.get(uuid))],
  ];
}

/**
 * Each body as read, written back with writeCells: the store then holds the tree the SDK's
 * writer makes of it (NaN payloads aside: a JS NaN need not keep one), or, for a body with a
 * timestamp (a Date, to the millisecond), a body the SDK reads as it read the first.
 */
async function expectWrittenBack(
  { model, raw }: PropertyStore,
  written: readonly WrittenCell[],
  read: readonly unknown[],
): Promise<void> {
  const results = await model.writeCells(
    written.map(({ uuid }, i) => ({
      uuid,
      cell: VALUE_CELL,
      body: read[i] as Record<string, unknown>,
      mode: 'replace' as const,
    })),
  );
  const keys = written.map(({ uuid }) => ({ uuid, cell: VALUE_CELL }) as const);
  const stored = (await raw.getCells({ model: model.name, keys })).results;
  const reread = await model.getCells(keys);
  written.forEach(({ uuid, tree }, i) => {
    const result = results[i]!;
    if (!result.ok) throw new Error(`writing back ${uuid} failed: ${String(result.error)}`);
    const what = `body ${i}, read and written back`;
    const promised = sdkWritten(tree);
    const bytes = Buffer.from(stored[i]!.cell!.body);
    // NaN payloads aside: a JS NaN need not keep one.
    const anyNaN = { nanPayload: false };
    if (promised === undefined) {
      expectDescribed(
        `${what} (read again)`,
        describeSdkValue(read[i]),
        describeSdkValue(reread[i]!.body),
      );
    } else {
      expectDescribed(
        what,
        formatsDescribed(promised, anyNaN),
        formatsDescribed(parseTree(bytes), anyNaN),
      );
    }
  });
}
