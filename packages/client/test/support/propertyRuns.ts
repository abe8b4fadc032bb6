// The harness of the property tests of test/properties: how many runs and which seed (fixed
// unless asked otherwise, so that CI never fails by chance and a failure replays), the store
// they write into, and the raw-contract calls that write random bodies as exact bytes.
//
// SHAMELESS_PROPERTY_RUNS=N runs every property N times (each has a default that keeps CI
// quick); SHAMELESS_PROPERTY_SEED=S (or `random`) picks the seed; SHAMELESS_PROPERTY_PATH=P with
// the seed of a failure replays its shrunk counterexample at once. A failure prints all three.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { Metadata, credentials, type ServiceError } from '@grpc/grpc-js';
import fc from 'fast-check';
import {
  type Cell as WireCell,
  type EachRequest,
  type EachResponse,
  type WhereResponse,
  Operator,
  SortOrder,
  StoreClient,
  WriteMode,
  encodeMessagePack,
} from '@shameless/proto';
import type { Store } from '../../src/index.js';
import { type StoreFixture, startStoreFixture } from './storeFixture.js';
import { type Tree, encodeTree } from './messagePackTrees.js';

/** The seed of every property run unless SHAMELESS_PROPERTY_SEED says otherwise (issue 56). */
const FIXED_SEED = 56;
/** The longest one property may take before it fails, with the counterexample found so far. */
const MS_PER_RUN = 2_000;
const LEAST_MS = 60_000;

export interface PropertyRun<T> {
  /** How many runs by default (SHAMELESS_PROPERTY_RUNS overrides it). */
  readonly runs: number;
  /** Inputs run first, every time: the bodies that cover every format. */
  readonly examples?: readonly T[];
}

/** Mocha's timeout for a property of `runs` runs: the property's own limit, and a margin. */
export function propertyTimeoutMs(runs: number): number {
  return timeLimitMs(runCount(runs)) + 30_000;
}

const runCount = (runs: number) => Number(process.env.SHAMELESS_PROPERTY_RUNS ?? runs);
const timeLimitMs = (runs: number) => Math.max(LEAST_MS, runs * MS_PER_RUN);

/**
 * Checks a property with the project's seed and run count. A failure throws fast-check's
 * report (the shrunk counterexample, trees printed as text) under a line that replays it.
 */
export async function checkProperty<T extends [unknown, ...unknown[]]>(
  property: fc.IAsyncPropertyWithHooks<T>,
  { runs, examples = [] }: PropertyRun<T>,
): Promise<void> {
  const seedText = process.env.SHAMELESS_PROPERTY_SEED;
  const seed =
    seedText === undefined
      ? FIXED_SEED
      : seedText === 'random'
        ? Date.now() % 2 ** 31
        : Number(seedText);
  const path = process.env.SHAMELESS_PROPERTY_PATH;
  const numRuns = runCount(runs);
  const details = await fc.check(property, {
    seed,
    numRuns,
    examples: [...examples],
    ...(path === undefined ? {} : { path }),
    // A run that hangs fails with what was found so far rather than as a bare mocha timeout.
    interruptAfterTimeLimit: timeLimitMs(numRuns),
    markInterruptAsFailure: true,
  });
  if (!details.failed) return;
  const replay =
    `replay: SHAMELESS_PROPERTY_SEED=${details.seed}` +
    (details.counterexamplePath === null
      ? ''
      : ` SHAMELESS_PROPERTY_PATH=${details.counterexamplePath}`);
  const cause = details.errorInstance;
  const got = String(cause);
  throw new Error(`${replay}\n${fc.defaultReportMessage(details)}\nGot: ${got}`);
}

// ---------------------------------------------------------------------------------------------
// The store.

/** The model every property writes: records keyed by (batch, item), bodies in cell `value`. */
export const MODEL = 'property_value';
export const VALUE_CELL = 'value';

export interface PropertyStore {
  readonly fixture: StoreFixture;
  /** The SDK's handle of the model. */
  readonly model: ValueModel;
  readonly raw: RawStore;
  /** A batch number no earlier round used: its records are that round's alone. */
  nextBatch(): number;
  close(): Promise<void>;
}

export async function startPropertyStore(): Promise<PropertyStore> {
  const fixture = await startStoreFixture();
  const model = await defineValueModel(fixture.store);
  const raw = connectRaw(fixture.address);
  let batch = 0;
  return {
    fixture,
    model,
    raw,
    nextBatch: () => (batch += 1),
    async close() {
      raw.client.close();
      await fixture.close();
    },
  };
}

export type ValueModel = Awaited<ReturnType<typeof defineValueModel>>;

function defineValueModel(store: Store) {
  return store.defineModel({
    name: MODEL,
    primary: { fields: { batch: 'integer', item: 'integer' }, shardOn: 'batch' },
    cells: [VALUE_CELL],
  });
}

/** The raw contract's calls the properties make, as promises. */
export type RawStore = ReturnType<typeof connectRaw>;

