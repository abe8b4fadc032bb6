// A raw Pipeline stream for tests that speak the contract: calls by id, their answers as
// promises, the server's headers and the stream's final status.
import { Metadata, type StatusObject } from '@grpc/grpc-js';
import type { PipelineRequest, PipelineResponse, StoreClient, CallError } from '@shameless/proto';

type Call = NonNullable<PipelineRequest['call']>;
type Result = NonNullable<PipelineResponse['result']>;

export interface PipelineCallOptions {
  readonly timeoutMs?: number;
  readonly metadata?: Record<string, string>;
}

/** A call's answer: the method's response, or the error it was answered with. */
export type Answer = Result;

export class RawPipeline {
  readonly stream;
  /** The server's response headers. */
  readonly headers: Promise<Metadata>;
  /** The stream's final status. */
  readonly status: Promise<StatusObject>;
  private readonly waiting = new Map<number, (answer: Answer) => void>();
  /** Every answer, in the order it came. */
  readonly answered: number[] = [];
  private nextId = 1;

  constructor(client: StoreClient, metadata: Record<string, string> = {}) {
    const sent = new Metadata();
    for (const [key, value] of Object.entries(metadata)) sent.set(key, value);
    this.stream = client.pipeline(sent);
    this.headers = new Promise((resolve) => this.stream.once('metadata', resolve));
    this.status = new Promise((resolve) => this.stream.once('status', resolve));
    this.stream.on('error', () => {});
    this.stream.on('data', (message: PipelineResponse) => {
      this.answered.push(message.callId);
      const resolve = this.waiting.get(message.callId);
      this.waiting.delete(message.callId);
      if (message.result) resolve?.(message.result);
    });
  }

  /** Sends one call; its answer. */
  call(call: Call, options: PipelineCallOptions = {}, callId = this.nextId++): Promise<Answer> {
    const answer = new Promise<Answer>((resolve) => this.waiting.set(callId, resolve));
    this.send({
      callId,
      timeoutMs: options.timeoutMs ?? 0,
      metadata: options.metadata ?? {},
      call,
    });
    return answer;
  }

  /** The id the next call() will take. */
  peekId(): number {
    return this.nextId;
  }

  send(request: PipelineRequest): void {
    this.stream.write(request);
  }

  cancel(callId: number): void {
    this.send({ callId, timeoutMs: 0, metadata: {}, call: { $case: 'cancel', cancel: {} } });
  }

  /** Half-closes the stream: no more calls. */
  end(): void {
    this.stream.end();
  }
}

/** The error of an answer; fails the test when the call succeeded. */
export function errorOf(answer: Answer): CallError {
  if (answer.$case !== 'error') throw new Error(`expected an error, got ${answer.$case}`);
  return answer.error;
}

/** The response of an answer of method `method`; fails the test otherwise. */
export function responseOf<M extends Exclude<Result['$case'], 'error'>>(
  answer: Answer,
  method: M,
): Extract<Result, { $case: M }> extends Record<M, infer R> ? R : never {
  if (answer.$case !== method) {
    const why = answer.$case === 'error' ? `${answer.error.code} ${answer.error.message}` : '';
    throw new Error(`expected ${method}, got ${answer.$case} ${why}`);
  }
  return (answer as unknown as Record<M, never>)[method];
}
