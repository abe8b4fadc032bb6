// A fuzzing campaign: fast-check draws cases from a seed, each is sent to the running server,
// and after each the invariants are checked: the process lives and answers DescribeStore, every
// status and message is one the contract allows, refused writes left nothing and acknowledged
// ones are stored, memory stays under its ceiling, no error was logged; every few cases the
// store is swept. A failing case is shrunk by fast-check and reported with its seed, its RPC,
// its bytes in hex and their decoded view, and the command that replays it.
//
// Cases run in rounds of ROUND_RUNS, each its own fast-check run with a seed made from the
// campaign's seed and the round's number, so that a campaign of any length stops between rounds
// and a failure replays on its own: `--seed N --round R --path P`.
import fc from 'fast-check';
import { status } from '@grpc/grpc-js';
import { type ModelDefinition, PipelineResponse } from '@shameless/proto';
import { type CallRecord, Markers, exchange } from './exchange.js';
import { contractOf, decodedView, hexView, tryDecode } from './contract.js';
import { type Fate, callProblems, codeName, writeFates } from './invariants.js';
import { type FuzzCase, type Rpc, RPCS, fuzzCases } from './requests.js';
import { StoreAudit } from './storeAudit.js';
import { FuzzTarget, RSS_CEILING_BYTES } from './target.js';
import { MODEL_NAMES, NEW_MODEL_NAMES, SHARDS_COUNT } from './world.js';

/** Cases per fast-check run. */
export const ROUND_RUNS = 100;

export interface CampaignOptions {
  readonly seed: number;
  /** Stop after this many cases (shrinking aside)… */
  readonly cases?: number;
  /** …or once this many milliseconds have passed, between rounds. */
  readonly durationMs?: number;
  /** Replay: the round of a failure, and its fast-check path. */
  readonly round?: number;
  readonly path?: string;
  /** The deepest nesting of a body drawn (200,000 levels by default). */
  readonly maxDepth?: number;
  /** Only writes of deeply nested bodies (requests.ts, deepBodyWrites). */
  readonly deepBodiesOnly?: boolean;
  /** Sweep the store every this many cases (and at the end). */
  readonly auditEvery?: number;
  /** Called every `progressEveryMs` with the figures so far. */
  readonly progress?: (figures: Figures) => void;
  readonly progressEveryMs?: number;
  /** Asked between cases: true stops the campaign (Ctrl-C), the store swept and dropped. */
  readonly stopRequested?: () => boolean;
}

export interface Figures {
  readonly elapsedMs: number;
  /** Cases sent, shrinking included. */
  readonly cases: number;
  /** Calls per RPC (a unary case sent twice at once counts twice). */
  readonly calls: ReadonlyMap<Rpc, number>;
  /** Final statuses of calls, and of each call of a Pipeline. */
  readonly statuses: ReadonlyMap<string, number>;
  /** The fields INVALID_ARGUMENT answers named (shameless-field), Pipeline calls' included. */
  readonly refusedFields: ReadonlyMap<string, number>;
  readonly rssBytes: number;
  readonly peakRssBytes: number;
  /** The case that raised the peak the most: its RPC and by how much. */
  readonly peakJump?: { readonly rpc: Rpc; readonly bytes: number };
  readonly restarts: number;
  readonly sweeps: number;
}

export interface CampaignResult {
  readonly seed: number;
  readonly rounds: number;
  readonly figures: Figures;
  /** Undefined when every case kept every invariant. */
  readonly failure?: string;
}

/** A case's problems, as fast-check's failure. */
class Violation extends Error {}

/** The seed of one round: the campaign's seed and the round's number, mixed. */
export function roundSeed(seed: number, round: number): number {
  return (seed ^ Math.imul(round + 1, 0x9e3779b1)) | 0;
}

const increment = <K>(map: Map<K, number>, key: K, by = 1) =>
  map.set(key, (map.get(key) ?? 0) + by);

