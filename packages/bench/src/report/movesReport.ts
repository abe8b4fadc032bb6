// The shard moves' rows (`--workloads moves`): the mover's copy beside `mariadb-dump | mariadb`
// of the same tables, the cut-overs under writes beside the writes to shards nobody moves, and
// issue 54's targets.
import {
  type CutOverResult,
  HOLD_TARGET_MS,
  type WritesDuring,
} from '../workloads/cutOversUnderWrites.js';
import { MOVE_COPY_TARGET, type MovesResult } from '../workloads/shardMoveCopy.js';
import { alignedColumns } from './alignedColumns.js';

export function formatMovesRows(result: MovesResult): string {
  const { plan } = result;
  const cells = plan.cells.toLocaleString('en-US');
  const rate = (perSecond: number) => Math.round(perSecond).toLocaleString('en-US');
  const header = ['', 'time (ms)', 'cells/s', '× mariadb-dump'];
  const rows = [
    [
      'mover copy (created → copied)',
      Math.round(result.copyMs).toLocaleString('en-US'),
      rate(result.copyCellsPerSecond),
      (result.copyCellsPerSecond / result.dumpCellsPerSecond).toFixed(2),
    ],
    [
      'mover, whole move',
      Math.round(result.moveMs).toLocaleString('en-US'),
      rate(plan.cells / (result.moveMs / 1000)),
      (plan.cells / (result.moveMs / 1000) / result.dumpCellsPerSecond).toFixed(2),
    ],
    [
      'mariadb-dump | mariadb',
      Math.round(result.dumpMs).toLocaleString('en-US'),
      rate(result.dumpCellsPerSecond),
      '1.00',
    ],
  ];
  const met = result.copyCellsPerSecond >= MOVE_COPY_TARGET;
  const held = result.underWrites;
  return [
    `Shard moves: one shard of ${cells} cells of ${plan.bodyBytes} bytes copied from the bench's MySQL ` +
      'to a MariaDB of its own on a loopback port',
    ...alignedColumns(header, rows),
    `  whole move: create, copy, catch up, verify (counts and checksums), cut over; writes held ` +
      `at the cut-over ${result.holdMs.toFixed(0)} ms (no writes were coming)`,
    ...(held ? formatCutOvers(held) : []),
    'Targets (issue 54):',
    `  ${met ? 'met    ' : 'NOT met'}  mover copy ${rate(result.copyCellsPerSecond)} cells/s ` +
      `(target ≥ ${MOVE_COPY_TARGET.toLocaleString('en-US')})`,
    held
      ? holdVerdict(held)
      : '  not measured  writes held at the cut-over under writes (the cut-overs need ' +
        '--shards-count 9 or more)',
  ].join('\n');
}

/** The cut-overs under writes: each shard's hold, and the writes' latency beside the baseline. */
export function formatCutOvers(result: CutOverResult): string[] {
  const { plan } = result;
  const shards = (list: readonly number[]) => `shards ${list.join(', ')}`;
  return [
    `Cut-overs under writes: ${shards(plan.moving)} moved to the second server in ` +
      `${(result.moveMs / 1000).toFixed(1)} s while ${plan.writesPerSecond} WriteCells a second ` +
      `(${plan.bodyBytes} bytes) went to them through two servers taking turns, and ` +
      `${plan.writesPerSecond / 4} a second to ${shards(result.staying)}, which stayed`,
    `  writes held at each cut-over: ${result.holds.map(({ shard, holdMs }) => `shard ${shard} ${holdMs.toFixed(0)} ms`).join(', ')}`,
    ...alignedColumns(
      ['writes during the move', 'count', 'p50 ms', 'p99 ms', 'max ms', 'refused'],
      [
        writesRow('to the shards moved', result.moved),
        writesRow('to the shards that stayed (baseline)', result.stayed),
      ],
    ),
    ...(result.firstRefusal ? [`  first refused: ${result.firstRefusal}`] : []),
  ];
}

function writesRow(name: string, writes: WritesDuring): string[] {
  const ms = (value: number) => (Number.isNaN(value) ? '-' : value.toFixed(1));
  return [
    name,
    String(writes.count),
    ms(writes.p50),
    ms(writes.p99),
    ms(writes.max),
    String(writes.refused),
  ];
}

function holdVerdict(result: CutOverResult): string {
  const met =
    result.holdP99Ms <= HOLD_TARGET_MS && result.moved.refused === 0 && result.stayed.refused === 0;
  return (
    `  ${met ? 'met    ' : 'NOT met'}  writes held at the cut-over: p99 ${result.holdP99Ms.toFixed(0)} ms ` +
    `over ${result.holds.length} shards, ${result.moved.refused + result.stayed.refused} refused ` +
    `(target ≤ ${HOLD_TARGET_MS} ms, 0 refused, under ${result.plan.writesPerSecond} writes/s)`
  );
}
