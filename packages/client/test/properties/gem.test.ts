// Property (issue 56): whatever body the server accepts, the Ruby gem reads exactly. The gem
// reads a cell's body from its content table and decodes it with msgpack-ruby's
// MessagePack.unpack (Shameless::Cell#deserialize_body), so each round reads the rows it wrote
// with plain SQL, checks they hold the bytes written, and has Ruby decode them
// (test/support/describeBodies.rb; Debian's ruby and ruby-msgpack, which .ci/run installs).
// msgpack-ruby registers no extension type by default, so the gem's own call refuses a body
// holding any extension; read with allow_unknown_ext, every value is the one written.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import mysql from 'mysql2/promise';
import {
  type Described,
  bodies,
  encodeTree,
  everyFormatBody,
  expectDescribed,
  holdsExtension,
  rubyDescription,
} from '../support/messagePackTrees.js';
import {
  MODEL,
  type WrittenCell,
  checkProperty,
  describedByScript,
  hex,
  propertyTimeoutMs,
  usePropertyStore,
  writeBodies,
} from '../support/propertyRuns.js';

const SCRIPT = join(
  dirname(fileURLToPath(import.meta.url)),
  '../../../test/support/describeBodies.rb',
);
const RUNS = 20;

/** What MessagePack.unpack raises for any extension type that nothing registered. */
const UNKNOWN_EXTENSION: Described = [
  'error',
  'MessagePack::UnknownExtTypeError',
  'unexpected extension type',
];

/** describeBodies.rb's line for one body. */
interface RubyReading {
  readonly gem: Described;
  readonly withExtensions: Described;
}

describe("property: the gem's decoder reads every body exactly", function () {
  this.timeout(propertyTimeoutMs(RUNS));
  const store = usePropertyStore();
  let sql: mysql.Connection;

  before(async () => {
    sql = await mysql.createConnection(store().fixture.databaseUrl);
  });

  after(() => sql?.end());

  it('each content row holds the bytes written, and msgpack-ruby reads each value as written', async () => {
    await checkProperty(
      fc.asyncProperty(bodies(6), async (trees) => {
        const { written } = await writeBodies(store(), trees);
        const rows = await storedBodies(sql, written);
        rows.forEach((row, i) => {
          if (!row.equals(encodeTree(trees[i]!))) {
            throw new Error(`body ${i}: its content row holds other bytes than written`);
          }
        });
        const read = await describedByRuby(rows);
        trees.forEach((tree, i) => {
          const expected = rubyDescription(tree);
          const { gem = [], withExtensions = [] } = read[i] ?? {};
          expectDescribed(
            `body ${i}, the gem's MessagePack.unpack`,
            holdsExtension(tree) ? UNKNOWN_EXTENSION : expected,
            gem,
          );
          expectDescribed(`body ${i}, with allow_unknown_ext`, expected, withExtensions);
        });
      }),
      { runs: RUNS, examples: [[[everyFormatBody()]]] },
    );
  });
});

/** Each written version's body as its content row holds it, read as the gem reads rows. */
async function storedBodies(
  sql: mysql.Connection,
  written: readonly WrittenCell[],
): Promise<Buffer[]> {
  return Promise.all(
    written.map(async ({ uuid, cell, version }) => {
      const table = `sdk_${MODEL}_${String(version.shard).padStart(6, '0')}`;
      const [rows] = await sql.query<mysql.RowDataPacket[]>(
        `SELECT body FROM \`${table}\` WHERE uuid = ? AND column_name = ? AND ref_key = ?`,
        [uuid, cell, version.refKey],
      );
      if (rows.length !== 1)
        throw new Error(`${table} has ${rows.length} rows for ${uuid} ${cell}`);
      return rows[0]!.body as Buffer;
    }),
  );
}

/** describeBodies.rb's line for each body, in order. */
function describedByRuby(rows: readonly Buffer[]): Promise<RubyReading[]> {
  return describedByScript<RubyReading>(
    'ruby',
    [SCRIPT],
    rows.map((row) => hex(row) + '\n').join(''),
  );
}
