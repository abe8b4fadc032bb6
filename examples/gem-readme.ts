// The Ruby gem's README, walked with the TypeScript SDK: declare the rates model, put, read and
// write cells, query with an inequality, go back through versions, reload another writer's
// changes, and tail a shard's log. With a server running (`pnpm start`; another address with
// SHAMELESS_ADDRESS=host:port), build and run it: `pnpm build && pnpm example:gem`, or
// `node examples/dist/gem-readme.js`. It can be run again: put is an upsert.
import { inspect } from 'node:util';
import { ConflictError, ReadonlyFieldError, connect } from '@shameless/client';
import { address, requireServer } from './server.js';

/** Prints a line of code, as typed in a session, and what it gives (when given). */
const show = (code: string, ...value: [unknown?]): void => {
  console.log(`> ${code}`);
  if (value.length > 0) {
    const shown = inspect(value[0], { depth: 4, breakLength: 100 });
    console.log(`  ${shown.replace(/\n/g, '\n  ')}`);
  }
};
/** Prints a line of code and the error it threw, as a session shows it. */
const thrown = (code: string, error: Error): void => {
  console.log(`> ${code}`);
  console.log(`  Uncaught ${error.name}: ${error.message}`);
};
const section = (title: string): void => console.log(`\n## ${title}\n`);
const day = (offset: number): string =>
  new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);
const today = day(0);
const tomorrow = day(1);

await requireServer();
section(`Connecting to ${address}`);
const store = await connect({ endpoints: [address], deadlineMs: 5000 });
show('store.shardsCount', store.shardsCount);

section('Declaring the model: indices and cells');
// The gem's `index do integer :hotel_id ... end`, `index :secondary do ... end`, `cell :meta`.
const Rate = await store.defineModel({
  name: 'rate',
  primary: {
    fields: { hotel_id: 'integer', room_type: 'string', check_in_date: 'string' },
    shardOn: 'hotel_id',
  },
  indices: {
    secondary: {
      fields: { hotel_id: 'integer', gateway: 'string', discount_type: 'string' },
      shardOn: 'hotel_id',
    },
  },
  cells: ['meta'],
});
show('Rate.definition.cells', Rate.definition.cells);

section('Writing: put is an upsert; all index fields are required');
const rate = await Rate.put({
  hotel_id: 1,
  room_type: '1 bed',
  check_in_date: today,
  gateway: 'pegasus',
  discount_type: 'geo',
  net_price: 120.0,
});
show(`rate = await Rate.put({ hotel_id: 1, room_type: '1 bed', check_in_date: '${today}', ... })`);
show("rate.get('net_price')", rate.get('net_price'));
show('rate.refKey', rate.refKey);

// A new version of the base cell.
rate.set('net_price', 130.0);
await rate.save();
show("rate.set('net_price', 130.0); await rate.save(); rate.refKey", rate.refKey);

// The base cell, explicitly.
rate.base.set('net_price', 140.0);
await rate.base.save();
show("rate.base.set('net_price', 140.0); await rate.base.save()");

// Another cell: read it, set, save.
await rate.meta.load();
rate.meta.set('hotel_enabled', true);
await rate.meta.save();
show("await rate.meta.load(); rate.meta.set('hotel_enabled', true); await rate.meta.save()");

// update: a shallow merge, written as a new version.
await rate.update({ tax_rate: 11.0 });
show('await rate.update({ tax_rate: 11.0 }); rate.body', rate.body);
try {
  // @ts-expect-error index fields never change: a compile error, and a ReadonlyFieldError
  rate.set('gateway', 'sabre');
} catch (error) {
  if (!(error instanceof ReadonlyFieldError)) throw error;
  thrown("rate.set('gateway', 'sabre')", error);
}
await rate.meta.update({ hotel_enabled: false });
show('await rate.meta.update({ hotel_enabled: false }); rate.meta.body', rate.meta.body);

section('Querying');
await Rate.put({
  hotel_id: 1,
  room_type: '1 bed',
  check_in_date: tomorrow,
  gateway: 'pegasus',
  discount_type: 'geo',
  net_price: 150.0,
});
const byPrimary = await Rate.where({
  hotel_id: 1,
  room_type: '1 bed',
  check_in_date: today,
}).toArray();
show(
  `(await Rate.where({ hotel_id: 1, room_type: '1 bed', check_in_date: '${today}' }).toArray()).length`,
  byPrimary.length,
);
const bySecondary = await Rate.index('secondary')
  .where({ hotel_id: 1, gateway: 'pegasus', discount_type: 'geo' })
  .first();
