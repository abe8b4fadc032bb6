// The targets of issue 52 (consumer groups), each beside the figure other systems are known
// for (the anchor), with what this run measured and whether it is met; then the details behind
// each figure and the settings they were measured with (the defaults users get). A figure whose
// run failed is "not measured", with why.
import type { ConsumerResult, Measured } from '../workloads/consumerWorkload.js';

export interface ConsumerVerdict {
  readonly figure: string;
  /** What others reach (Kafka, the Kinesis Client Library, NATS JetStream), as the issue says. */
  readonly anchor: string;
  readonly target: string;
  /** This run's figure, short; the details follow the table. */
  readonly measured: string;
  /** Undefined when it was not measured. */
  readonly met: boolean | undefined;
  /** What stands behind `measured`, in a sentence. */
  readonly details: string;
}

/** A takeover, in seconds, within this long after a member's crash. */
export const CRASH_TAKEOVER_MS = 2000;
/** ...and this long beyond the session timeout after a silent cut-off. */
export const CUT_ALLOWANCE_MS = 2000;
export const HAND_OVER_MS = 1000;
export const MOVES_PER_RESTART = 2;
/** "No pause": the unmoved shards' longest wait during a join at most this times that before. */
export const PAUSE_FACTOR = 2;
export const MEMBER_CELLS_PER_SECOND = 20_000;
export const COMMIT_TO_HANDLER_P50_MS = 20;

const FAILOVER_ANCHOR = 'Kafka 45 s, KCL 10–30 s, NATS 30 s';
const HANDOVER_ANCHOR = 'KCL waits the failover time; Kafka classic stops the world';

const count = (value: number) => Math.round(value).toLocaleString('en-US');
const ms = (value: number) => `${Math.round(value)} ms`;
const seconds = (value: number) => `${(value / 1000).toFixed(2)} s`;
const mean = (values: readonly number[]) => values.reduce((sum, v) => sum + v, 0) / values.length;

