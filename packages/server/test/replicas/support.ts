// Shared by the read-replica tests (issue 53): calls that carry consistency metadata and read
// their trailers, the statement counters of a MariaDB server, and waiting for a replica's state
// as DescribeStore shows it.
//
// Who ran a read is told by MariaDB's own counters (the test kit's watchStatements): `Com_select`
// counts every SELECT, `Master_gtid_wait_count` every MASTER_GTID_WAIT (itself a SELECT) that a
// session read sent to wait for its token. Besides the reads, each engine's replica monitor
// sends one SELECT to the primary and one to each replica every --replica-check-ms, and its
// health probe one to the primary every --health-check-ms; `probeBound` bounds the former from
// the time a window lasted.
import { Metadata, type ServiceError, status } from '@grpc/grpc-js';
import {
  type DescribeStoreResponse,
  Operator,
  Replica_State,
  SortOrder,
  type StoreClient,
  type WhereRequest,
  type WhereResponse,
} from '@shameless/proto';
import { type StatementCounts, watchStatements } from '@shameless/testkit';
import type { UnaryMethod } from '../../src/commands/connection.js';
import { type StoreApi, collect } from '../support/grpcCalls.js';

export const CONSISTENCY = 'shameless-consistency';
export const SESSION_TOKEN = 'shameless-session-token';
export const MAX_STALENESS = 'shameless-max-staleness-ms';

/** The metadata of a `session` read, with the token when there is one. */
export const sessionRead = (token?: string): Record<string, string> =>
  token === undefined
    ? { [CONSISTENCY]: 'session' }
    : { [CONSISTENCY]: 'session', [SESSION_TOKEN]: token };

/** The metadata of a `bounded` read. */
export const boundedRead = (maxStalenessMs: number): Record<string, string> => ({
  [CONSISTENCY]: 'bounded',
  [MAX_STALENESS]: String(maxStalenessMs),
});

export interface Answered<Res> {
  readonly response: Res;
  /** The call's trailers (text entries). */
  readonly trailers: Record<string, string>;
}

/** A unary call with request metadata; its answer and its trailers. */
export function callWith<Req, Res>(
  client: StoreClient,
  method: UnaryMethod<Req, Res>,
  request: Req,
  metadata: Record<string, string> = {},
  deadlineMs = 15_000,
): Promise<Answered<Res>> {
  const sent = metadataOf(metadata);
  return new Promise((resolve, reject) => {
    let response: Res | undefined;
    const call = method.call(
      client,
      request,
      sent,
      { deadline: Date.now() + deadlineMs },
      (error: ServiceError | null, answer: Res) => {
        if (error) reject(error);
        else response = answer;
      },
    );
    // grpc-js emits the status (with the trailers) right after the callback.
    call.on('status', (ended) => {
      if (ended.code !== status.OK) return;
      const trailers: Record<string, string> = {};
      for (const [key, value] of Object.entries(ended.metadata.getMap())) {
        if (typeof value === 'string') trailers[key] = value;
      }
      resolve({ response: response!, trailers });
    });
  });
}

/** What a primary and its replica ran between two readings. */
export interface StatementDeltas {
  readonly primarySelects: number;
  readonly replicaSelects: number;
  readonly replicaGtidWaits: number;
  /** How long the window lasted, readings included. */
  readonly elapsedMs: number;
}

/** Reads both servers' counters now; `delta()` tells what ran since. */
export async function countStatements(
  primaryUrl: string,
  replicaUrl: string,
): Promise<{ delta(): Promise<StatementDeltas> }> {
  const watch = await watchStatements([primaryUrl, replicaUrl]);
  return {
    async delta() {
      const { servers, elapsedMs } = await watch.delta();
      const [primary, replica] = servers as [StatementCounts, StatementCounts];
      return {
        primarySelects: primary.selects,
        replicaSelects: replica.selects,
        replicaGtidWaits: replica.gtidWaits,
        elapsedMs,
      };
    },
  };
}

/**
 * The most lag probes `engines` replica monitors probing every `intervalMs` can send to one
 * server in `elapsedMs`: one at start and one per interval each, plus one for a probe that
 * straddles an edge of the window.
 */
export function probeBound(elapsedMs: number, intervalMs: number, engines: number): number {
  return engines * (Math.ceil(elapsedMs / intervalMs) + 2);
}

/** The first replica of a partition (0 by default), as DescribeStore shows it. */
export function replicaOf(description: DescribeStoreResponse, partition = 0) {
  const replica = description.partitions[partition]?.replicas[0];
  if (!replica) throw new Error(`DescribeStore shows no replica of partition ${partition}`);
  return replica;
}

