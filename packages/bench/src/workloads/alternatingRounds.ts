// A lone read beside the gem-shaped service's, in short windows taken in turn. One call at a
// time, a read's latency is the sum of three processes' CPU taking turns on the machine's cores,
// and this machine's speed swings within minutes (up to a fifth of its cores taken by the host at
// times): one window of each side, measured a minute apart, can differ by the hour they ran in
// rather than by the code. Rounds of both sides in turn, and the median of each figure over the
// rounds, compare the two at the same moments.
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
}

/** One window of a side. */
export type RoundWindow = () => Promise<RoundFigures>;

/** `rounds` rounds, each the store's window then the service's. */
export async function alternateRounds(
  rounds: number,
  store: RoundWindow,
  service: RoundWindow,
  onRound?: (done: number) => void,
): Promise<AlternatingRounds> {
  const stores: RoundFigures[] = [];
  const services: RoundFigures[] = [];
  for (let round = 1; round <= rounds; round++) {
    stores.push(await store());
    services.push(await service());
    onRound?.(round);
  }
  return { rounds, store: medianFigures(stores), service: medianFigures(services) };
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
