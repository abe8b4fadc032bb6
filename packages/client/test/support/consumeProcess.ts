// A consumer group member in a process of its own, for consumeFaults.test.ts, which kills it
// (SIGKILL) as a crash would. Arguments: the endpoint, the group, the member id and how long
// its handler takes (ms). It prints `listening on <member id>` once it has joined (the line
// startListeningProcess waits for), then one JSON line per thing the test follows: each cell
// as its handler starts, each cursor the server confirmed durable, the shards it owns.

import { connect } from '../../src/index.js';
import { RATE_SCHEMA } from './rateModel.js';

const [endpoint, group, memberId, handlerMs] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
];
const out = (line: object): void => void process.stdout.write(`${JSON.stringify(line)}\n`);

const store = await connect({ endpoints: [endpoint] });
const Rate = await store.defineModel(RATE_SCHEMA);
let joined = false;
const consumer = Rate.consume(
  {
    group,
    memberId,
    sessionTimeoutMs: 2000,
    onEvent: (event) => {
      if (event.type === 'joined' && !joined) {
        joined = true;
        console.log(`listening on ${memberId}`);
      }
    },
  },
  async (cell) => {
    out({ t: 'handled', shard: cell.shard, id: Number(cell.id) });
    await new Promise((resolve) => setTimeout(resolve, Number(handlerMs)));
  },
);

const committed = new Map<number, number>();
let shards = '';
setInterval(() => {
  for (const [shard, cursor] of consumer.committed) {
    if (committed.get(shard) !== Number(cursor)) {
      committed.set(shard, Number(cursor));
      out({ t: 'committed', shard, cursor: Number(cursor) });
    }
  }
  const now = consumer.shards.join(',');
  if (now !== shards) {
    shards = now;
    out({ t: 'shards', shards: consumer.shards });
  }
}, 5);