export async function runCampaign(options: CampaignOptions): Promise<CampaignResult> {
  const started = Date.now();
  const target = await FuzzTarget.start();
  const run = new Campaign(target, options, started);
  const timer =
    options.progress &&
    setInterval(() => options.progress!(run.figures()), options.progressEveryMs ?? 5000);
  try {
    return await run.all();
  } finally {
    if (timer) clearInterval(timer);
    await target.close();
  }
}

class Campaign {
  private readonly markers: Markers;
  private readonly audit: StoreAudit;
  private readonly calls = new Map<Rpc, number>();
  private readonly statuses = new Map<string, number>();
  private readonly refusedFields = new Map<string, number>();
  private cases = 0;
  private sweeps = 0;
  private rssBytes = 0;
  private peakRssBytes = 0;
  private peakJump: { rpc: Rpc; bytes: number } | undefined;
  /** Models as the last DescribeStore stated them. */
  private models: readonly ModelDefinition[] = [];
  /** Cases since the last clean sweep, for a sweep's report. */
  private window: { fuzz: FuzzCase; calls: CallRecord[] }[] = [];
  /** The last case that failed: after shrinking, the smallest. */
  private lastFailure: string | undefined;
  /** A sweep failed: the campaign stops, reporting the cases since the sweep before. */
  private sweepFailure: string | undefined;
  /**
   * Request ids a call carried before the counter reached them: a byte mutation (a flipped or
   * set digit) can turn an id into one a later case will be issued. The row such a write left
   * is not that later case's, so the audit of that case skips these ids.
   */
  private readonly carriedAhead = new Set<string>();

  constructor(
    private readonly target: FuzzTarget,
    private readonly options: CampaignOptions,
    private readonly started: number,
  ) {
    this.markers = new Markers(target.records, `${options.seed >>> 0}-${started.toString(36)}`);
    this.audit = new StoreAudit(target.sql, SHARDS_COUNT);
  }

  figures(): Figures {
    return {
      elapsedMs: Date.now() - this.started,
      cases: this.cases,
      calls: new Map(this.calls),
      statuses: new Map(this.statuses),
      refusedFields: new Map(this.refusedFields),
      rssBytes: this.rssBytes,
      peakRssBytes: this.peakRssBytes,
      ...(this.peakJump ? { peakJump: { ...this.peakJump } } : {}),
      restarts: this.target.restarts,
      sweeps: this.sweeps,
    };
  }

  async all(): Promise<CampaignResult> {
    const { seed } = this.options;
    this.models = (await this.target.describe()).models;
    const cases = fuzzCases({
      maxDepth: this.options.maxDepth ?? Number.POSITIVE_INFINITY,
      deepBodiesOnly: this.options.deepBodiesOnly ?? false,
    });
    const property = fc.asyncProperty(cases, (fuzz) => this.property(fuzz));
    let round = this.options.round ?? 0;
    let rounds = 0;
    let failure: string | undefined;
    for (;;) {
      const replaying = this.options.path !== undefined;
      const details = await fc.check(property, {
        seed: roundSeed(seed, round),
        numRuns: this.roundRuns(),
        ...(replaying ? { path: this.options.path } : {}),
      });
      rounds += 1;
      if (details.failed) {
        failure = this.report(round, details);
        break;
      }
      if (this.sweepFailure) break;
      if (replaying || this.done()) break;
      round += 1;
    }
    if (!failure && !this.sweepFailure) await this.sweep();
    return {
      seed,
      rounds,
      figures: this.figures(),
      failure: failure ?? this.sweepFailure,
    };
  }

  private roundRuns(): number {
    if (this.options.cases === undefined) return ROUND_RUNS;
    return Math.max(1, Math.min(ROUND_RUNS, this.options.cases - this.cases));
  }

