// Property (issue 56): a merge is the gem's shallow merge on the bytes. A random body and a
// random patch (string keys, some the body's, perhaps in another string format), merged by
// WriteCells in WRITE_MODE_MERGE or by a Put of an existing record, leave exactly what
// mergedBody (test/support/messagePackTrees.ts) models: the patch's keys replace the body's in
// place, its other keys follow in its order, and every value keeps the bytes its writer sent.
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { WriteMode } from '@shameless/proto';
import {
  INDEX_FIELDS,
  type Tree,
  bodyAndPatch,
  differenceOf,
  encodeTree,
  everyFormatBody,
  formatsDescribed,
  int,
  map,
  mergedBody,
  object,
  parseTree,
  str,
  withoutKeys,
} from '../support/messagePackTrees.js';
import {
  MODEL,
  type PropertyStore,
  checkProperty,
  createRecords,
  propertyTimeoutMs,
  usePropertyStore,
  writeCells,
} from '../support/propertyRuns.js';

const RUNS = 40;
/** A round merges several pairs at once, one record each. */
const PAIRS = 4;

describe('property: merges keep every value as sent, as the shallow merge model says', function () {
  this.timeout(propertyTimeoutMs(RUNS));
  const store = usePropertyStore();

  it('WriteCells in merge mode: onto a body, and onto a cell with no version yet', async () => {
    await checkProperty(
      fc.asyncProperty(
        fc.array(fc.tuple(bodyAndPatch, fc.boolean()), { minLength: 1, maxLength: PAIRS }),
        async (pairs) => {
          const { uuids } = await createRecords(store(), pairs.length);
          // A pair whose boolean is false merges onto nothing: absent counts as an empty map.
          const replaced = pairs.flatMap(([[body], first], i) => (first ? [{ body, i }] : []));
          await writeCells(
            store(),
            replaced.map(({ i }) => uuids[i]!),
            replaced.map(({ body }) => body),
            WriteMode.WRITE_MODE_REPLACE,
          );
          const merged = await writeCells(
            store(),
            uuids,
            pairs.map(([[, patch]]) => patch),
            WriteMode.WRITE_MODE_MERGE,
          );
          pairs.forEach(([[body, patch], first], i) => {
            const expected = mergedBody(first ? body : object({}), patch);
            expectStored(merged[i]!.version.body, expected, `pair ${i}, merged`);
          });
        },
      ),
      { runs: RUNS, examples: [[[[mergeOfEveryFormat(), true]]]] },
    );
  });

  it('Put of an existing record: the values but the index fields, merged into its base', async () => {
    await checkProperty(
      fc.asyncProperty(
        fc.array(bodyAndPatch, { minLength: 1, maxLength: PAIRS }),
        async (pairs) => {
          await Promise.all(
            pairs.map(async ([body, patch], i) => {
              const batch = store().nextBatch();
              const created = withIndexFields(body, batch);
              await put(store(), created);
              const updated = await put(store(), withIndexFields(patch, batch));
              const expected = mergedBody(created, withoutKeys(patch, INDEX_FIELDS));
              expectStored(updated, expected, `pair ${i}, put twice`);
            }),
          );
        },
      ),
      { runs: RUNS, examples: [[[mergeOfEveryFormat()]]] },
    );
  });
});

/** The every-format body, and a patch of some of its keys in other formats, and of new ones. */
function mergeOfEveryFormat(): [Tree & { kind: 'map' }, Tree & { kind: 'map' }] {
  const patch = map(
    [
      [str('ints', 'str32'), int(1, 'uint64')],
      [str('deep'), map([], 'map32')],
      [str('new', 'str16'), int(-1, 'int64')],
    ],
    'map16',
  );
  return [everyFormatBody(), patch];
}

/** A Put's values: the record's index fields (item 0 of its own batch) first, then `body`'s. */
function withIndexFields(body: Tree & { kind: 'map' }, batch: number): Tree & { kind: 'map' } {
  return map([
    [str('batch'), int(batch, 'uint32')],
    [str('item'), int(0, 'int8')],
    ...body.entries,
  ]);
}

async function put(store: PropertyStore, values: Tree): Promise<Uint8Array> {
  const { base } = await store.raw.put({
    model: MODEL,
    values: encodeTree(values),
    requestId: randomUUID(),
  });
  return base!.body;
}

function expectStored(bytes: Uint8Array, expected: Tree, what: string): void {
  if (Buffer.from(bytes).equals(encodeTree(expected))) return;
  const difference = differenceOf(
    formatsDescribed(expected),
    formatsDescribed(parseTree(Buffer.from(bytes))),
  );
  throw new Error(
    `${what}: other bytes than the model's: ${difference ?? 'the same tree, other bytes'}`,
  );
}
