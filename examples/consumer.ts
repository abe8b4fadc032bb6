// A consumer group with the TypeScript SDK (docs/consumer-groups.md): two members share the
// shards of a model's log, each handling the cells of the shards it owns; a cell whose handler
// keeps failing is parked and its shard goes on; one member leaves gracefully and the other takes
// its shards; the group is described; the parked cell is replayed once the handler is fixed.
// The two members run in one process here, as two services would each run one. With a server
// running (`pnpm start`; another address with SHAMELESS_ADDRESS=host:port), build and run it:
// `pnpm build && pnpm example:consumer`. Its model, consumer_rate, is its own; it can be run
// again on the same store: the group goes on from its cursors, and each run counts only the
// cells it wrote.
import { randomUUID } from 'node:crypto';
import { type ConsumerEvent, connect } from '@shameless/client';
import { address, requireServer } from './server.js';

/** Waits for `done()` to hold, checking every 20 ms; throws after `ms`, naming `what`. */
async function until(done: () => boolean | Promise<boolean>, what: string, ms = 10_000) {
  for (const stop = Date.now() + ms; !(await done());) {
    if (Date.now() > stop) throw new Error(`gave up waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

await requireServer();
const store = await connect({ endpoints: [address], deadlineMs: 5000 });
const Rate = await store.defineModel({
  name: 'consumer_rate',
  primary: { fields: { hotel_id: 'integer', room_type: 'string' }, shardOn: 'hotel_id' },
});
const group = 'consumer-example';
const run = randomUUID().slice(0, 8); // this run's cells carry it; earlier runs' are not counted

// What the members handled, by cell: its uuid, name and version say which write it is, so a
// handler keyed on them does its work once even when a cell comes twice (at least once).
const handled = new Map<string, string>();
let handlerRuns = 0;
let fixed = false; // the handler's bug: a negative price fails until it is fixed
let parked: Extract<ConsumerEvent, { type: 'parked' }> | undefined;
let replayedBy = '';

const member = (name: string) =>
  Rate.consume(
    {
      group,
      memberId: `${group}-${name}`,
      maxDeliveries: 3, // a cell whose handler fails three times is parked
      onEvent: (event) => {
        if (event.type === 'parked') parked = event;
      },
    },
    async (cell, delivery) => {
      if (cell.get('run') !== run) return; // an earlier run's cell: acknowledged, not counted
      const price = cell.get('price') as number;
      if (price < 0 && !fixed) throw new Error(`negative price ${price}`); // delivered again
      handlerRuns += 1;
      handled.set(`${cell.uuid}/${cell.name}/${cell.refKey}`, name);
      if (delivery.replay) replayedBy = name;
    }, // resolving acknowledges the cell
  );

const a = member('a');
const b = member('b');
const [ownedByA, ownedByB] = [() => a.shards.length, () => b.shards.length];
await until(
  () => ownedByA() + ownedByB() === store.shardsCount && Math.abs(ownedByA() - ownedByB()) <= 1,
  'a and b to share the shards evenly',
);
console.log(`a owns ${ownedByA()} shards, b owns ${ownedByB()}`);

// Twenty rates, one at a time (the server puts a lone create in any shard of its partition, so
// they spread over both members' shards), and one that the handler cannot take yet.
const rates = Array.from({ length: 20 }, (_, i) => ({ hotel_id: i, price: 100 + i }));
for (const rate of [...rates, { hotel_id: 99, price: -1 }]) {
  await Rate.put({ ...rate, room_type: 'double', run });
}
await until(() => handled.size === 20 && parked !== undefined, 'the rates to be handled');
const by = (name: string) => [...handled.values()].filter((who) => who === name).length;
console.log(`handled ${handled.size} rates: a ${by('a')}, b ${by('b')}`);
console.log(
  `parked cell ${parked!.id} of shard ${parked!.shard} after ${parked!.attempts} deliveries: ` +
    parked!.error,
);

// b leaves: it finishes what it started, its cursors are written and a takes its shards.
await b.close();
await until(() => a.shards.length === store.shardsCount, 'a to own every shard');
for (const rate of rates.slice(0, 5)) {
  await Rate.put({ ...rate, price: rate.price + 1, room_type: 'double', run });
}
await until(() => handled.size === 25, 'the rates written since b left');
console.log(`b left: a owns ${a.shards.length} shards and handled the 5 rates written since`);

// The store's view: cursors are written about once a second while a shard is busy.
const describe = () => store.describeConsumerGroup(Rate, group);
await until(async () => (await describe()).shards.every((shard) => shard.lag === 0), 'lag 0');
const described = await describe();
console.log(
  `describe: members ${described.members.map((m) => m.memberId).join(', ')}, ` +
    `owning ${described.members[0]?.shards.length} shards; ` +
    `lag ${described.shards.reduce((sum, shard) => sum + shard.lag, 0)}; ` +
    `parked ${described.shards.reduce((sum, shard) => sum + shard.parked, 0)}`,
);

// The bug fixed, the parked cell is delivered again (out of its shard's order) and handled.
fixed = true;
await store.replayParkedCell(Rate, group, parked!);
const stillParked = async () =>
  (await store.parkedCells(Rate, group).toArray()).some(
    (cell) => cell.shard === parked!.shard && cell.id === parked!.id,
  );
await until(async () => replayedBy !== '' && !(await stillParked()), 'the replayed cell');
console.log(`replayed cell ${parked!.id}: handled by ${replayedBy}, no longer parked`);

await a.close();
const after = await describe();
const confirmed = after.shards.every((shard) => a.committed.get(shard.shard) === shard.cursor);
console.log(`a left: ${after.members.length} members; the store's cursors are a's: ${confirmed}`);
console.log(`${handled.size} rates handled, ${handlerRuns - handled.size} of them twice`);
await store.close();