export function evaluateConsumerTargets(result: ConsumerResult): ConsumerVerdict[] {
  const { settings } = result;
  const verdicts: ConsumerVerdict[] = [];
  const add = <T>(
    figure: string,
    anchor: string,
    target: string,
    measured: Measured<T>,
    judge: (value: T) => { measured: string; met: boolean; details: string },
  ) => {
    verdicts.push(
      measured.ok
        ? { figure, anchor, target, ...judge(measured.value) }
        : {
            figure,
            anchor,
            target,
            measured: 'not measured',
            met: undefined,
            details: `not measured: ${measured.error}`,
          },
    );
  };

  add(
    'a member SIGKILLed: its shards owned again by a live member',
    FAILOVER_ANCHOR,
    `≤ ${CRASH_TAKEOVER_MS / 1000} s`,
    result.crash,
    (crash) => ({
      measured: seconds(crash.takeoverMs),
      met: crash.takeoverMs <= CRASH_TAKEOVER_MS,
      details:
        `its ${crash.shards} shards all assigned to the member behind the other server ` +
        `${ms(crash.takeoverMs)} after the kill`,
    }),
  );
  const cutBound = settings.sessionTimeoutMs + CUT_ALLOWANCE_MS;
  add(
    'a member cut off silently (fault proxy drops its traffic)',
    FAILOVER_ANCHOR,
    `≤ session timeout + ${CUT_ALLOWANCE_MS / 1000} s (${cutBound / 1000} s)`,
    result.cut,
    (cut) => ({
      measured: seconds(cut.takeoverMs),
      met: cut.takeoverMs <= cutBound,
      details:
        `its ${cut.shards} shards all assigned to the other member ${ms(cut.takeoverMs)} after the ` +
        `cut (session timeout ${count(cut.sessionTimeoutMs)} ms); the network back, it owned shards ` +
        (cut.backMs === undefined ? 'again: not within 20 s' : `again ${ms(cut.backMs)} later`),
    }),
  );
  const restarts = result.rebalance.ok
    ? ({ ok: true, value: result.rebalance.value.restarts } as const)
    : result.rebalance;
  add(
    'graceful leave (each member of the rolling restart closing)',
    HANDOVER_ANCHOR,
    `hand-over ≤ ${HAND_OVER_MS / 1000} s, 0 cells delivered twice`,
    restarts,
    (rolling) => {
      const longest = Math.max(...rolling.steps.map((step) => step.leaveHandOverMs));
      const graceful = rolling.steps.every((step) => step.graceful);
      return {
        measured: `≤ ${ms(longest)}, ${rolling.twice} twice`,
        met: longest <= HAND_OVER_MS && rolling.twice === 0 && graceful,
        details:
          `a closing member's shards each assigned to another ${rolling.steps.map((step) => ms(step.leaveHandOverMs)).join(', ')} ` +
          `at most after its close began (${rolling.steps.map((step) => step.member).join(', ')})` +
          (graceful ? '' : '; a close did not finish in 15 s and was killed'),
      };
    },
  );
  add(
    'rolling restart of 3 members, each step',
    HANDOVER_ANCHOR,
    `hand-over ≤ ${HAND_OVER_MS / 1000} s, 0 cells delivered twice, each shard moves ≤ ${MOVES_PER_RESTART} times per restart`,
    restarts,
    (rolling) => {
      const handOver = (step: (typeof rolling.steps)[number]) =>
        Math.max(step.leaveHandOverMs, Number.isNaN(step.joinHandOverMs) ? 0 : step.joinHandOverMs);
      const longest = Math.max(...rolling.steps.map(handOver));
      const moves = Math.max(...rolling.steps.map((step) => step.maxMoves));
      return {
        measured: `≤ ${ms(longest)}, ≤ ${moves} moves, ${rolling.twice} twice`,
        met:
          longest <= HAND_OVER_MS &&
          moves <= MOVES_PER_RESTART &&
          rolling.twice === 0 &&
          rolling.unhandled === 0,
        details:
          `each step (close, exit, a new process joins): ` +
          rolling.steps
            .map(
              (step) =>
                `${step.member}: ${step.moved} shards moved, at most ${step.maxMoves} times each, hand-overs ≤ ${ms(handOver(step))}, ${seconds(step.stepMs)}`,
            )
            .join('; ') +
          `; ${rolling.twice} cells handled twice, ${rolling.unhandled} written cells never handled ` +
          `(${count(rolling.writing.written)} written at ${count(rolling.writing.writesPerSecond)}/s)`,
      };
    },
  );
  const rebalance = result.rebalance.ok
    ? ({ ok: true, value: result.rebalance.value.rebalance } as const)
    : result.rebalance;
  add(
    'shards not moving while a third member joins',
    'Kafka classic: all pause',
    `no pause: longest wait between two cells ≤ ${PAUSE_FACTOR}× that just before`,
    rebalance,
    (join) => ({
      measured: `${ms(join.unmovedGapMs)} (${ms(join.unmovedGapBeforeMs)} before)`,
      met: join.unmovedGapMs <= PAUSE_FACTOR * join.unmovedGapBeforeMs,
      details:
        `the ${settings.shards - join.moved.length} shards that stayed: longest wait between two cells ` +
        `${ms(join.unmovedGapMs)} in the ${seconds(join.windowMs)} from the join, ${ms(join.unmovedGapBeforeMs)} ` +
        `in as long before it; the ${join.moved.length} that moved (${join.moved.join(',')}) waited ` +
        `≤ ${ms(join.movedPauseMs)} for their new owner; the join took ${ms(join.joinMs)}`,
    }),
  );
  add(
    'cells delivered twice after a member crash',
    'everything since the last commit',
    "≤ that member's unacknowledged in-flight cells; none whose acknowledgement the server confirmed",
    result.crash,
    (crash) => ({
      measured: `${crash.twice} (${crash.inFlight} in flight), ${crash.belowConfirmed} confirmed`,
      met: crash.twice <= crash.inFlight && crash.belowConfirmed === 0 && crash.unhandled === 0,
      details:
        `${crash.twice} cells handled by both members: the killed member had ${crash.inFlight} ` +
        `handled and not acknowledged to the server when it died, and ${crash.sinceConfirmed} ` +
        `handled since the cursors last confirmed to it (what a commit-based group delivers ` +
        `again); ${crash.belowConfirmed} at or below a confirmed cursor; ${crash.unhandled} ` +
        `written cells never handled (${count(crash.writing.written)} written)`,
    }),
  );
  add(
    'poison cell (its handler kills the member)',
    'NATS: unlimited redelivery',
    `parked after maxDeliveries (${settings.maxDeliveries}), counted across crashes; its shard goes on`,
    result.poison,
    (poison) => {
      const parked = poison.parkedAttempts !== undefined;
      return {
        measured: parked
          ? `parked after ${poison.deliveries}, ${poison.afterHandled}/${poison.after} after it handled`
          : `not parked after ${poison.deliveries}`,
        met:
          parked &&
          poison.deliveries === poison.maxDeliveries &&
          poison.parkedAttempts === poison.maxDeliveries &&
          poison.afterHandled === poison.after,
        details:
          `delivered ${poison.deliveries} times, each killing its member process (${poison.crashes} ` +
          `crashes, each member replaced by a new process); ` +
          (parked
            ? `parked with ${poison.parkedAttempts} deliveries recorded, ${seconds(poison.parkedAfterMs ?? Number.NaN)} after it was written; ` +
              `the ${poison.after} cells after it on its shard handled` +
              (poison.resumedAfterMs === undefined ? '' : ` ${ms(poison.resumedAfterMs)} after`)
            : 'not parked within 60 s'),
      };
    },
  );
  add(
    "one member's throughput, 1 KB cells, no-op handler",
    '—',
    `≥ ${count(MEMBER_CELLS_PER_SECOND)} cells/s`,
    result.throughput,
    (throughput) => {
      const member = mean(throughput.defaults.map((run) => run.cellsPerSecond));
      const each = mean(throughput.each.map((run) => run.cellsPerSecond));
      const runs = (list: readonly { cellsPerSecond: number }[]) =>
        list.map((run) => count(run.cellsPerSecond)).join(' and ');
      return {
        measured: `${count(member)} cells/s (Each ${count(each)})`,
        met: member >= MEMBER_CELLS_PER_SECOND,
        details:
          `one member over ${throughput.cells.toLocaleString('en-US')} cells on every shard: ${runs(throughput.defaults)} cells/s ` +
          `(CPU a cell: member ${throughput.defaults[0]!.readerCpuPerCell.toFixed(1)} µs, server ` +
          `${throughput.defaults[0]!.serverCpuPerCell?.toFixed(1) ?? '?'} µs); Each of the same cells ` +
          `in the same kind of process: ${runs(throughput.each)} cells/s (${throughput.each[0]!.readerCpuPerCell.toFixed(1)} ` +
          `and ${throughput.each[0]!.serverCpuPerCell?.toFixed(1) ?? '?'} µs); other settings: ` +
          throughput.alternatives
            .map((run) => `${run.label.replace('member, ', '')} ${count(run.cellsPerSecond)}`)
            .join(', '),
      };
    },
  );
  add(
    'commit → handler, at 1,000 writes/s',
    '—',
    `p50 ≤ ${COMMIT_TO_HANDLER_P50_MS} ms`,
    result.latency,
    (latency) => ({
      measured: `p50 ${latency.member.fromCreatedAt.p50.toFixed(1)} ms (Each ${latency.each.fromCreatedAt.p50.toFixed(1)})`,
      met:
        latency.member.fromCreatedAt.p50 <= COMMIT_TO_HANDLER_P50_MS &&
        latency.member.missing === 0,
      details:
        `from each cell's createdAt (the server's clock, before its commit) to its handler's ` +
        `start: p50 ${latency.member.fromCreatedAt.p50.toFixed(1)} ms, p99 ${latency.member.fromCreatedAt.p99.toFixed(1)}, ` +
        `over ${count(latency.member.fromCreatedAt.count)} cells (${latency.member.missing} missing); ` +
        `from the write's acknowledgement: p50 ${latency.member.fromAcknowledgement.p50.toFixed(1)}, ` +
        `p99 ${latency.member.fromAcknowledgement.p99.toFixed(1)}; an Each follow of the same writes: ` +
        `p50 ${latency.each.fromCreatedAt.p50.toFixed(1)}, p99 ${latency.each.fromCreatedAt.p99.toFixed(1)} ` +
        `(from acknowledgement ${latency.each.fromAcknowledgement.p50.toFixed(1)}); ` +
        `${count(latency.writing.writesPerSecond)} writes/s reached, their own p50 ` +
        `${latency.writing.latency.p50.toFixed(1)} ms`,
    }),
  );
  return verdicts;
}

