// A poison cell: one whose handling kills its member (the handler SIGKILLs its own process, as
// a worker that crashes on a cell would die). A supervisor (this process) starts a new member
// process each time one dies, as a deployment would. The server counts a delivery to a member
// that died holding the cell as a delivery; after `maxDeliveries` the cell is parked and the
// cells written after it on its shard are handled.
import type { Store } from '@shameless/client';
import { GROUP_DEFAULTS } from '@shameless/server';
import type { Progress } from '../load/progress.js';
import { waitUntil } from '../load/waitUntil.js';
import { payloadOf } from '../subjects/benchStore.js';
import { MemberProcess, wallClockMs } from '../subjects/consumerMember.js';
import type { TicketModel } from './consumerLoad.js';

export interface PoisonResult {
  /** The SDK's default, which the figure uses. */
  readonly maxDeliveries: number;
  /** Handler starts on the poison cell, over every process. */
  readonly deliveries: number;
  /** Member processes it killed. */
  readonly crashes: number;
  /** Its deliveries as the parked cell's record counts them; undefined when it was not parked. */
  readonly parkedAttempts: number | undefined;
  /** From the poison's write to its `parked` line. */
  readonly parkedAfterMs: number | undefined;
  /** Cells written after it on its shard, and how many of them were handled. */
  readonly after: number;
  readonly afterHandled: number;
  /** From its `parked` line to the first cell after it handled. */
  readonly resumedAfterMs: number | undefined;
}

/** The default (the SDK's and the server's), which the figure uses. */
const MAX_DELIVERIES = GROUP_DEFAULTS.maxDeliveries;
const AFTER_CELLS = 5;
const POISON_TIMEOUT_MS = 60_000;

export async function measurePoison(
  store: Store,
  ticket: TicketModel,
  uuids: readonly string[],
  endpoint: string,
  progress: Progress,
): Promise<PoisonResult> {
  const members: MemberProcess[] = [];
  let supervising = true;
  const start = async () => {
    const member = await MemberProcess.start(`poison-${members.length + 1}`, {
      endpoints: [endpoint],
      mode: 'consume',
      group: 'poison',
      report: 'cells',
      poison: true,
      options: { from: 'latest' },
    });
    members.push(member);
    return member;
  };
  // The supervisor: a member that died is replaced by a new process.
  const supervisor = (async () => {
    let member = await start();
    for (;;) {
      await member.child.exited;
      if (!supervising) return;
      member = await start();
    }
  })();
  try {
    await waitUntil(
      () => members[0]?.shards.length === ticket.shards.length,
      20_000,
      'the member to own every shard',
    );
    const uuid = uuids[0]!;
    const write = async (body: Record<string, unknown>) => {
      const [result] = await ticket.writeCells([{ uuid, cell: 'event', body, mode: 'replace' }]);
      if (!result) throw new Error('WriteCells answered no result');
      if (!result.ok) throw result.error;
      return { shard: result.cell.shard!, id: Number(result.cell.id) };
    };
    const writtenAt = wallClockMs();
    const poison = await write({ poison: true });
    const after: number[] = [];
    for (let i = 0; i < AFTER_CELLS; i++) after.push((await write(payloadOf(1024))).id);
    progress.note(
      `  poison cell ${poison.shard}/${poison.id} written, and ${AFTER_CELLS} cells after it on its shard`,
    );
    const handled = (id: number) =>
      members.flatMap((member) =>
        member.lines.filter((line) => line.t === 'h' && line.s === poison.shard && line.i === id),
      );
    const parkedLine = () =>
      members
        .flatMap((member) => member.lines)
        .find(
          (line) => line.t === 'parked' && line.shard === poison.shard && line.id === poison.id,
        );
    await waitUntil(
      () => parkedLine() !== undefined && after.every((id) => handled(id).length > 0),
      POISON_TIMEOUT_MS,
      undefined,
    );
    const parked = (await store.parkedCells(ticket, 'poison').toArray()).find(
      (cell) => cell.shard === poison.shard && Number(cell.id) === poison.id,
    );
    const parkedAt = parkedLine()?.at;
    const firstAfter = Math.min(...after.flatMap((id) => handled(id).map((line) => line.at)));
    return {
      maxDeliveries: MAX_DELIVERIES,
      deliveries: handled(poison.id).length,
      crashes: members.filter((member) => member.child.process.signalCode === 'SIGKILL').length,
      parkedAttempts: parked?.attempts,
      parkedAfterMs: parkedAt === undefined ? undefined : parkedAt - writtenAt,
      after: after.length,
      afterHandled: after.filter((id) => handled(id).length > 0).length,
      resumedAfterMs:
        parkedAt === undefined || !Number.isFinite(firstAfter) ? undefined : firstAfter - parkedAt,
    };
  } finally {
    supervising = false;
    await Promise.all(members.map((member) => member.kill()));
    await supervisor.catch(() => undefined);
    // One the supervisor was starting meanwhile.
    await Promise.all(members.map((member) => member.kill()));
  }
}
