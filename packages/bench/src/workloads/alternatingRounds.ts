// A lone read beside the gem-shaped service's, in short windows taken in turn. One call at a
// time, a read's latency is the sum of three processes' CPU taking turns on the machine's cores,
// and this machine's speed swings within minutes (up to a fifth of its cores taken by the host at
// times): one window of each side, measured a minute apart, can differ by the hour they ran in
// rather than by the code. Rounds of both sides in turn, and the median of each figure over the
// rounds, compare the two at the same moments (and, where the workload has them, a third side,
// the store's protocol over a bare handler, and a fourth, the store's server with no SDK).
import type { CpuPerOperation } from '../measure/processCpu.js';

/** What one side's window measured: its p50 (ms), and its processes' CPU per operation (µs). */
export interface RoundFigures {
  readonly p50: number;
  readonly cpu: CpuPerOperation;
}

/** Both sides over the same rounds: each figure the median of its rounds. */
export interface AlternatingRounds {
  readonly rounds: number;
  readonly store: RoundFigures;
  readonly service: RoundFigures;
  /**
   * The store's protocol over a bare handler (protocolFloor.ts), where the workload has it: a
   * third window each round, after the service's.
   */
  readonly floor?: RoundFigures;
  /**
   * The store's server called by a bare Pipeline client (the generated StoreClient, no SDK), where
   * the workload has one: the last window each round. The store's figures over these are the SDK's
   * share of the gap; these over the floor's, the server's.
   */
  readonly bareClient?: RoundFigures;
}

/** One window of a side. */
export type RoundWindow = () => Promise<RoundFigures>;

/**
 * The sides taken in turn: the store's window, then the service's, then the floor's and the bare
 * client's, each if any.
 */
export interface RoundSides {
  readonly store: RoundWindow;
  readonly service: RoundWindow;
  readonly floor?: RoundWindow;
  readonly bareClient?: RoundWindow;
}

/** `rounds` rounds, each the store's window, then the service's, the floor's, the bare client's. */
export async function alternateRounds(
  rounds: number,
  sides: RoundSides,
  onRound?: (done: number) => void,
): Promise<AlternatingRounds> {
  const stores: RoundFigures[] = [];
  const services: RoundFigures[] = [];
  const floors: RoundFigures[] = [];
  const bareClients: RoundFigures[] = [];
  for (let round = 1; round <= rounds; round++) {
    stores.push(await sides.store());
    services.push(await sides.service());
    if (sides.floor) floors.push(await sides.floor());
    if (sides.bareClient) bareClients.push(await sides.bareClient());
    onRound?.(round);
  }
  return {
    rounds,
    store: medianFigures(stores),
    service: medianFigures(services),
    ...(sides.floor ? { floor: medianFigures(floors) } : {}),
    ...(sides.bareClient ? { bareClient: medianFigures(bareClients) } : {}),
  };
}

/** Each figure's median over the rounds (a process's CPU only where every round read it). */
export function medianFigures(rounds: readonly RoundFigures[]): RoundFigures {
  const cpu: { -readonly [P in keyof CpuPerOperation]: number } = {};
  for (const which of ['server', 'client', 'mariadb'] as const) {
    const values = rounds.map((round) => round.cpu[which]);
    if (values.every((value) => value !== undefined)) cpu[which] = median(values);
  }
  return { p50: median(rounds.map((round) => round.p50)), cpu };
}

/** The middle value (the mean of the middle two for an even count); NaN for none. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}