  private done(): boolean {
    if (this.options.stopRequested?.()) return true;
    if (this.options.cases !== undefined && this.cases >= this.options.cases) return true;
    return (
      this.options.durationMs !== undefined && Date.now() - this.started >= this.options.durationMs
    );
  }

  /** One case: sent, then every invariant checked; throws a Violation saying which failed. */
  private async property(fuzz: FuzzCase): Promise<void> {
    if (this.sweepFailure || this.options.stopRequested?.()) return;
    await this.target.restartIfDead();
    this.cases += 1;
    const first = this.markers.peekFresh();
    const calls = await exchange(this.target.client, fuzz, this.markers);
    const next = this.markers.peekFresh();
    const fates = writeFates(calls);
    for (const id of fates.keys()) if (id >= next) this.carriedAhead.add(id);
    this.count(calls);
    const problems = calls.flatMap(callProblems);
    problems.push(...(await this.processProblems(fuzz.rpc)));
    if (this.target.alive() && problems.length === 0)
      problems.push(...(await this.storeProblems(calls, fates, first, next)));
    if (problems.length > 0) {
      this.lastFailure = describeFailure(fuzz, calls, problems);
      throw new Violation(problems.join('\n'));
    }
    this.window.push({ fuzz, calls });
    if (this.cases % (this.options.auditEvery ?? 25) === 0) await this.sweep();
  }

  private count(calls: readonly CallRecord[]): void {
    for (const call of calls) {
      increment(this.calls, call.rpc);
      increment(this.statuses, codeName(call.status.code));
      const field = call.status.metadata.get('shameless-field')[0];
      if (call.status.code === status.INVALID_ARGUMENT)
        increment(this.refusedFields, String(field));
      if (call.rpc !== 'Pipeline') continue;
      for (const bytes of call.received) {
        const answer = tryDecode(PipelineResponse, bytes) as PipelineResponse | undefined;
        if (!answer?.result) continue;
        if (
          answer.result.$case === 'error' &&
          answer.result.error.code === status.INVALID_ARGUMENT
        ) {
          increment(this.refusedFields, answer.result.error.trailers['shameless-field'] ?? '');
        }
        increment(
          this.statuses,
          `Pipeline call ${answer.result.$case === 'error' ? codeName(answer.result.error.code) : 'OK'}`,
        );
      }
    }
  }

  /** The process: alive, answering, within its memory ceiling, nothing logged at error level. */
  private async processProblems(rpc: Rpc): Promise<string[]> {
    const death = this.target.deathNote();
    if (death) return [`the server process died: ${death}`];
    const problems: string[] = [];
    try {
      this.models = (await this.target.describe()).models;
    } catch (error) {
      problems.push(`the server no longer answers DescribeStore: ${(error as Error).message}`);
    }
    const died = this.target.deathNote();
    if (died) return [...problems, `the server process died: ${died}`];
    const memory = await this.target.memory();
    this.rssBytes = memory.rssBytes;
    const jump = memory.peakBytes - this.peakRssBytes;
    if (this.peakRssBytes > 0 && jump > (this.peakJump?.bytes ?? 0))
      this.peakJump = { rpc, bytes: jump };
    this.peakRssBytes = Math.max(this.peakRssBytes, memory.peakBytes);
    if (memory.peakBytes > RSS_CEILING_BYTES) {
      problems.push(
        `the server's resident memory peaked at ${mib(memory.peakBytes)}, past its ceiling of ${mib(RSS_CEILING_BYTES)}`,
      );
    }
    // A server that stopped answering or grew past its ceiling is started afresh, so that
    // shrinking tries each smaller case against a server that has not failed already.
    if (problems.length > 0) await this.target.kill();
    const errors = this.target.newErrorLines();
    if (errors.length > 0) problems.push(`the server logged errors:\n${errors.join('\n')}`);
    return problems;
  }

