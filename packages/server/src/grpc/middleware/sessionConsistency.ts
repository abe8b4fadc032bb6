// Read consistency and the session token, in request metadata and response trailers
// (docs/consistency.md):
//
// - a read says how fresh it must be with `shameless-consistency: strong | session | bounded`
//   (strong when absent, session when only a token is given), `shameless-session-token` for
//   session and `shameless-max-staleness-ms` for bounded;
// - a write answers, in its trailers, `shameless-session-token`: the token it was sent (if any)
//   with the positions of the commits it made, so a client that sends back the last token it
//   got reads its own writes wherever it reads.
//
// The engine sees both in the call's scope: `consistency` routes its reads (engine/mysql/
// partitions.ts), `commits` gathers the GTIDs of its commits.
import type { StoreService } from '@shameless/proto';
import {
  CommitPositions,
  MalformedTokenError,
  type ReadConsistency,
  type SessionPositions,
  STRONG,
  formatToken,
  mergeSessions,
  parseToken,
} from '../../engine/base/consistency.js';
import { InvalidArgumentError } from '../../engine/base/errors.js';
import type { CallContext } from '../call/callContext.js';
import { type NextHandler, type ServerMiddleware, middlewareLayer } from '../call/middleware.js';

export const CONSISTENCY_KEY = 'shameless-consistency';
export const SESSION_TOKEN_KEY = 'shameless-session-token';
export const MAX_STALENESS_KEY = 'shameless-max-staleness-ms';

/** The largest bound a bounded read may give: a day. */
const MAX_STALENESS_MS = 86_400_000;

type StoreMethod =
  (typeof StoreService)[keyof typeof StoreService]['path'] extends `/shameless.v1.Store/${infer Name}`
    ? Name
    : never;

/**
 * What each RPC does with consistency: `reads` may be served by a replica, `writes` answer a
 * session token, `neither` reads the primary and answers none. Keyed by the generated service,
 * so an RPC added to the proto without a line here does not compile. Consumer groups read
 * their cursors and shards on the primary: their deliveries follow the commits they confirm.
 */
const METHOD_CONSISTENCY: Readonly<Record<StoreMethod, 'reads' | 'writes' | 'neither'>> = {
  GetCell: 'reads',
  GetCells: 'reads',
  Previous: 'reads',
  Where: 'reads',
  WhereMany: 'reads',
  FetchLatestCells: 'reads',
  Each: 'reads',
  Put: 'writes',
  PutMany: 'writes',
  WriteCell: 'writes',
  WriteCells: 'writes',
  DefineModel: 'writes',
  DescribeStore: 'neither',
  FindShard: 'neither',
  Consume: 'neither',
  DescribeConsumerGroup: 'neither',
  ListParkedCells: 'neither',
  ReplayParkedCell: 'neither',
  ResetConsumerGroup: 'neither',
  MoveShards: 'neither',
  Pipeline: 'neither',
};

/**
 * The layer. `replicas`: whether the store has read replicas; without, every read is the
 * primary's and no commit is tracked, so calls pass straight through once their metadata is
 * checked (a client's mistake is refused alike with replicas or without).
 */
export function sessionConsistencyLayer(replicas: boolean): ServerMiddleware {
  return middlewareLayer(
    (request, context, next) => {
      let passed: Passed;
      try {
        passed = passCall(context, replicas);
      } catch (error) {
        return refused(error);
      }
      if (passed.commits === undefined) return next(request, passed.context);
      return writeWithToken(request, passed, next);
    },
    async (request, context, next, deliver) => {
      const passed = passCall(context, replicas);
      if (passed.commits === undefined) return next(request, passed.context, deliver);
      return next(request, passed.context, (response) => {
        // Before the answer: a unary call's trailers go out with it.
        addSessionToken(passed);
        return deliver(response);
      });
    },
  );
}

/** A call let through, with the context it goes on with. */
type Passed = { readonly context: CallContext; readonly commits?: undefined } | PassedWrite;

/** A write whose commits are tracked: the token it was sent, and its commits as they come. */
interface PassedWrite {
  readonly context: CallContext;
  readonly sent: SessionPositions | undefined;
  readonly commits: CommitPositions;
}

/** What the call's metadata asks, checked (a mistake throws InvalidArgumentError). */
function passCall(context: CallContext, replicas: boolean): Passed {
  const kind = Object.hasOwn(METHOD_CONSISTENCY, context.method)
    ? METHOD_CONSISTENCY[context.method as StoreMethod]
    : 'neither';
  if (kind === 'neither') return { context };
  if (kind === 'writes') {
    const sent = tokenOf(context);
    if (!replicas) return { context };
    const commits = new CommitPositions();
    return { context: { ...context, commits }, sent, commits };
  }
  const consistency = consistencyOf(context);
  // Nothing asked: the primary, as every call before replicas (and no layer to pass through).
  if (!replicas || consistency === STRONG) return { context };
  return { context: { ...context, consistency } };
}

// eslint-disable-next-line require-yield
async function* refused(error: unknown): AsyncIterable<never> {
  throw error;
}

async function* writeWithToken<Req, Res>(
  request: Req,
  write: PassedWrite,
  next: NextHandler<Req, Res>,
): AsyncIterable<Res> {
  for await (const message of next(request, write.context)) {
    // Before the message: a unary call's answer goes out with it.
    addSessionToken(write);
    yield message;
  }
}

/** A write's token, its commits added, as a trailer of the call's answer. */
function addSessionToken(write: PassedWrite): void {
  const positions = mergeSessions(write.sent ?? new Map(), write.commits.all);
  if (positions.size > 0) write.context.trailer.set(SESSION_TOKEN_KEY, formatToken(positions));
}

function consistencyOf(context: CallContext): ReadConsistency {
  const mode = textOf(context, CONSISTENCY_KEY);
  const token = tokenOf(context);
  switch (mode ?? (token ? 'session' : 'strong')) {
    case 'strong':
      return STRONG;
    case 'session':
      return { mode: 'session', after: token ?? new Map() };
    case 'bounded': {
      const text = textOf(context, MAX_STALENESS_KEY);
      const maxStalenessMs = Number(text);
      if (text === undefined || !Number.isInteger(maxStalenessMs) || maxStalenessMs < 0) {
        throw new InvalidArgumentError(
          MAX_STALENESS_KEY,
          `must be a whole number of milliseconds from 0 to ${MAX_STALENESS_MS} with ${CONSISTENCY_KEY}: bounded, got ${JSON.stringify(text ?? '')}`,
        );
      }
      return { mode: 'bounded', maxStalenessMs: Math.min(maxStalenessMs, MAX_STALENESS_MS) };
    }
    default:
      throw new InvalidArgumentError(
        CONSISTENCY_KEY,
        `must be strong, session or bounded, got ${JSON.stringify(mode)}`,
      );
  }
}

function tokenOf(context: CallContext): SessionPositions | undefined {
  const token = textOf(context, SESSION_TOKEN_KEY);
  if (token === undefined || token === '') return undefined;
  try {
    return parseToken(token);
  } catch (error) {
    if (!(error instanceof MalformedTokenError)) throw error;
    throw new InvalidArgumentError(
      SESSION_TOKEN_KEY,
      `is not a session token this store wrote (${error.message}); send back the token a write answered, unchanged`,
    );
  }
}

function textOf(context: CallContext, key: string): string | undefined {
  const [value] = context.metadata.get(key);
  return typeof value === 'string' ? value : undefined;
}
