// The Pipeline stream of each endpoint: opened by the first call that needs it, opened again
// after it ends, and not tried for a while on a server that answered it UNIMPLEMENTED (one that
// predates it), whose calls then go on their own.

import type { Clock } from '../call/clock.js';
import type { Endpoint } from '../policy/endpoints.js';
import { PipelineStream } from './pipelineStream.js';

/** How long a server without Pipeline gets calls of their own before the stream is tried again. */
const RETRY_UNIMPLEMENTED_MS = 60_000;

export interface PipelinesSettings {
  readonly clock: Clock;
  /** The channels' receive limit: the server keeps each answer within it. None when undefined. */
  readonly maxAnswerBytes: number | undefined;
  /** The channels' send limit: a larger request goes as a call of its own. */
  readonly maxRequestBytes: number;
}

export class Pipelines {
  readonly #streams = new Map<string, PipelineStream>();
  readonly #unimplementedUntil = new Map<string, number>();
  readonly #settings: PipelinesSettings;
  #closed = false;

  constructor(settings: PipelinesSettings) {
    this.#settings = settings;
  }

  /**
   * The endpoint's stream, opened with `metadata` if it has none open; undefined when its
   * server has no Pipeline or the pipelines are closed.
   */
  streamOf(endpoint: Endpoint, metadata: () => Record<string, string>): PipelineStream | undefined {
    if (this.#closed) return undefined;
    const { address } = endpoint;
    let stream = this.#streams.get(address);
    if (stream?.unimplemented) {
      this.#streams.delete(address);
      this.#unimplementedUntil.set(address, this.#settings.clock.now() + RETRY_UNIMPLEMENTED_MS);
      stream = undefined;
    }
    const until = this.#unimplementedUntil.get(address);
    if (until !== undefined) {
      if (this.#settings.clock.now() < until) return undefined;
      this.#unimplementedUntil.delete(address);
    }
    if (stream === undefined || stream.ended) {
      stream = new PipelineStream(endpoint.client, metadata(), this.#settings);
      this.#streams.set(address, stream);
    }
    return stream;
  }

  /** Opens no more streams; each open one ends once the calls written on it are answered. */
  close(): void {
    this.#closed = true;
    for (const stream of this.#streams.values()) stream.end();
    this.#streams.clear();
  }
}
