// A read beside the gem-shaped service's, in short windows taken in turn: a lone read, and 16 in
// flight. One call at a time, a read's latency is the sum of three processes' CPU taking turns on
// the machine's cores; 16 at a time, the throughput is what those processes get of its two cores.
// This machine's speed swings within minutes (up to a fifth of its cores taken by the host at
// times): one window of each side, measured seconds or a minute apart, can differ by the moment
// they ran in rather than by the code. Rounds of both sides in turn compare the two at the same
// moments (and, for a lone read where the workload has them, a third side, the store's protocol
// over a bare handler, and a fourth, the store's server with no SDK). The machine's pace changes in steps that last seconds
// (a lone read's p50 in quarter-second windows went from 0.3 ms to 1.1 ms and back within a
// minute, the code and the load the same), so the rounds are short and many, and a side's ratio
// to the service is taken in each round and the median of those kept: a round that straddles a
// step moves one ratio, not a side's median against another's taken at other moments.
import type { CpuPerOperation } from '../measure/processCpu.js';

/**
 * What one side's window measured: its p50 (ms), its processes' CPU per operation (µs) and its
 * operations a second.
 */
export interface RoundFigures {
  readonly p50: number;
  readonly cpu: CpuPerOperation;
  /** Undefined where the window's count was not kept. */
  readonly opsPerSecond?: number;
}

/** A side's figures over the service's, each the median of the rounds' own ratios. */
export interface RatiosToService {
  /** p50 over the service's p50. */
  readonly p50: number;
  /**
   * CPU per read, its three processes summed, over the service's; absent unless every round
   * read all three for both.
   */
  readonly cpu?: number;
  /** Operations a second over the service's; absent unless every round counted both. */
  readonly opsPerSecond?: number;
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
  /** Each side's ratios to the service's figures of the same round, the median over the rounds. */
  readonly overService: {
    readonly store: RatiosToService;
    readonly floor?: RatiosToService;
    readonly bareClient?: RatiosToService;
  };
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
    overService: {
      store: ratiosToService(stores, services),
      ...(sides.floor ? { floor: ratiosToService(floors, services) } : {}),
      ...(sides.bareClient ? { bareClient: ratiosToService(bareClients, services) } : {}),
    },
  };
}

/** The median over the rounds of `side`'s figures over the service's of the same round. */
export function ratiosToService(
  side: readonly RoundFigures[],
  service: readonly RoundFigures[],
): RatiosToService {
  const p50 = median(side.map((round, i) => round.p50 / service[i]!.p50));
  const cpus = side.map((round, i) => {
    const ours = cpuSum(round.cpu);
    const theirs = cpuSum(service[i]!.cpu);
    return ours === undefined || theirs === undefined ? undefined : ours / theirs;
  });
  const throughputs = side.map((round, i) => {
    const theirs = service[i]!.opsPerSecond;
    return round.opsPerSecond === undefined || theirs === undefined
      ? undefined
      : round.opsPerSecond / theirs;
  });
  return {
    p50,
    ...(everyDefined(cpus) ? { cpu: median(cpus) } : {}),
    ...(everyDefined(throughputs) ? { opsPerSecond: median(throughputs) } : {}),
  };
}

function everyDefined(values: readonly (number | undefined)[]): values is number[] {
  return values.every((value) => value !== undefined);
}

/** A read's CPU in its three processes together; undefined when one was not read. */
export function cpuSum({ server, client, mariadb }: CpuPerOperation): number | undefined {
  return server === undefined || client === undefined || mariadb === undefined
    ? undefined
    : server + client + mariadb;
}

/**
 * Each figure's median over the rounds (a process's CPU, or the operations a second, only where
 * every round read it).
 */
export function medianFigures(rounds: readonly RoundFigures[]): RoundFigures {
  const cpu: { -readonly [P in keyof CpuPerOperation]: number } = {};
  for (const which of ['server', 'client', 'mariadb'] as const) {
    const values = rounds.map((round) => round.cpu[which]);
    if (everyDefined(values)) cpu[which] = median(values);
  }
  const throughputs = rounds.map((round) => round.opsPerSecond);
  return {
    p50: median(rounds.map((round) => round.p50)),
    cpu,
    ...(everyDefined(throughputs) ? { opsPerSecond: median(throughputs) } : {}),
  };
}

/** The middle value (the mean of the middle two for an even count); NaN for none. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}
