// The Pipeline RPC: calls of the unary methods, many at a time over one bidirectional stream.
// A unary call costs each side an HTTP/2 stream, headers and trailers, which on the project's
// machine is most of a small call's CPU; a message on an open stream costs a fraction of that.
// Each call runs exactly as its unary RPC would (handlers.run: the middleware chain, the call's
// deadline, the same function of unaryCalls.ts) and is answered, with its id, by its response
// or by the status its unary call would have ended with.
//
// Bounds: at most `maxCalls` calls of a stream run at once and no more is read meanwhile, nor
// while answers the client has not taken pass PIPELINE_UNSENT_BYTES: grpc-js then stops
// reading the HTTP/2 stream, whose flow control stops the client. Answers are encoded here, so
// one larger than the client (or this server) takes is answered RESOURCE_EXHAUSTED on its own
// rather than failing the stream and every call on it.
import { Metadata, type ServerDuplexStream, type ServiceError, status } from '@grpc/grpc-js';
import {
  type CallError,
  type PipelineRequest,
  PipelineResponse,
  encodeMessage,
} from '@shameless/proto';
import { DeadlineWatch, type WatchedDeadline } from '../../engine/base/deadlineWatch.js';
import { InvalidArgumentError } from '../../engine/base/errors.js';
import type { Logger } from '../../engine/base/logger.js';
import type { CallContext } from '../call/callContext.js';
import { CallCancellation } from '../call/cancellation.js';
import type { HandlerFactory, OpenStreams } from './handlers.js';
import { malformation, recordWireBytes, requestWireBytes } from '../call/requestDecoding.js';
import { toServiceError } from '../call/statusMapping.js';
import { type UnaryCalls, type UnaryMethod, protoMethodName } from './unaryCalls.js';

/** Response header: the largest PipelineRequest this server reads. */
export const MAX_MESSAGE_HEADER = 'shameless-max-message-bytes';
/** Request metadata: the largest answer the client takes. */
export const MAX_ANSWER_HEADER = 'shameless-max-answer-bytes';
/** Bytes of answers not yet sent past which a stream is no longer read. */
export const PIPELINE_UNSENT_BYTES = 512 * 1024;

/**
 * The grpc-js handler. It writes each answer as the bytes it encoded (see
 * withEncodedPipelineAnswers), which grpc-js's types know only as a PipelineResponse.
 */
export type PipelineHandler = (call: ServerDuplexStream<PipelineRequest, PipelineResponse>) => void;

export interface PipelineSettings {
  readonly handlers: HandlerFactory;
  readonly calls: UnaryCalls;
  readonly streams: OpenStreams;
  readonly logger: Logger;
  /** The largest message the server reads or sends (--max-message-bytes). */
  readonly maxMessageBytes: number;
  /** Calls of one stream run at once (--max-pipeline-calls). */
  readonly maxCalls: number;
}

/** The Pipeline's grpc-js handler, and how many of its streams are open. */
export interface Pipelines {
  readonly handle: PipelineHandler;
  /** Pipeline streams open now. */
  readonly open: () => number;
}

export function pipelineHandler(settings: PipelineSettings): Pipelines {
  let open = 0;
  return {
    handle: (call) => {
      open += 1;
      const ended = () => (open -= 1);
      const stream = call as ServerDuplexStream<PipelineRequest, unknown>;
      new PipelineStream(stream, settings, ended).start();
    },
    open: () => open,
  };
}

/** The service definition with Pipeline answers sent as the bytes this module encoded. */
export function withEncodedPipelineAnswers<T extends { pipeline: object }>(definition: T): T {
  return {
    ...definition,
    pipeline: { ...definition.pipeline, responseSerialize: (bytes: Buffer) => bytes },
  };
}

type Result = NonNullable<PipelineResponse['result']>;

/** A call being run: what cancels it, and its deadline, watched. */
interface RunningCall {
  readonly cancellation: CallCancellation;
  readonly deadline: WatchedDeadline;
}

class PipelineStream {
  /** Calls not yet answered, by id. A call is answered once: by its outcome, a cancel or its deadline. */
  private readonly unanswered = new Map<number, RunningCall>();
  /** The deadlines of the calls not yet answered. */
  private readonly deadlines = new DeadlineWatch();
  /** Calls whose work has not ended, answered or not: what bounds the stream's reading. */
  private working = 0;
  private unsentBytes = 0;
  /** What waits for each answer written and not yet sent: settled when the stream ends. */
  private readonly unsent = new Set<() => void>();
  private halfClosed = false;
  private ended = false;
  private readonly shutdown: AbortController;
  private readonly peer: string;
  private readonly streamDeadline: number;
  private readonly maxAnswerBytes: number;