  /** Refused writes left nothing, acknowledged ones are stored, refused defines made no table. */
  private async storeProblems(
    calls: readonly CallRecord[],
    fates: ReadonlyMap<string, Fate>,
    first: string,
    next: string,
  ): Promise<string[]> {
    const problems: string[] = [];
    const fresh = new Map(
      [...fates].filter(([id]) => id >= first && id < next && !this.carriedAhead.has(id)),
    );
    if (fresh.size > 0) {
      problems.push(...(await this.audit.writeProblems(this.models, first, next, fresh)));
    }
    const defined = new Set(this.models.map((model) => model.name));
    const refused = calls
      .filter((call) => call.rpc === 'DefineModel' && call.status.code !== status.OK)
      .map(
        (call) =>
          tryDecode(contractOf('DefineModel').request, call.sent[0]!) as
            { model?: { name: string } } | undefined,
      )
      .map((request) => request?.model?.name ?? '')
      .filter((name) => NEW_MODEL_NAMES.includes(name) && !defined.has(name));
    if (refused.length > 0) {
      problems.push(...(await this.audit.refusedDefineProblems(this.target.database, refused)));
    }
    return problems;
  }

  private async sweep(): Promise<void> {
    if (!this.target.alive()) return;
    this.sweeps += 1;
    const problems = await this.audit.sweep(
      this.models.filter((m) => [...MODEL_NAMES, ...NEW_MODEL_NAMES].includes(m.name)),
    );
    if (problems.length > 0) {
      // The cases that carried a request id the problems name wrote those rows: they come first.
      const ids = problems.flatMap((problem) =>
        [...problem.matchAll(/request id (fz-[\w-]+)/g)].map((m) => m[1]!),
      );
      const wrote = (calls: readonly CallRecord[]) =>
        ids.some((id) => calls.some((call) => Buffer.concat(call.sent).includes(id)));
      const culprits = this.window.filter(({ calls }) => wrote(calls));
      this.sweepFailure = [
        `the store broke a rule during the last ${this.window.length} cases (seed ${this.options.seed}; the sweep before found nothing):`,
        ...problems.map((problem) => `  ${problem}`),
        ...(culprits.length > 0
          ? [
              '',
              'the case(s) whose request ids those rows carry:',
              ...culprits.flatMap(({ fuzz, calls }) => [
                ...describeCalls(fuzz, calls),
                `  the case as drawn: ${draftView(fuzz)}`,
              ]),
            ]
          : []),
        '',
        'every case since that sweep, oldest first:',
        ...this.window.flatMap(({ fuzz, calls }) => describeCalls(fuzz, calls)),
      ].join('\n');
    }
    this.window = [];
  }

  private report(round: number, details: fc.RunDetails<[FuzzCase]>): string {
    const flags = [
      ...(this.options.maxDepth !== undefined && Number.isFinite(this.options.maxDepth)
        ? [`--max-depth ${this.options.maxDepth}`]
        : []),
      ...(this.options.deepBodiesOnly ? ['--deep-bodies-only'] : []),
    ];
    const replay = [
      `pnpm fuzz --seed ${this.options.seed}`,
      ...flags,
      `--round ${round} --path ${details.counterexamplePath}`,
    ].join(' ');
    return [
      `contract fuzz failure: seed ${this.options.seed}, round ${round} (fast-check seed ${details.seed}), path ${details.counterexamplePath}, after ${details.numRuns} cases of the round and ${details.numShrinks} shrinks`,
      `replay: ${replay}`,
      this.lastFailure ?? String(details.errorInstance),
    ].join('\n');
  }
}

const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;

/** A failed case: what broke, then the calls. */
function describeFailure(
  fuzz: FuzzCase,
  calls: readonly CallRecord[],
  problems: readonly string[],
): string {
  return [
    `RPC ${fuzz.rpc}: ${problems.length} problem(s)`,
    ...problems.map((problem) => `  - ${problem}`),
    ...describeCalls(fuzz, calls),
    `  the case as drawn: ${draftView(fuzz)}`,
  ].join('\n');
}