show(
  "(await Rate.index('secondary').where({ hotel_id: 1, gateway: 'pegasus', discount_type: 'geo' }).first())?.get('net_price')",
  bySecondary?.get('net_price'),
);
console.log(
  `> for await (const r of Rate.where({ hotel_id: 1, room_type: '1 bed', check_in_date: { gt: '${today}' } }))`,
);
for await (const later of Rate.where({
  hotel_id: 1,
  room_type: '1 bed',
  check_in_date: { gt: today },
})) {
  console.log(`  ${later.get('check_in_date')}: ${String(later.get('net_price'))}`);
}

section('fetch: a value or a default');
show("rate.fetch('net_price', 100)", rate.fetch('net_price', 100));
show("rate.meta.fetch('enabled', true)", rate.meta.fetch('enabled', true));
show(
  "rate.meta.fetch('hotel_enabled', true)  // a stored false is returned as is",
  rate.meta.fetch('hotel_enabled', true),
);

section('Versions: previous, down to version 0');
show('rate.refKey', rate.refKey);
const versions: string[] = [];
for (
  let version: typeof rate.base | undefined = rate.base;
  version;
  version = await version.previous()
) {
  versions.push(`${version.refKey}: ${String(version.get('net_price'))}`);
}
show('rate.previous() ... .previous()  (refKey: net_price)', versions);
const first = await (await rate.base.previous({}))?.previous();
show('(await (await rate.previous())?.previous())?.refKey', first?.refKey);

section('reload: another process updates the record');
const otherProcess = await connect({ endpoints: [address] });
const OtherRate = await otherProcess.defineModel(Rate.schema);
const theirs = await OtherRate.where({
  hotel_id: 1,
  room_type: '1 bed',
  check_in_date: today,
}).first();
await theirs?.update({ net_price: 135.0 });
show("rate.get('net_price')", rate.get('net_price'));
await rate.reload();
show("await rate.reload(); rate.get('net_price')", rate.get('net_price'));

section('Optimistic concurrency: a stale save is refused');
await theirs?.update({ net_price: 136.0 });
rate.set('net_price', 137.0);
try {
  await rate.save();
} catch (error) {
  if (!(error instanceof ConflictError)) throw error;
  thrown('await rate.save()  // after the other process wrote', error);
}
await rate.update({ net_price: 137.0 }, { retryOnConflict: 3 });
show(
  "await rate.update({ net_price: 137.0 }, { retryOnConflict: 3 }); rate.get('net_price')",
  rate.get('net_price'),
);
await otherProcess.close();

section('present, cells and asJSON');
show('rate.present', rate.present);
show(
  'rate.cells.map((cell) => `${cell.name}: ${cell.present}`)',
  rate.cells.map((cell) => `${cell.name}: ${cell.present}`),
);
show('rate.asJSON()', rate.asJSON());

section('The shard log: a stream of every write, like a Kafka partition');
const shard = rate.base.shard!;
show('rate.base.shard', shard);
show(
  `(await Rate.findShard(1)).shard  // the index shard of hotel 1`,
  (await Rate.findShard(1)).shard,
);
const maxId = await Rate.maxIdOnShard(shard);
show(`await Rate.maxIdOnShard(${shard})`, maxId);
// Ids are numbers, or bigints past 2^53: BigInt() makes the arithmetic exact either way.
const cursor = maxId > 3 ? BigInt(maxId) - 3n : 0;
const page = await Rate.fetchLatestCells({ shard, cursor, limit: 3 });
show(
  `(await Rate.fetchLatestCells({ shard: ${shard}, cursor: ${cursor}, limit: 3 })).cells`,
  page.cells.map((cell) => `#${cell.id} ${cell.uuid.slice(0, 8)} ${cell.name}@${cell.refKey}`),
);
const shardCounts: string[] = [];
await Rate.eachShard(async (s) => {
  shardCounts.push(`${s}: ${await Rate.maxIdOnShard(s)}`);
});
show('await Rate.eachShard(async (s) => ...maxIdOnShard(s))', shardCounts.join(', '));

console.log(
  `> for await (const cell of Rate.each({ shards: [${shard}], cursors: { ${shard}: ${maxId} }, follow: true, signal }))`,
);
const controller = new AbortController();
const giveUp = setTimeout(() => controller.abort(), 10_000);
const tail = (async () => {
  let seen = 0;
  for await (const cell of Rate.each({
    shards: [shard],
    cursors: { [shard]: maxId },
    follow: true,
    signal: controller.signal,
  })) {
    console.log(
      `  #${cell.id} ${cell.name}@${cell.refKey} ${inspect(cell.body, { breakLength: Infinity })}`,
    );
    if (++seen === 2) controller.abort(); // or `break`
  }
})();
await rate.update({ net_price: 138.0 });
await rate.meta.update({ hotel_enabled: true });
await tail;
clearTimeout(giveUp);
console.log('  (stopped by the AbortSignal)');

await store.close();