export function formatConsumerTargets(
  result: ConsumerResult,
  verdicts: readonly ConsumerVerdict[],
): string {
  const verdict = (met: boolean | undefined) =>
    met === undefined ? 'not measured' : met ? 'met' : 'NOT met';
  const columns = ['figure', 'anchor', 'target', 'this run', ''];
  const rows = verdicts.map((v) => [v.figure, v.anchor, v.target, v.measured, verdict(v.met)]);
  const widths = columns.map((title, i) =>
    Math.max(title.length, ...rows.map((row) => row[i]!.length)),
  );
  const render = (cells: readonly string[]) =>
    `| ${cells.map((cell, i) => cell.padEnd(widths[i]!)).join(' | ')} |`;
  const met = verdicts.filter((v) => v.met === true).length;
  const measured = verdicts.filter((v) => v.met !== undefined).length;
  const { settings, plan } = result;
  return [
    `Consumer groups (issue 52): ${met} of ${measured} measured met, ${verdicts.length - measured} not measured`,
    '',
    render(columns),
    `|${widths.map((width) => '-'.repeat(width + 2)).join('|')}|`,
    ...rows.map(render),
    '',
    `Measured with the defaults users get: sessionTimeoutMs ${count(settings.sessionTimeoutMs)}, ` +
      `maxInFlight ${settings.maxInFlight}, perShardInFlight ${settings.perShardInFlight}, ` +
      `maxDeliveries ${settings.maxDeliveries} (the SDK's), --group-poll-ms ${settings.groupPollMs} ` +
      `(the server's); ${settings.shards} shards. Members are node processes running the SDK, ` +
      `behind two shameless serve processes (the SIGKILLed and the cut-off member behind the ` +
      `second, the other behind the first); ${count(plan.writesPerSecond)} writes/s of 1 KB cells ` +
      `through the SDK while members join, restart, crash and are cut off.`,
    ...verdicts.map((v) => `  ${v.figure}: ${v.details}.`),
  ].join('\n');
}
