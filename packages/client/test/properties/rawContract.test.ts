// Property (issue 56): whatever body the server accepts reads back through the raw contract as
// the very bytes written, every format as its writer chose it (a 5 as a uint64, a short string
// as a str32, a float32 NaN with its payload), whichever call wrote it and whichever read it.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import fc from 'fast-check';
import { type Cell as WireCell, WriteMode } from '@shameless/proto';
import {
  type Tree,
  bodyTree,
  encodeTree,
  everyFormatBody,
  int,
  intFormatsFor,
  map,
  mapFormatsFor,
  parseTree,
  str,
  differenceOf,
  formatsDescribed,
} from '../support/messagePackTrees.js';
import {
  MODEL,
  type PropertyStore,
  VALUE_CELL,
  checkProperty,
  createRecords,
  hex,
  propertyTimeoutMs,
  usePropertyStore,
  writeCells,
} from '../support/propertyRuns.js';

const RUNS = 25;

/** How a body is written: in a batch, on its own, or as the values a Put creates a record with. */
type Route = 'WriteCells' | 'WriteCell' | 'Put';

describe('property: bodies read back through the raw contract as the bytes written', function () {
  this.timeout(propertyTimeoutMs(RUNS));
  const store = usePropertyStore();

  it('WriteCells, WriteCell and Put keep each body as sent; GetCells, GetCell, Where, FetchLatestCells and Each return it', async () => {
    const everyFormat = everyFormatBody();
    await checkProperty(
      fc.asyncProperty(
        fc.array(fc.tuple(bodyTree, fc.constantFrom<Route>('WriteCells', 'WriteCell', 'Put')), {
          minLength: 1,
          maxLength: 6,
        }),
        async (cases) => {
          const written = await writeEachByItsRoute(store(), cases);
          for (const [source, cells] of await readEveryWay(store(), written)) {
            cells.forEach((cell, i) => expectSameBytes(cell, written[i]!, source));
          }
        },
      ),
      {
        runs: RUNS,
        examples: [
          [
            [
              [everyFormat, 'WriteCells'],
              [everyFormat, 'WriteCell'],
              [everyFormat, 'Put'],
            ],
          ],
        ],
      },
    );
  });
});

interface WrittenBody {
  /** The batch of the record, which Where finds it by. */
  readonly batch: number;
  readonly uuid: string;
  readonly cell: string;
  readonly version: WireCell;
  /** The bytes the cell must hold: the body, or for a Put the values it was created with. */
  readonly tree: Tree;
}

/** Item i of one batch holds cases[i]'s body, written by its route. */
async function writeEachByItsRoute(
  store: PropertyStore,
  cases: readonly (readonly [Tree, Route])[],
): Promise<WrittenBody[]> {
  const { batch, uuids } = await createRecords(store, cases.length);
  const batched = cases.flatMap(([tree, route], i) =>
    route === 'WriteCells' ? [{ tree, i }] : [],
  );
  const fromBatch = await writeCells(
    store,
    batched.map(({ i }) => uuids[i]!),
    batched.map(({ tree }) => tree),
    WriteMode.WRITE_MODE_REPLACE,
  );
  return Promise.all(
    cases.map(async ([tree, route], i): Promise<WrittenBody> => {
      if (route === 'WriteCells') {
        return { batch, ...fromBatch[batched.findIndex((entry) => entry.i === i)]! };
      }
      if (route === 'WriteCell') {
        const { cell } = await store.raw.writeCell({
          model: MODEL,
          uuid: uuids[i]!,
          cell: VALUE_CELL,
          body: encodeTree(tree),
          mode: WriteMode.WRITE_MODE_REPLACE,
          requestId: randomUUID(),
        });
        return { batch, uuid: uuids[i]!, cell: VALUE_CELL, version: cell!, tree };
      }
      // A Put of an existing record would merge; this one creates a record of its own, in a
      // batch of its own (its index fields in the body, in formats an encoder would not pick).
      const ownBatch = store.nextBatch();
      const values = withIndexFields(tree, ownBatch, i);
      const { uuid, base, created } = await store.raw.put({
        model: MODEL,
        values: encodeTree(values),
        requestId: randomUUID(),
      });
      expect(created, `the Put of batch ${ownBatch} created a record`).to.equal(true);
      return { batch: ownBatch, uuid, cell: 'base', version: base!, tree: values };
    }),
  );
}

