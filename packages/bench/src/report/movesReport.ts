// The shard move's row (`--workloads moves`): the mover's copy beside `mariadb-dump | mariadb`
// of the same tables, and the target of issue 54.
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
  return [
    `Shard moves: one shard of ${cells} cells of ${plan.bodyBytes} bytes copied from the bench's MySQL ` +
      'to a MariaDB of its own on a loopback port',
    ...alignedColumns(header, rows),
    `  whole move: create, copy, catch up, verify (counts and checksums), cut over; writes held ` +
      `at the cut-over ${result.holdMs.toFixed(0)} ms (no writes were coming)`,
    'Target (issue 54):',
    `  ${met ? 'met    ' : 'NOT met'}  mover copy ${rate(result.copyCellsPerSecond)} cells/s ` +
      `(target ≥ ${MOVE_COPY_TARGET.toLocaleString('en-US')})`,
  ].join('\n');
}