/**
 * Polls DescribeStore until the replica of `partition` (0 by default) is in `state`; how long
 * that took, in ms. Rejects after `timeoutMs`, saying the state it was in.
 */
export async function waitForReplicaState(
  api: StoreApi,
  state: Replica_State,
  timeoutMs: number,
  partition = 0,
): Promise<number> {
  const startedAt = Date.now();
  for (;;) {
    const replica = replicaOf(await api.describeStore({}), partition);
    if (replica.state === state) return Date.now() - startedAt;
    if (Date.now() - startedAt > timeoutMs) {
      throw new Error(
        `the replica was not ${Replica_State[state]} within ${timeoutMs} ms: ${Replica_State[replica.state]}, lag ${replica.lagMs ?? 'unknown'} ms`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** `url` with its database path set to `database`. */
export function withDatabase(serverUrl: string, database: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

/** The latencies of the reads sent from `fromMs` to `toMs`. */
export function sentBetween(result: OpenLoopResult, fromMs: number, toMs: number): number[] {
  return result.latencies.filter((_, i) => result.sentAt[i]! >= fromMs && result.sentAt[i]! < toMs);
}

/** The nearest-rank percentile of `samples` (ms). */
export function percentile(samples: readonly number[], fraction: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length, Math.max(1, Math.ceil(fraction * sorted.length))) - 1]!;
}

export interface OpenLoopResult {
  /** Each read's latency, in ms, from when it was sent. */
  readonly latencies: number[];
  /** When each read of `latencies` was sent, in ms from the start (same order). */
  readonly sentAt: number[];
  /** The message of each read that failed. */
  readonly errors: string[];
  /** Reads per second actually sent. */
  readonly sentPerSecond: number;
}

/**
 * Sends `read(i)` at `ratePerSecond` for `durationMs` whatever the answers take (an open loop:
 * a slow answer delays no later read), and runs each of `events` at its time, without waiting for
 * it; resolves once every read has answered and every event has ended.
 */
export async function openLoop(
  ratePerSecond: number,
  durationMs: number,
  read: (i: number) => Promise<unknown>,
  events: readonly { readonly atMs: number; readonly run: () => Promise<unknown> }[] = [],
): Promise<OpenLoopResult> {
  const latencies: number[] = [];
  const sentAtMs: number[] = [];
  const errors: string[] = [];
  const pending: Promise<unknown>[] = [];
  const startedAt = performance.now();
  const waiting = [...events].sort((x, y) => x.atMs - y.atMs);
  let sent = 0;
  for (;;) {
    const elapsed = performance.now() - startedAt;
    while (waiting.length > 0 && waiting[0]!.atMs <= elapsed) pending.push(waiting.shift()!.run());
    if (elapsed >= durationMs) break;
    const due = Math.floor((elapsed * ratePerSecond) / 1000);
    for (; sent < due; sent += 1) {
      const sentAt = performance.now();
      pending.push(
        read(sent).then(
          () => {
            latencies.push(performance.now() - sentAt);
            sentAtMs.push(sentAt - startedAt);
          },
          (error: unknown) => errors.push(error instanceof Error ? error.message : String(error)),
        ),
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  await Promise.all(pending);
  return { latencies, sentAt: sentAtMs, errors, sentPerSecond: (sent * 1000) / durationMs };
}

/** A Where with `=` on each of `values`' fields, on `model`'s `index` ('' for the primary). */
export function whereEqual(
  model: string,
  index: string,
  values: Readonly<Record<string, number | string>>,
  cells = ['base'],
): WhereRequest {
  return {
    model,
    index,
    conditions: Object.entries(values).map(([field, value]) => ({
      field,
      op: Operator.OPERATOR_EQ,
      values: [
        {
          kind:
            typeof value === 'number'
              ? { $case: 'integer' as const, integer: BigInt(value) }
              : { $case: 'string' as const, string: value },
        },
      ],
    })),
    cells,
    order: SortOrder.SORT_ORDER_ASC,
    limit: 0,
    pageToken: '',
  };
}

/** Request metadata with `entries`. */
export function metadataOf(entries: Record<string, string>): Metadata {
  const metadata = new Metadata();
  for (const [key, value] of Object.entries(entries)) metadata.set(key, value);
  return metadata;
}

/** A whole Where stream through `api`, with request metadata. */
export function whereWith(
  api: StoreApi,
  request: WhereRequest,
  metadata: Record<string, string> = {},
): Promise<WhereResponse[]> {
  return collect(api.client.where(request, metadataOf(metadata)));
}
