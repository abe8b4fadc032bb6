// One unmeasured pass over a set's records before each run that reads them: each record's
// primary-index row and latest base cell, as a point Where reads them. Once the suite's tables
// outgrow MySQL's buffer pool, whichever run comes first after a change of working set reads its
// pages from disk, and the run after it finds them cached: the SDK's runs, which come before
// their baselines, paid for both. Each run now starts with its own records' pages read, as a run
// on a warm database would.
import { seededRate, type SeededSet } from '../subjects/benchStore.js';
import { gemPointWhere, openGemShapedClient } from '../subjects/gemShapedClient.js';
import { type BaselineTables, PRIMARY } from '../subjects/mysqlBaseline.js';

/** Connections the pass reads on. */
const WORKERS = 16;

export async function touchRecords(
  partitionUrl: string,
  tables: BaselineTables,
  seeded: SeededSet,
): Promise<void> {
  const client = openGemShapedClient(partitionUrl, WORKERS);
  try {
    let next = 0;
    await Promise.all(
      Array.from({ length: WORKERS }, async (_, worker) => {
        const session = await client.session(worker);
        while (next < seeded.uuids.length) {
          const i = next++;
          const hotel = seeded.hotels[Math.floor(i / seeded.perHotel)]!;
          await gemPointWhere(session, tables, PRIMARY, seededRate(hotel, i % seeded.perHotel));
        }
      }),
    );
  } finally {
    await client.end();
  }
}
