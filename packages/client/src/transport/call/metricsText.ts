// A transport's counters in the Prometheus text exposition format (version 0.0.4), for a
// process that serves its own /metrics: no client library needed, nothing kept besides the
// counters themselves.

import type { TransportStats } from './stats.js';

/** What each counter means, and whether it only grows (counter) or moves (gauge). */
const METRICS: { readonly [K in keyof TransportStats]: readonly [string, 'counter' | 'gauge'] } = {
  calls: ['Logical calls started (a coalesced batch is one).', 'counter'],
  attempts: ['Attempts sent: first attempts, retries and hedges.', 'counter'],
  retries: ['Retries sent after a transient failure.', 'counter'],
  hedges: ['Hedges sent while another attempt was out.', 'counter'],
  hedgesWon: ['Calls answered by a hedge.', 'counter'],
  budgetRefusals: ['Retries or hedges refused by the token budget.', 'counter'],
  failures: ['Calls that ended in an error, after any retries.', 'counter'],
  coalescedCalls: ['Calls sent inside a batch by the coalescing layer.', 'counter'],
  coalescedBatches: ['Batch calls the coalescing layer sent.', 'counter'],
  batchFallbacks: ['Batches that failed whole and were sent again in parts.', 'counter'],
  heldCalls: ['Calls held back while batch calls of their kind were out.', 'counter'],
  pipelinedAttempts: ['Attempts sent over a Pipeline stream.', 'counter'],
  budgetTokens: ['Tokens left in the retry/hedge budget.', 'gauge'],
};

/**
 * Formats `stats` as Prometheus text: `shameless_client_calls_total 12`, ... Counters get the
 * `_total` suffix; `labels` (e.g. `{ store: 'rates' }`) are added to every sample.
 */
export function metricsText(
  stats: TransportStats,
  labels: Readonly<Record<string, string>> = {},
  prefix = 'shameless_client_',
): string {
  const labelText = Object.entries(labels)
    .map(([name, value]) => `${name}="${escapeLabel(value)}"`)
    .join(',');
  const suffix = labelText === '' ? '' : `{${labelText}}`;
  const lines: string[] = [];
  for (const key of Object.keys(METRICS) as (keyof TransportStats)[]) {
    const [help, type] = METRICS[key];
    const name = `${prefix}${snakeCase(key)}${type === 'counter' ? '_total' : ''}`;
    lines.push(
      `# HELP ${name} ${help}`,
      `# TYPE ${name} ${type}`,
      `${name}${suffix} ${stats[key]}`,
    );
  }
  return `${lines.join('\n')}\n`;
}

function snakeCase(name: string): string {
  return name.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}
