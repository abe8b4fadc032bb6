// Cut-overs under writes (`--workloads moves`, issue 54's hold target): shards of the moves
// store go to the second server while WriteCells go to them at a steady rate through two
// `shameless serve` processes taking turns, and to as many shards that stay, at a quarter of the
// rate. The mover reports each shard's hold (from LOCK TABLES asked to the map published); the
// writes' own latency during the move, on the shards moved beside the shards that stayed, says
// what the machine's scheduling costs a write that nobody holds (the same run's baseline).
// Latency counts from when a write was due, not sent: a write held late counts its whole delay.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Metadata, credentials } from '@grpc/grpc-js';
import { type MoveShardsProgress, StoreClient, WriteMode } from '@shameless/proto';
import { withContentShard } from '@shameless/server/sql';
import { pack } from 'msgpackr';
import { LatencyRecorder, type LatencySummary, percentile } from '../load/latency.js';
import type { Progress } from '../load/progress.js';

/** Issue 54: writes held at a cut-over, p99 over the shards moved, at most (ms). */
export const HOLD_TARGET_MS = 100;

export interface CutOverPlan {
  /** The shards moved; as many shards that stay follow them. */
  readonly moving: readonly number[];
  /** WriteCells a second to the shards moved (a quarter of it to those that stay). */
  readonly writesPerSecond: number;
  readonly bodyBytes: number;
}

/** Shards 1–4 moved, 5–8 stay: the plan when the store has the shards for it. */
export function cutOverPlan(shardsCount: number): CutOverPlan | undefined {
  const moving = [1, 2, 3, 4];
  return shardsCount > 2 * moving.length
    ? { moving, writesPerSecond: 500, bodyBytes: 1024 }
    : undefined;
}

/** The writes of one kind of shard due while the move ran (MoveShards called to its end). */
export interface WritesDuring extends LatencySummary {
  /** Writes that failed (none may: a cut-over holds writes, it never refuses them). */
  readonly refused: number;
}

export interface CutOverResult {
  readonly plan: CutOverPlan;
  readonly staying: readonly number[];
  /** Each moved shard's hold as the mover reported it, ms. */
  readonly holds: readonly { readonly shard: number; readonly holdMs: number }[];
  /** The p99 of the holds over the shards moved. */
  readonly holdP99Ms: number;
  readonly moved: WritesDuring;
  readonly stayed: WritesDuring;
  /** The first refusal's message, if any (a refusal anywhere in the load counts). */
  readonly firstRefusal?: string;
  /** From MoveShards called to its last message. */
  readonly moveMs: number;
}

/** Writes a base cell for each of the records (their content shard is `shard`). */
export type SeedRecords = (shard: number, uuids: readonly string[]) => Promise<void>;

/**
 * Moves `plan.moving` to `to` through `servers[0]` while the load writes through both servers;
 * the store's model is `rate` with a `meta` cell, in both servers' namespace.
 */