  constructor(
    private readonly call: ServerDuplexStream<PipelineRequest, unknown>,
    private readonly settings: PipelineSettings,
    /** Told once, when the stream is over. */
    private readonly over: () => void,
  ) {
    this.shutdown = settings.streams.open();
    this.peer = call.getPeer();
    const deadline = call.getDeadline();
    this.streamDeadline = typeof deadline === 'number' ? deadline : deadline.getTime();
    const asked = Number(call.metadata.get(MAX_ANSWER_HEADER)[0]);
    this.maxAnswerBytes =
      Number.isSafeInteger(asked) && asked > 0
        ? Math.min(asked, settings.maxMessageBytes)
        : settings.maxMessageBytes;
  }

  start(): void {
    const headers = new Metadata();
    headers.set(MAX_MESSAGE_HEADER, String(this.settings.maxMessageBytes));
    this.call.sendMetadata(headers);
    this.call.on('data', (message: PipelineRequest) => this.receive(message));
    this.call.on('end', () => {
      this.halfClosed = true;
      this.endWhenAnswered();
    });
    this.call.on('cancelled', () => {
      this.abandon();
      this.forgetUnsent();
    });
    this.call.on('error', () => this.abandon());
    // After the status, grpc-js writes nothing more: what it still held was not sent.
    this.call.on('finish', () => this.forgetUnsent());
    this.shutdown.signal.addEventListener('abort', () => {
      this.readMore();
      this.endWhenAnswered();
    });
  }

  private receive(message: PipelineRequest): void {
    if (this.ended) return;
    const problem = malformation(message);
    if (problem !== undefined) {
      this.fail(
        status.INVALID_ARGUMENT,
        `a message is not a valid PipelineRequest (${problem})`,
        'request',
      );
      return;
    }
    const { callId, call } = message;
    if (call?.$case === 'cancel') {
      this.cancel(callId);
      return;
    }
    if (this.unanswered.has(callId)) {
      this.fail(
        status.INVALID_ARGUMENT,
        `call_id ${callId} is in use by a call not yet answered`,
        'call_id',
      );
      return;
    }
    if (call === undefined) {
      void this.answerAt(callId, {
        $case: 'error',
        error: {
          code: status.INVALID_ARGUMENT,
          message: "call: set one method's request",
          trailers: { 'shameless-field': 'call' },
        },
      });
      return;
    }
    let metadata: Metadata;
    try {
      metadata = this.metadataOf(message);
    } catch (error) {
      if (!(error instanceof InvalidArgumentError)) throw error;
      void this.answerAt(callId, {
        $case: 'error',
        error: callError(toServiceError(error, 'Pipeline', this.settings.logger)),
      });
      return;
    }
    const request = (call as unknown as Record<UnaryMethod, object>)[call.$case];
    this.run(message, call.$case, request, metadata);
  }

  private run(
    message: PipelineRequest,
    method: UnaryMethod,
    request: object,
    metadata: Metadata,
  ): void {
    recordWireBytes(request, requestWireBytes(message));
    const now = Date.now();
    const deadline = Math.min(
      this.streamDeadline,
      message.timeoutMs > 0 ? now + message.timeoutMs : Infinity,
    );
    const running: RunningCall = {
      cancellation: new CallCancellation(),
      deadline: this.deadlines.watch(deadline, () => this.expire(message.callId, running)),
    };
    this.unanswered.set(message.callId, running);
    this.working += 1;
    this.readMore();
    const context: CallContext = {
      method: protoMethodName(method),
      kind: 'unary',
      metadata,
      peer: this.peer,
      deadline,
      cancellation: running.cancellation,
      // Its answer, held until sent, is the message admission counts.
      longLived: false,
      bufferBytes: 0,
      trailer: new Metadata(),
    };
    const handle = this.settings.calls[method] as (
      request: object,
      context: CallContext,
    ) => Promise<object>;
    // The answer is sent from inside the chain: admission holds the call's bytes until it is.
    const deliver = (response: object) =>
      this.answer(
        message.callId,
        running,
        { $case: method, [method]: response } as Result,
        textEntries(context.trailer),
      );
    this.settings.handlers
      .run(context.method, handle, request, context, deliver)
      .then(
        () => {},
        (error: unknown) =>
          void this.answer(message.callId, running, {
            $case: 'error',
            error: callError(toServiceError(error, context.method, this.settings.logger)),
          }),
      )
      .finally(() => {
        this.working -= 1;
        this.readMore();
      });
  }

  /**
   * The stream's metadata, with the call's own entries over it. The entries are the client's
   * bytes: one gRPC metadata cannot hold refuses the call (grpc-js throws, and a throw here
   * would escape the stream's 'data' listener and end the process). The reason names the key
   * only, since the value may be a credential.
   */
  private metadataOf(message: PipelineRequest): Metadata {
    const own = Object.entries(message.metadata);
    if (own.length === 0) return this.call.metadata;
    const metadata = this.call.metadata.clone();
    for (const [key, value] of own) {
      if (key.endsWith('-bin')) {
        throw new InvalidArgumentError(
          'metadata',
          `${JSON.stringify(key)}: a call's metadata holds text values only`,
        );
      }
      try {
        metadata.set(key, value);
      } catch {
        throw new InvalidArgumentError(
          'metadata',
          `${JSON.stringify(key)}: not a valid gRPC metadata key, or its value has characters gRPC metadata cannot carry`,
        );
      }
    }
    return metadata;
  }