/** A case as drawn, its bytes in short hex, long strings and arrays cut. */
function draftView(fuzz: FuzzCase): string {
  const view = JSON.stringify(fuzz, (_key, value: unknown) => {
    if (typeof value === 'bigint') return `${value}n`;
    if (value instanceof Uint8Array || (value as { type?: string })?.type === 'Buffer') {
      const bytes = Buffer.from(
        value instanceof Uint8Array ? value : (value as { data: number[] }).data,
      );
      return `<${bytes.length} bytes: ${hexView(bytes, 64)}>`;
    }
    if (typeof value === 'string' && value.length > 200)
      return `${value.slice(0, 200)}… (${value.length} chars)`;
    if (Array.isArray(value) && value.length > 12)
      return [...value.slice(0, 12), `… (${value.length - 12} more)`];
    return value;
  });
  return view.length > 4000 ? `${view.slice(0, 4000)}… (${view.length} chars)` : view;
}

/** Each call of a case: every message sent (hex and decoded), its status, what it received. */
function describeCalls(fuzz: FuzzCase, calls: readonly CallRecord[]): string[] {
  const lines: string[] = [];
  for (const [n, call] of calls.entries()) {
    const { request, response } = contractOf(call.rpc);
    lines.push(`  ${fuzz.rpc} call ${n + 1} of ${calls.length}:`);
    for (const [i, bytes] of call.sent.entries()) {
      lines.push(`    request message ${i} (${bytes.length} bytes): ${hexView(bytes, 1024)}`);
      lines.push(`      decoded: ${decodedView(request, bytes)}`);
    }
    lines.push(
      `    status: ${codeName(call.status.code)} ${JSON.stringify(call.status.details)}${call.cancelledByUs ? ' (cancelled by the fuzzer)' : ''}`,
    );
    for (const [i, bytes] of call.received.slice(0, 12).entries()) {
      lines.push(`    response message ${i}: ${decodedView(response, bytes).slice(0, 600)}`);
    }
    if (call.received.length > 12)
      lines.push(`    … ${call.received.length - 12} more response messages`);
  }
  return lines;
}

/** "Put 120, WriteCell 98, …" of counts, largest first. */
export function formatCounts(
  counts: ReadonlyMap<string, number>,
  order?: readonly string[],
): string {
  const entries = [...counts];
  if (order) entries.sort((a, b) => order.indexOf(a[0]) - order.indexOf(b[0]));
  else entries.sort((a, b) => b[1] - a[1]);
  return entries.map(([name, count]) => `${name} ${count}`).join(', ');
}

/** One progress line of figures. */
export function formatFigures(figures: Figures): string {
  const seconds = Math.round(figures.elapsedMs / 1000);
  const clock = `${String(Math.floor(seconds / 60)).padStart(2, '0')}:${String(seconds % 60).padStart(2, '0')}`;
  const calls = [...figures.calls.values()].reduce((sum, n) => sum + n, 0);
  return [
    `[fuzz ${clock}] ${figures.cases} cases, ${calls} calls (${formatCounts(figures.calls as ReadonlyMap<string, number>, RPCS)})`,
    `  statuses: ${formatCounts(figures.statuses)}`,
    `  fields INVALID_ARGUMENT named most: ${formatCounts(new Map([...figures.refusedFields].sort((a, b) => b[1] - a[1]).slice(0, 8)))}`,
    `  server RSS ${mib(figures.rssBytes)} (peak ${mib(figures.peakRssBytes)}${figures.peakJump ? `, raised most by a ${figures.peakJump.rpc} case: +${mib(figures.peakJump.bytes)}` : ''}; ceiling ${mib(RSS_CEILING_BYTES)}), ${figures.sweeps} store sweeps, ${figures.restarts} restarts`,
  ].join('\n');
}
