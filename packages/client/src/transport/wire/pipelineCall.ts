// The end of the chain when calls are pipelined: an attempt of a unary call, or of a Where page
// read whole, goes over its endpoint's Pipeline stream; everything else, and an attempt the
// stream hands back (its server has no Pipeline, a request larger than it reads), goes as a
// call of its own (grpcCall.ts). So does an attempt waiting for a restarting server: a stream
// would fail at once where grpc-js's waitForReady waits for the connection.

import type { Clock } from '../call/clock.js';
import type { Endpoint } from '../policy/endpoints.js';
import type { UnaryMethodName } from '../call/methods.js';
import {
  type CallNext,
  type ClientCall,
  type ClientCallOptions,
  type UnaryNext,
  onlyMessage,
} from '../call/compose.js';
import { type PipelinedMethod, SEND_ALONE } from './pipelineStream.js';
import type { Pipelines } from './pipelines.js';
import type { TransportCounters } from '../call/stats.js';

/** What the pipelined terminal needs. */
export interface PipelineCallSettings {
  readonly clock: Clock;
  readonly pipelines: Pipelines;
  /** Metadata sent with every call, under what the layers add. */
  readonly metadata: Readonly<Record<string, string>>;
  readonly counters: Pick<TransportCounters, 'pipelinedAttempts'>;
  /** The terminal for calls that go on their own. */
  readonly alone: CallNext;
}

/** The longest timeout a PipelineRequest carries (uint32 ms). */
const MAX_TIMEOUT_MS = 0xffff_ffff;

/**
 * The terminal, in both forms of the chain (compose.ts): the stream's, and the promise of a
 * one-message call's answer.
 */
export function pipelineCall(settings: PipelineCallSettings): CallNext & { unary: UnaryNext } {
  const { clock, pipelines, counters, alone } = settings;
  const aloneUnary: UnaryNext = (call, options) => onlyMessage(call, alone(call, options));
  const noSharedMetadata = Object.keys(settings.metadata).length === 0;
  /** The attempt's answer over its endpoint's stream, or SEND_ALONE when it goes on its own. */
  const overStream = async (call: ClientCall, options: ClientCallOptions): Promise<unknown> => {
    const method = pipelinedMethodOf(call);
    const endpoint = options.endpoint as Endpoint | undefined;
    if (method === undefined || endpoint?.client === undefined || options.waitForReady === true) {
      return SEND_ALONE;
    }
    // Most calls have no shared metadata, or none of their own: no merge then (a spread of
    // two objects costs a few microseconds on Node 20; compose.ts's withOptions).
    const metadata =
      options.metadata === undefined
        ? settings.metadata
        : noSharedMetadata
          ? options.metadata
          : { ...settings.metadata, ...options.metadata };
    // The stream carries the token of the attempt that opens it; calls send their own only
    // when it differs (a token that rotated).
    const stream = pipelines.streamOf(endpoint, () => streamMetadata(settings.metadata, metadata));
    if (stream === undefined) return SEND_ALONE;
    const left = (options.deadlineAt ?? Number.POSITIVE_INFINITY) - clock.now();
    let answer: unknown;
    try {
      answer = await stream.send({
        method,
        request: call.request,
        timeoutMs: Number.isFinite(left)
          ? Math.min(MAX_TIMEOUT_MS, Math.max(1, Math.ceil(left)))
          : 0,
        metadata,
        cancellation: options.cancellation,
        onTrailers: options.onTrailers,
      });
    } catch (error) {
      counters.pipelinedAttempts++;
      throw error;
    }
    if (answer === SEND_ALONE) return SEND_ALONE;
    counters.pipelinedAttempts++;
    // A Where page comes whole, as one message of the stream it would otherwise be.
    return call.shape === 'collect' ? [answer] : answer;
  };
  return Object.assign(
    async function* sendAttempt(call: ClientCall, options: ClientCallOptions) {
      if (pipelinedMethodOf(call) === undefined) {
        yield* alone(call, options);
        return;
      }
      const answer = await overStream(call, options);
      if (answer === SEND_ALONE) yield* alone(call, options);
      else yield answer;
    },
    {
      unary: async (call: ClientCall, options: ClientCallOptions) => {
        const answer = await overStream(call, options);
        return answer === SEND_ALONE ? aloneUnary(call, options) : answer;
      },
    },
  );
}

/** The Pipeline call that carries `call`, if one does. */
function pipelinedMethodOf(call: ClientCall): PipelinedMethod | undefined {
  if (call.shape === 'collect') return call.method === 'where' ? 'where' : undefined;
  return call.shape === 'unary' ? pipelined(call.method as UnaryMethodName) : undefined;
}

/** Every unary method of the Store is one of the Pipeline's calls: else this does not compile. */
const pipelined = (method: UnaryMethodName): PipelinedMethod => method;

function streamMetadata(
  shared: Readonly<Record<string, string>>,
  attempt: Readonly<Record<string, string>>,
): Record<string, string> {
  const token = attempt.authorization;
  return token === undefined ? { ...shared } : { ...shared, authorization: token };
}
