// `shameless plan`: print what serving the store (and defining the given models) would change
// in its databases, as SQL with the reason for each statement, and what was checked; change
// nothing. The output reads as SQL, partition by partition, with checks and reasons as
// comments, so that an operator can review and plan the changes before a first start.
import type { ModelSpec } from '../engine/index.js';
import type { SchemaChange } from '../engine/schema/schemaPlan.js';
import { type StorePlan, planStore } from '../engine/storePlan.js';
import { PLAN_EXIT } from './planExit.js';
import { type Settings, storeShapeOf } from './settings.js';

export { PLAN_EXIT } from './planExit.js';

export async function plan(
  settings: Settings,
  models: readonly { source: string; spec: ModelSpec }[],
  print: (line: string) => void,
): Promise<number> {
  const result = await planStore(
    {
      ...storeShapeOf(settings),
      connectTimeoutMs: settings.connectTimeoutMs,
    },
    models,
  );
  for (const line of formatPlan(result)) print(line);
  if (result.checks.some((check) => !check.ok)) return PLAN_EXIT.checkFailed;
  // A row is a change too: a script that starts serving only after `plan` exits 0 must not
  // find the store's layout or a definition written behind it.
  return writesAnything(result) ? PLAN_EXIT.changes : PLAN_EXIT.nothingToChange;
}

function writesAnything(plan: StorePlan): boolean {
  return plan.changes.length > 0 || plan.rows.length > 0;
}

export function formatPlan(plan: StorePlan): string[] {
  const { layout } = plan;
  const lines = [
    `-- shameless plan: namespace ${JSON.stringify(layout.namespace)}, ${layout.shardsCount} shards ` +
      `on ${layout.partitionCount} partition(s), created_at ${layout.createdAt === 'bigint' ? 'BIGINT milliseconds (legacyCreatedAtIsBigint)' : 'DATETIME'}`,
    '--',
    '-- checked:',
    ...plan.checks.map((check) => `--   ${check.ok ? 'ok    ' : 'FAILED'} ${check.text}`),
  ];
  const failed = plan.checks.some((check) => !check.ok);
  if (plan.changes.length === 0) {
    lines.push(
      '--',
      failed
        ? '-- no schema change listed; fix what FAILED above first'
        : writesAnything(plan)
          ? '-- no schema change, but serving writes the rows listed below'
          : '-- nothing to change: serving this store as configured changes no schema and writes no row',
    );
  } else {
    lines.push(
      '--',
      `-- ${plan.changes.length} schema change(s)${failed ? ', as far as the FAILED checks above let the plan see' : ''}:`,
    );
    plan.partitions.forEach((location, partition) => {
      const changes = plan.changes.filter((change) => change.partition === partition);
      if (changes.length === 0) return;
      lines.push('', `-- partition ${partition}: ${location}`);
      for (const change of changes) lines.push(...formatChange(change));
    });
  }
  if (plan.rows.length > 0) {
    lines.push('', '-- rows written besides (data, not schema):');
    lines.push(...plan.rows.map((row) => `--   ${row}`));
  }
  return lines;
}

function formatChange(change: SchemaChange): string[] {
  return [`-- ${change.reason}`, `${change.sql};`];
}