  private cancel(callId: number): void {
    const running = this.unanswered.get(callId);
    if (!running) return;
    running.cancellation.abort();
    void this.answer(callId, running, {
      $case: 'error',
      error: { code: status.CANCELLED, message: 'cancelled by the client', trailers: {} },
    });
  }

  private expire(callId: number, running: RunningCall): void {
    running.cancellation.abort();
    void this.answer(callId, running, {
      $case: 'error',
      error: { code: status.DEADLINE_EXCEEDED, message: 'deadline exceeded', trailers: {} },
    });
  }

  /**
   * Answers the call `running` unless it was answered already (cancelled, expired); resolves
   * once the answer is sent, or will not be.
   */
  private answer(
    callId: number,
    running: RunningCall,
    result: Result,
    trailers: Record<string, string> = {},
  ): Promise<void> {
    if (this.unanswered.get(callId) !== running) return Promise.resolve();
    this.unanswered.delete(callId);
    this.deadlines.unwatch(running.deadline);
    const sent = this.answerAt(callId, result, trailers);
    this.endWhenAnswered();
    return sent;
  }

  /** Writes an answer; resolves once it is sent, or once the stream ends without it. */
  private answerAt(
    callId: number,
    result: Result,
    trailers: Record<string, string> = {},
  ): Promise<void> {
    if (this.ended) return Promise.resolve();
    let bytes = encodeMessage(PipelineResponse, { callId, trailers, result });
    if (bytes.length > this.maxAnswerBytes) {
      // grpc-js's words for a unary answer over the limit, which clients already recognise.
      const error: CallError = {
        code: status.RESOURCE_EXHAUSTED,
        message: `Sent message larger than max (${bytes.length} vs. ${this.maxAnswerBytes})`,
        trailers: {},
      };
      bytes = encodeMessage(PipelineResponse, {
        callId,
        trailers: {},
        result: { $case: 'error', error },
      });
    }
    const size = bytes.length;
    this.unsentBytes += size;
    const sent = new Promise<void>((resolve) => {
      // grpc-js calls back once the bytes are written, but not for a call cancelled meanwhile.
      this.unsent.add(resolve);
      this.call.write(bytes, () => {
        this.unsent.delete(resolve);
        this.unsentBytes -= size;
        this.readMore();
        resolve();
      });
    });
    this.readMore();
    return sent;
  }

  /** Reads on while the stream is within its bounds and the server is not stopping. */
  private readMore(): void {
    if (this.ended) return;
    const full =
      this.working >= this.settings.maxCalls ||
      this.unsentBytes > PIPELINE_UNSENT_BYTES ||
      this.shutdown.signal.aborted;
    if (full) this.call.pause();
    else this.call.resume();
  }

  /**
   * Ends the stream once every call read is answered and nothing more will be: OK after the
   * client's half-close, UNAVAILABLE when the server shuts down.
   */
  private endWhenAnswered(): void {
    if (this.ended || this.unanswered.size > 0) return;
    if (this.shutdown.signal.aborted) {
      this.fail(status.UNAVAILABLE, 'the server is shutting down; send calls not answered again');
    } else if (this.halfClosed) {
      this.close();
      this.call.end();
    }
  }

  /**
   * Ends the stream with a status; calls not answered get no answer. An INVALID_ARGUMENT names
   * its `field` in the shameless-field trailer, as every method's does.
   */
  private fail(code: status, details: string, field?: string): void {
    if (this.ended) return;
    this.abandon();
    const error: Partial<ServiceError> = { code, details };
    if (field !== undefined) {
      error.metadata = new Metadata();
      error.metadata.set('shameless-field', field);
    }
    this.call.emit('error', error);
  }

  /** The stream is over: calls still running are cancelled and will not be answered. */
  private abandon(): void {
    if (this.ended) return;
    for (const running of this.unanswered.values()) running.cancellation.abort();
    this.unanswered.clear();
    this.close();
  }

  private close(): void {
    this.ended = true;
    this.deadlines.close();
    this.settings.streams.close(this.shutdown);
    this.over();
  }

  /** The stream is gone: answers still unsent will never be. */
  private forgetUnsent(): void {
    for (const resolve of this.unsent) resolve();
    this.unsent.clear();
  }
}

function callError(error: Partial<ServiceError>): CallError {
  return {
    code: error.code ?? status.UNKNOWN,
    message: error.details ?? '',
    trailers: error.metadata ? textEntries(error.metadata) : {},
  };
}

/** Metadata's text entries (the only kind a call's trailers hold), as a proto map. */
function textEntries(metadata: Metadata): Record<string, string> {
  const entries: Record<string, string> = {};
  for (const [key, value] of Object.entries(metadata.getMap())) {
    if (typeof value === 'string') entries[key] = value;
  }
  return entries;
}