/** `body` with the model's index fields first, each integer in its widest format. */
function withIndexFields(body: Tree, batch: number, item: number): Tree {
  if (body.kind !== 'map') throw new Error('a body is a map');
  const entries = [
    [str('batch', 'str8'), int(batch, intFormatsFor(BigInt(batch)).at(-1))],
    [str('item'), int(item, 'int16')],
    ...body.entries,
  ] as const;
  const format = mapFormatsFor(entries.length).includes(body.format) ? body.format : undefined;
  return map(entries, format);
}

/** Every read of the contract that returns cell versions, each answering one per written body. */
async function readEveryWay(
  store: PropertyStore,
  written: readonly WrittenBody[],
): Promise<[string, (WireCell | undefined)[]][]> {
  const { raw } = store;
  const keys = written.map(({ uuid, cell }) => ({ uuid, cell }));
  const byVersion = (cells: readonly WireCell[]) =>
    written.map(({ version }) =>
      cells.find((cell) => cell.shard === version.shard && cell.id === version.id),
    );

  const getCells = (await raw.getCells({ model: MODEL, keys })).results.map(
    (result) => result.cell,
  );
  const getCell = await Promise.all(
    keys.map(async (key) => (await raw.getCell({ model: MODEL, ...key, refKey: undefined })).cell),
  );
  const batches = [...new Set(written.map(({ batch }) => batch))];
  const where = byVersion(
    (await Promise.all(batches.map((batch) => raw.where(batch, ['base', VALUE_CELL])))).flatMap(
      (pages) => pages.flatMap((page) => page.records.flatMap((record) => record.cells)),
    ),
  );
  const log = await Promise.all(
    written.map(async ({ version }) => {
      const page = await raw.fetchLatestCells({
        model: MODEL,
        shard: version.shard,
        cursor: version.id - 1n,
        limit: 1,
      });
      return page.cells[0];
    }),
  );
  const shards = [...new Set(written.map(({ version }) => version.shard))];
  const each = byVersion(
    (
      await raw.each({
        shards,
        cursors: Object.fromEntries(
          shards.map((shard) => [
            shard,
            written
              .filter(({ version }) => version.shard === shard)
              .reduce(
                (least, { version }) => (version.id < least ? version.id : least),
                2n ** 63n,
              ) - 1n,
          ]),
        ),
      })
    ).flatMap((message) => (message.event?.$case === 'batch' ? message.event.batch.cells : [])),
  );
  return [
    ['the write', written.map(({ version }) => version)],
    ['GetCells', getCells],
    ['GetCell', getCell],
    ['Where', where],
    ['FetchLatestCells', log],
    ['Each', each],
  ];
}

function expectSameBytes(cell: WireCell | undefined, written: WrittenBody, source: string): void {
  const what = `${source}: ${written.cell} of ${written.uuid}`;
  if (cell === undefined) throw new Error(`${what}: not found`);
  if (Buffer.from(cell.body).equals(encodeTree(written.tree))) return;
  throw new Error(`${what}: other bytes than written: ${differenceFrom(written.tree, cell.body)}`);
}

/** Where `bytes` first differ from the tree, or what they are when not one MessagePack value. */
function differenceFrom(tree: Tree, bytes: Uint8Array): string | undefined {
  let read: Tree;
  try {
    read = parseTree(Buffer.from(bytes));
  } catch (error) {
    return `${hex(bytes)} (${String(error)})`;
  }
  return differenceOf(formatsDescribed(tree), formatsDescribed(read));
}
