// One Pipeline stream to one server (see `Pipeline` in store.proto): calls written as
// PipelineRequests and matched to their answers by id. A unary call costs each side an HTTP/2
// stream, headers and trailers; a message on this stream costs a fraction of that.
//
// The stream opens with the metadata of the attempt that opened it and writes no call until
// the server's headers say the largest request it reads. A call the stream cannot carry (the
// server has no Pipeline, the stream ended before it opened, a request larger than the server
// reads) is handed back, unsent, to go as a call of its own. When the stream ends, every call
// written and not answered fails with the stream's status, as calls on a lost connection do.
// A stream told to end half-closes only once no call is out, so that each can still be cancelled.

import {
  Metadata,
  status as Status,
  type Client,
  type ClientDuplexStream,
  type StatusObject,
} from '@grpc/grpc-js';
import { PipelineRequest, PipelineResponse, encodeMessage, type CallError } from '@shameless/proto';
import { type Cancellation, watchAbort } from '../call/cancellation.js';
import { untilAborted } from '../call/signals.js';

/** The calls a Pipeline carries, as its oneof names them: `getCell`, `putMany`, `where`, ... */
export type PipelinedMethod = Exclude<NonNullable<PipelineRequest['call']>['$case'], 'cancel'>;

/** Response header: the largest PipelineRequest the server reads. */
export const MAX_MESSAGE_HEADER = 'shameless-max-message-bytes';
/** Request metadata: the largest answer this client takes. */
export const MAX_ANSWER_HEADER = 'shameless-max-answer-bytes';
const PATH = '/shameless.v1.Store/Pipeline';
/** Call ids wrap around here (uint32); an id is only ever in use by one unanswered call. */
const MAX_CALL_ID = 0xffff_ffff;
/**
 * A stream with no call out for this long is ended: an open call keeps the process alive (a
 * script that never closes its store would not exit) and holds a stream on the server. The
 * next call opens a new one, paying about one unary call's cost once.
 */
export const PIPELINE_IDLE_MS = 1000;

/** What {@link PipelineStream.send} answers for a call it did not send. */
export const SEND_ALONE: unique symbol = Symbol('send alone');

/** One call to send over the stream. */
export interface PipelineCall {
  readonly method: PipelinedMethod;
  readonly request: unknown;
  /** Ms the call may take (its deadline, from now); 0 for none. */
  readonly timeoutMs: number;
  /** The attempt's metadata: what differs from the stream's goes with the call. */
  readonly metadata: Readonly<Record<string, string>>;
  /** Cancelling it cancels the call on the server; send() rejects with its reason. */
  readonly cancellation?: Cancellation;
  /** Told the call's trailers when it succeeds, before send() resolves. */
  readonly onTrailers?: (trailers: Readonly<Record<string, string>>) => void;
}

/** How a call failed: a grpc-js ServiceError's shape, so the error layer maps it as one. */
export interface PipelineCallError extends Error {
  readonly code: number;
  readonly details: string;
  readonly metadata: Metadata;
}

interface Pending {
  readonly method: PipelinedMethod;
  readonly onTrailers: PipelineCall['onTrailers'];
  resolve(response: unknown): void;
  reject(error: unknown): void;
  /** Stops watching the attempt's cancellation (which cancels the call). */
  readonly stopWatching: () => void;
}

export class PipelineStream {
  readonly #stream: ClientDuplexStream<Buffer, PipelineResponse>;
  /** The metadata the stream was opened with: what a call need not repeat. */
  readonly #metadata: Readonly<Record<string, string>>;
  readonly #pending = new Map<number, Pending>();
  /** Resolves true once the server's headers came, false if the stream ended before. */
  readonly #opened: Promise<boolean>;
  #open = false;
  #ended = false;
  /** Takes no more calls: half-closes once every call written is answered or cancelled. */
  #closing = false;
  /** Half-closed: nothing more is written, not even a cancel. */
  #halfClosed = false;
  #unimplemented = false;
  #maxRequestBytes = 0;
  #nextId = 1;
  /** When a call was last sent or answered (Date.now()): the stream is idle after that. */
  #lastBusy = Date.now();
  #idleTimer: NodeJS.Timeout | undefined;