export async function runCutOversUnderWrites(
  servers: readonly [string, string],
  to: string,
  plan: CutOverPlan,
  shardsCount: number,
  seed: SeedRecords,
  progress: Progress,
): Promise<CutOverResult> {
  const staying = plan.moving.map((shard) => shard + plan.moving.length);
  const uuids = new Map(
    [...plan.moving, ...staying].map((shard) => [shard, uuidsIn(shard, 32, shardsCount)]),
  );
  for (const [shard, records] of uuids) await seed(shard, records);
  const clients = servers.map((address) => new StoreClient(address, credentials.createInsecure()));
  const moving = new Set(plan.moving);
  /** Each write answered: when it was due, how long it took from then, where it went. */
  const answered: { due: number; ms: number; kind: 'moved' | 'stayed' }[] = [];
  const refused = { moved: 0, stayed: 0 };
  let firstRefusal: string | undefined;
  const body = pack({ payload: 'x'.repeat(Math.max(0, plan.bodyBytes - 16)) });

  // Four writes to the shards moved for each one to a shard that stays, due at a steady pace.
  const shardOf = (sent: number): number => {
    const round = Math.floor(sent / 5);
    const shards = sent % 5 === 4 ? staying : plan.moving;
    return shards[round % shards.length]!;
  };
  const intervalMs = 1000 / (plan.writesPerSecond * 1.25);
  let running = true;
  const pending = new Set<Promise<void>>();
  const load = (async () => {
    const start = performance.now();
    for (let sent = 0; running; sent++) {
      const due = start + sent * intervalMs;
      const now = performance.now();
      if (due - now >= 1) await sleep(due - now);
      const shard = shardOf(sent);
      const kind = moving.has(shard) ? 'moved' : 'stayed';
      const shardUuids = uuids.get(shard)!;
      const uuid = shardUuids[sent % shardUuids.length]!;
      const write = writeCell(clients[sent % 2]!, uuid, body).then(
        () => void answered.push({ due, ms: performance.now() - due, kind }),
        (error: unknown) => {
          refused[kind] += 1;
          firstRefusal ??= `shard ${shard}: ${(error as Error).message}`;
        },
      );
      const tracked = write.finally(() => pending.delete(tracked));
      pending.add(tracked);
    }
  })();

  const holds: { shard: number; holdMs: number }[] = [];
  let moveStarted = 0;
  let moveEnded = 0;
  try {
    // The load runs a second before the move and half a second after it.
    await sleep(1000);
    const task = progress.task(
      `moving shards ${plan.moving.join(', ')} under ${plan.writesPerSecond} writes a second`,
      plan.moving.length,
    );
    moveStarted = performance.now();
    const stream = clients[0]!.moveShards({
      action: {
        $case: 'move',
        move: {
          firstShard: Math.min(...plan.moving),
          lastShard: Math.max(...plan.moving),
          to,
        },
      },
    });
    for await (const message of stream as AsyncIterable<MoveShardsProgress>) {
      if (message.holdMs > 0 && !holds.some(({ shard }) => shard === message.shard)) {
        holds.push({ shard: message.shard, holdMs: message.holdMs });
        task.advance(1);
      }
    }
    moveEnded = performance.now();
    task.done();
    await sleep(500);
  } finally {
    running = false;
    await load;
    await Promise.all(pending);
    for (const client of clients) client.close();
  }
  if (holds.length !== plan.moving.length) {
    throw new Error(`the move reported ${holds.length} holds for ${plan.moving.length} shards`);
  }
  holds.sort((a, b) => a.shard - b.shard);
  // The writes due while the move ran; every refusal counts, whenever it came.
  const latency = { moved: new LatencyRecorder(), stayed: new LatencyRecorder() };
  for (const { due, ms, kind } of answered) {
    if (due >= moveStarted && due <= moveEnded) latency[kind].record(ms);
  }
  return {
    plan,
    staying,
    holds,
    holdP99Ms: percentile(Float64Array.from(holds, ({ holdMs }) => holdMs).sort(), 0.99),
    moved: { ...latency.moved.summary(), refused: refused.moved },
    stayed: { ...latency.stayed.summary(), refused: refused.stayed },
    ...(firstRefusal ? { firstRefusal } : {}),
    moveMs: moveEnded - moveStarted,
  };
}

/** `count` random v4 uuids whose content shard is `shard` (the gem's rule, as the server routes). */
function uuidsIn(shard: number, count: number, shardsCount: number): string[] {
  return Array.from({ length: count }, () =>
    withContentShard(randomUUID(), shard, shardsCount, Math.random()),
  );
}

function writeCell(client: StoreClient, uuid: string, body: Buffer): Promise<void> {
  return new Promise((resolve, reject) =>
    client.writeCell(
      {
        model: 'rate',
        uuid,
        cell: 'meta',
        body,
        mode: WriteMode.WRITE_MODE_REPLACE,
        requestId: randomUUID(),
      },
      new Metadata(),
      { deadline: Date.now() + 10_000 },
      (error) => (error ? reject(error) : resolve()),
    ),
  );
}
