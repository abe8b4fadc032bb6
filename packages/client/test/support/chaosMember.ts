// A consumer group member in a process of its own for consumeChaos.test.ts, which kills it
// (SIGKILL) and starts it again under the same member id. Arguments: the endpoints (comma
// separated), the group and the member id. It prints `listening on <member id>` once it has
// joined (the line startListeningProcess waits for), then one JSON line per event the test
// checks, each stamped with the machine's clock: the cells as their handlers start, with the
// ownership they came under (a shard's n-th assignment in this process), and the cursors the
// server confirmed durable.

import { connect } from '../../src/index.js';
import { RATE_SCHEMA } from './rateModel.js';

const [endpoints, group, memberId] = process.argv.slice(2) as [string, string, string];
const out = (line: object): void =>
  void process.stdout.write(`${JSON.stringify({ at: Date.now(), ...line })}\n`);

const store = await connect({ endpoints: endpoints.split(',') });
const Rate = await store.defineModel(RATE_SCHEMA);
/** Per shard, how many times this process was assigned it: the ownership a cell came under. */
const ownership = new Map<number, number>();
let joined = false;
const consumer = Rate.consume(
  {
    group,
    memberId,
    sessionTimeoutMs: 3000,
    onEvent: (event) => {
      if (event.type === 'joined' && !joined) {
        joined = true;
        console.log(`listening on ${memberId}`);
      }
      if (event.type === 'assigned') {
        ownership.set(event.shard, (ownership.get(event.shard) ?? 0) + 1);
      }
    },
  },
  async (cell) => {
    out({ t: 'handled', shard: cell.shard, id: Number(cell.id), own: ownership.get(cell.shard!) });
    // A little work, so that a kill finds cells being handled.
    await new Promise((resolve) => setTimeout(resolve, 1));
  },
);

const committed = new Map<number, number>();
setInterval(() => {
  for (const [shard, cursor] of consumer.committed) {
    if (committed.get(shard) !== Number(cursor)) {
      committed.set(shard, Number(cursor));
      out({ t: 'committed', shard, cursor: Number(cursor) });
    }
  }
}, 5);