function connectRaw(address: string) {
  const client = new StoreClient(address, credentials.createInsecure(), {
    'grpc.max_receive_message_length': 64 << 20,
  });
  type Callback<Res> = (error: ServiceError | null, response: Res) => void;
  const unary =
    <Req, Res>(
      method: (
        request: Req,
        metadata: Metadata,
        options: object,
        callback: Callback<Res>,
      ) => unknown,
    ) =>
    (request: Req): Promise<Res> =>
      new Promise((resolve, reject) => {
        method.call(
          client,
          request,
          new Metadata(),
          { deadline: Date.now() + 30_000 },
          (error, response) => (error ? reject(error) : resolve(response)),
        );
      });
  const collect = async <T>(stream: AsyncIterable<T>): Promise<T[]> => {
    const messages: T[] = [];
    for await (const message of stream) messages.push(message);
    return messages;
  };
  return {
    client,
    put: unary(client.put),
    putMany: unary(client.putMany),
    writeCell: unary(client.writeCell),
    writeCells: unary(client.writeCells),
    getCell: unary(client.getCell),
    getCells: unary(client.getCells),
    fetchLatestCells: unary(client.fetchLatestCells),
    where: (batch: number, cells: string[]) =>
      collect<WhereResponse>(
        client.where({
          model: MODEL,
          index: '',
          conditions: [
            {
              field: 'batch',
              op: Operator.OPERATOR_EQ,
              values: [{ kind: { $case: 'integer', integer: BigInt(batch) } }],
            },
          ],
          cells,
          order: SortOrder.SORT_ORDER_ASC,
          limit: 0,
          pageToken: '',
        }),
      ),
    each: (request: Pick<EachRequest, 'shards' | 'cursors'>) =>
      collect<EachResponse>(
        client.each({
          model: MODEL,
          follow: false,
          batchSize: 0,
          heartbeatIntervalMs: 0,
          ...request,
        }),
      ),
  };
}

/** A cell a round wrote, as the write answered it. */
export interface WrittenCell {
  readonly uuid: string;
  readonly cell: string;
  readonly version: WireCell;
  /** What the round wrote: the tree whose bytes the cell must hold. */
  readonly tree: Tree;
}

/** Creates `count` records of a new batch with PutMany (bodies of their index fields alone). */
export async function createRecords(
  store: PropertyStore,
  count: number,
): Promise<{ batch: number; uuids: string[] }> {
  const batch = store.nextBatch();
  const { results } = await store.raw.putMany({
    puts: Array.from({ length: count }, (_, item) => ({
      model: MODEL,
      values: encodeMessagePack({ batch, item }),
      requestId: randomUUID(),
    })),
  });
  return {
    batch,
    uuids: results.map((result, i) => {
      if (result.outcome?.$case !== 'put')
        throw new Error(`put ${i} of batch ${batch} failed: ${JSON.stringify(result.outcome)}`);
      return result.outcome.put.uuid;
    }),
  };
}

/**
 * Writes each tree's bytes as the `value` cell of a new record of one batch (one WriteCells
 * call), and answers the versions written, in order (item i holds trees[i]).
 */
export async function writeBodies(
  store: PropertyStore,
  trees: readonly Tree[],
  mode: WriteMode = WriteMode.WRITE_MODE_REPLACE,
): Promise<{ batch: number; written: WrittenCell[] }> {
  const { batch, uuids } = await createRecords(store, trees.length);
  const written = await writeCells(store, uuids, trees, mode);
  return { batch, written };
}

/** One WriteCells call: trees[i] into the `value` cell of uuids[i]. */
export async function writeCells(
  store: PropertyStore,
  uuids: readonly string[],
  trees: readonly Tree[],
  mode: WriteMode,
): Promise<WrittenCell[]> {
  if (trees.length === 0) return [];
  const { results } = await store.raw.writeCells({
    writes: trees.map((tree, i) => ({
      model: MODEL,
      uuid: uuids[i]!,
      cell: VALUE_CELL,
      body: encodeTree(tree),
      mode,
      requestId: randomUUID(),
    })),
  });
  return results.map((result, i) => {
    if (result.outcome?.$case !== 'written') {
      throw new Error(`write ${i} was refused: ${JSON.stringify(result.outcome)}`);
    }
    return {
      uuid: uuids[i]!,
      cell: VALUE_CELL,
      version: result.outcome.written.cell!,
      tree: trees[i]!,
    };
  });
}

/** Bytes as hex, for messages and for the Ruby script's input. */
export const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex');

/**
 * Runs a describer script (`describeBodies.py`, `describeBodies.rb`) with `input` on its stdin
 * and answers the JSON of each line it prints; a non-zero exit fails with its stderr.
 */
export function describedByScript<T>(
  command: string,
  args: readonly string[],
  input: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<T[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`${args.join(' ')} exited ${code}: ${stderr}`));
      resolve(
        stdout
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line) as T),
      );
    });
    // A script that dies before reading (a missing module) closes its stdin: its exit status
    // and stderr say why, and the EPIPE of writing to it must not end the test process.
    child.stdin.on('error', () => {});
    child.stdin.end(input);
  });
}

/**
 * A property store for the tests of the `describe` it is called in: started before them,
 * closed after them. Call the answer for the store.
 */
export function usePropertyStore(): () => PropertyStore {
  let store: PropertyStore | undefined;
  before(async () => {
    store = await startPropertyStore();
  });
  after(() => store?.close());
  return () => store!;
}
