// Entry of a consumer group member's child process (consumerMember.ts starts it): the SDK in a
// process of its own, as a user's worker runs it, so that a member can be SIGKILLed, cut off or
// restarted while the bench measures what the others see. Argument: its MemberConfig as JSON.
// It prints `listening on <member id>` once it has joined (once it starts reading, for `each`),
// then one JSON line per thing the bench follows (MemberLine), each stamped with this
// machine's clock (`wallClockMs`). SIGTERM closes the consumer gracefully, then exits.
import { connect } from '@shameless/client';
import {
  type MemberConfig,
  type MemberLine,
  TICKET_SCHEMA,
  wallClockMs,
} from './consumerMember.js';

const config = JSON.parse(process.argv[2] ?? '{}') as MemberConfig;
// One write per line: a pipe takes it whole (Linux writes pipes synchronously), so a SIGKILL
// loses no line already written.
const out = (line: MemberLine): void => void process.stdout.write(`${JSON.stringify(line)}\n`);

const store = await connect({ endpoints: config.endpoints });
const Ticket = await store.defineModel(TICKET_SCHEMA);

/** Count mode: cells handled, the clock at the first and latest, CPU at the first. */
let handled = 0;
let firstAt = 0;
let firstCpu = 0;
const cpuMicros = () => {
  const usage = process.cpuUsage();
  return usage.user + usage.system;
};
const counted = (): void => {
  handled += 1;
  if (handled === 1) {
    firstAt = wallClockMs();
    firstCpu = cpuMicros();
  }
  if (handled === config.until) {
    out({ t: 'done', n: handled, first: firstAt, at: wallClockMs(), cpu: cpuMicros() - firstCpu });
  }
};
if (config.report === 'count') {
  const timer = setInterval(() => out({ t: 'count', n: handled, at: wallClockMs() }), 1000);
  timer.unref();
}

if (config.mode === 'each') {
  // With `follow`, from every shard's end now: the cells written from here on, as they commit.
  const cursors = config.follow
    ? new Map(
        await Promise.all(
          Ticket.shards.map(async (shard) => [shard, await Ticket.maxIdOnShard(shard)] as const),
        ),
      )
    : undefined;
  console.log('listening on each');
  for await (const cell of Ticket.each({
    ...(config.follow ? { follow: true, cursors } : {}),
  })) {
    if (config.report === 'count') counted();
    else {
      const at = wallClockMs();
      out({ t: 'h', s: cell.shard!, i: Number(cell.id), a: 0, c: cell.createdAt!.getTime(), at });
    }
  }
  out({ t: 'end', n: handled, at: wallClockMs() });
  await store.close();
} else {
  let joined = false;
  const consumer = Ticket.consume(
    {
      group: config.group!,
      ...(config.memberId === undefined ? {} : { memberId: config.memberId }),
      ...config.options,
      onEvent: (event) => {
        const at = wallClockMs();
        switch (event.type) {
          case 'joined':
            if (!joined) {
              joined = true;
              console.log(`listening on ${event.memberId}`);
            }
            out({ t: 'joined', at });
            break;
          case 'assigned':
            out({ t: 'assigned', shard: event.shard, cursor: Number(event.cursor), at });
            break;
          case 'revoked':
          case 'released':
            out({ t: event.type, shard: event.shard, at });
            break;
          case 'lost':
            out({ t: 'lost', shard: event.shard, at });
            break;
          case 'parked':
            out({ t: 'parked', shard: event.shard, id: Number(event.id), at });
            break;
          case 'reconnecting':
          case 'left':
          case 'stopped':
            out({ t: event.type, at });
            break;
          default:
            break;
        }
      },
    },
    (cell, delivery) => {
      if (config.report === 'count') {
        counted();
        return;
      }
      const at = wallClockMs();
      const shard = cell.shard!;
      const id = Number(cell.id);
      out({ t: 'h', s: shard, i: id, a: delivery.attempt, c: cell.createdAt!.getTime(), at });
      // A poison cell takes its member down with it, as a cell that crashes its worker would.
      if (config.poison && cell.body.poison === true) process.kill(process.pid, 'SIGKILL');
    },
  );
  // The cursors the server confirmed durable, as they move.
  const committed = new Map<number, number>();
  setInterval(() => {
    for (const [shard, cursor] of consumer.committed) {
      if (committed.get(shard) !== Number(cursor)) {
        committed.set(shard, Number(cursor));
        out({ t: 'committed', shard, cursor: Number(cursor), at: wallClockMs() });
      }
    }
  }, 5).unref();
  process.once('SIGTERM', () => {
    out({ t: 'closing', at: wallClockMs() });
    void consumer
      .close()
      .then(() => out({ t: 'closed', at: wallClockMs() }))
      .then(() => store.close())
      .finally(() => process.exit(0));
  });
  await consumer.closed.catch((error: Error) => {
    out({ t: 'error', message: error.message, at: wallClockMs() });
    process.exit(1);
  });
}