  /**
   * Opens a stream on `client` with `metadata`. The server keeps each answer within
   * `maxAnswerBytes` (the channel's receive limit; undefined: none); a request larger than
   * `maxRequestBytes` (the channel's send limit) or than the server reads is not sent.
   */
  constructor(
    client: Client,
    metadata: Readonly<Record<string, string>>,
    limits: { readonly maxAnswerBytes: number | undefined; readonly maxRequestBytes: number },
  ) {
    const { maxAnswerBytes } = limits;
    this.#metadata = metadata;
    const sent = new Metadata();
    for (const [key, value] of Object.entries(metadata)) sent.set(key, value);
    if (maxAnswerBytes !== undefined) sent.set(MAX_ANSWER_HEADER, String(maxAnswerBytes));
    this.#stream = client.makeBidiStreamRequest(
      PATH,
      (bytes: Buffer) => bytes,
      (bytes: Buffer) => PipelineResponse.decode(bytes),
      sent,
      { deadline: Number.POSITIVE_INFINITY },
    );
    this.#opened = new Promise((resolve) => {
      this.#stream.on('metadata', (headers: Metadata) => {
        const max = Number(headers.get(MAX_MESSAGE_HEADER)[0]);
        // A trailers-only answer (UNIMPLEMENTED) has no such header: its status follows.
        if (!(Number.isSafeInteger(max) && max > 0)) return;
        this.#maxRequestBytes = Math.min(max, limits.maxRequestBytes);
        this.#open = true;
        resolve(true);
      });
      this.#stream.on('status', (status: StatusObject) => {
        resolve(false);
        this.#end(status);
      });
    });
    // The status event says how the stream ended; this only keeps grpc-js's error event handled.
    this.#stream.on('error', () => {});
    this.#stream.on('data', (response: PipelineResponse) => this.#answer(response));
    this.#watchIdle(PIPELINE_IDLE_MS);
  }

  /** True once the stream takes no more calls: a new one must be opened for later calls. */
  get ended(): boolean {
    return this.#ended || this.#closing;
  }

  /** True when the server answered the stream UNIMPLEMENTED: it has no Pipeline. */
  get unimplemented(): boolean {
    return this.#unimplemented;
  }

  /**
   * Sends one call: resolves with its response, rejects with its error (a
   * {@link PipelineCallError}, or the cancellation's reason), or resolves {@link SEND_ALONE},
   * unsent, when it must go as a call of its own.
   */
  async send(call: PipelineCall): Promise<unknown> {
    if (!this.#open && !(await untilAborted(this.#opened, call.cancellation))) return SEND_ALONE;
    if (this.ended) return SEND_ALONE;
    this.#lastBusy = Date.now();
    const callId = this.#nextId;
    this.#nextId = callId === MAX_CALL_ID ? 1 : callId + 1;
    const bytes = encodeMessage(PipelineRequest, {
      callId,
      timeoutMs: call.timeoutMs,
      metadata: this.#ownMetadata(call.metadata),
      call: { $case: call.method, [call.method]: call.request } as PipelineRequest['call'],
    });
    if (bytes.length > this.#maxRequestBytes) return SEND_ALONE;
    const { cancellation } = call;
    if (cancellation?.aborted) throw cancellation.reason;
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        if (this.#take(callId) === undefined) return;
        this.#write(
          encodeMessage(PipelineRequest, {
            callId,
            timeoutMs: 0,
            metadata: {},
            call: { $case: 'cancel', cancel: {} },
          }),
        );
        reject(cancellation?.reason);
        this.#halfCloseWhenDone();
      };
      this.#pending.set(callId, {
        method: call.method,
        onTrailers: call.onTrailers,
        resolve,
        reject,
        stopWatching: watchAbort(cancellation, onAbort),
      });
      this.#write(bytes);
    });
  }

  /**
   * The call `callId` if it still waits for its answer, no longer waiting nor watching its
   * cancellation.
   */
  #take(callId: number): Pending | undefined {
    const pending = this.#pending.get(callId);
    if (pending === undefined) return undefined;
    this.#pending.delete(callId);
    pending.stopWatching();
    return pending;
  }

  /** No more calls: once those written are answered or cancelled, the stream half-closes. */
  end(): void {
    if (this.ended) return;
    this.#closing = true;
    clearTimeout(this.#idleTimer);
    this.#halfCloseWhenDone();
  }

  /**
   * Half-closes a stream told to end once no call is out. Not before: a call aborted after
   * the half-close could send no cancel, and its server would run it to the end for nobody
   * (a store closed while calls are out, whose callers then give up on them).
   */
  #halfCloseWhenDone(): void {
    if (!this.#closing || this.#halfClosed || this.#ended || this.#pending.size > 0) return;
    this.#halfClosed = true;
    this.#stream.end();
  }

  /** Ends the stream once no call has been out for {@link PIPELINE_IDLE_MS}. */
  #watchIdle(ms: number): void {
    this.#idleTimer = setTimeout(() => {
      if (this.ended) return;
      const idleFor = Date.now() - this.#lastBusy;
      if (this.#pending.size === 0 && idleFor >= PIPELINE_IDLE_MS) this.end();
      else
        this.#watchIdle(this.#pending.size === 0 ? PIPELINE_IDLE_MS - idleFor : PIPELINE_IDLE_MS);
    }, ms);
    this.#idleTimer.unref();
  }

  /** The call's metadata that differs from the stream's (a rotated token, a trace id). */
  #ownMetadata(metadata: Readonly<Record<string, string>>): Record<string, string> {
    let own: Record<string, string> | undefined;
    for (const key in metadata) {
      const value = metadata[key]!;
      if (this.#metadata[key] !== value) (own ??= {})[key] = value;
    }
    return own ?? {};
  }

  #write(bytes: Buffer): void {
    if (!this.#ended && !this.#halfClosed) this.#stream.write(bytes);
  }

  #answer(response: PipelineResponse): void {
    const pending = this.#take(response.callId);
    if (pending === undefined) return;
    this.#lastBusy = Date.now();
    const result = response.result;
    if (result?.$case === 'error') {
      pending.reject(callError(result.error));
    } else if (result?.$case === pending.method) {
      pending.onTrailers?.(response.trailers);
      pending.resolve((result as Record<string, unknown>)[result.$case]);
    } else {
      pending.reject(
        callError({
          code: Status.INTERNAL,
          message: `a ${pending.method} call was answered with ${result?.$case ?? 'nothing'}`,
          trailers: {},
        }),
      );
    }
    this.#halfCloseWhenDone();
  }

  #end(status: StatusObject): void {
    this.#ended = true;
    clearTimeout(this.#idleTimer);
    this.#unimplemented = !this.#open && status.code === Status.UNIMPLEMENTED;
    const error =
      status.code === Status.OK
        ? {
            code: Status.UNAVAILABLE,
            message: 'the Pipeline stream ended before the call was answered',
            trailers: {},
          }
        : { code: status.code, message: status.details, trailers: {} };
    const failure = callError(error, status.metadata);
    for (const callId of [...this.#pending.keys()]) this.#take(callId)?.reject(failure);
  }
}

function callError(error: CallError, metadata = new Metadata()): PipelineCallError {
  for (const [key, value] of Object.entries(error.trailers)) metadata.set(key, value);
  return Object.assign(new Error(`${error.code} ${Status[error.code] ?? ''}: ${error.message}`), {
    code: error.code,
    details: error.message,
    metadata,
  });
}
