// The set of server endpoints: one grpc-js StoreClient (one channel) per endpoint, picked round
// robin, preferring endpoints that have not just failed and, for hedges and retries, endpoints
// the call has not used yet.

import {
  connectivityState,
  credentials as grpcCredentials,
  type ChannelCredentials,
  type ChannelOptions,
} from '@grpc/grpc-js';
import { StoreClient } from '@shameless/proto';
import { systemClock, type Clock } from '../call/clock.js';

/** What the call pipeline needs from an endpoint set. */
export interface EndpointPicker<E extends { readonly address: string }> {
  /**
   * Picks an endpoint, round robin. Prefers, in order: endpoints not in `exclude` and not marked
   * down; not in `exclude`; not marked down; any. So a retry or hedge that excludes the
   * endpoints it already used gets a different one whenever there is one.
   */
  pick(exclude?: ReadonlySet<string>): E;
  /** Every endpoint's address, in the order given. */
  readonly addresses: readonly string[];
  /** Marks an endpoint down (it answered UNAVAILABLE) for a while. */
  markDown(address: string): void;
  /** Marks an endpoint healthy again (it answered). */
  markUp(address: string): void;
}

/** The server's default largest message: a 16 MiB cell and its envelope. */
export const DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024 + 64 * 1024;

/** Round-robin selection over addresses with "recently failed" marks. No channels. */
export class EndpointSelector implements EndpointPicker<{ readonly address: string }> {
  readonly addresses: readonly string[];
  readonly #downUntil = new Map<string, number>();
  readonly #downMs: number;
  readonly #clock: Clock;
  #cursor = 0;

  constructor(addresses: readonly string[], options: { downMs?: number; clock?: Clock } = {}) {
    this.addresses = normalizeAddresses(addresses);
    this.#downMs = options.downMs ?? 1000;
    this.#clock = options.clock ?? systemClock;
  }

  /** True while `address` is marked down. */
  isDown(address: string): boolean {
    const until = this.#downUntil.get(address);
    if (until === undefined) return false;
    if (this.#clock.now() >= until) {
      this.#downUntil.delete(address);
      return false;
    }
    return true;
  }

  pick(exclude?: ReadonlySet<string>): { readonly address: string } {
    return { address: this.pickAddress(exclude) };
  }

  /** Like {@link pick}, returning the address. */
  pickAddress(exclude?: ReadonlySet<string>): string {
    const n = this.addresses.length;
    const start = this.#cursor;
    let best: string | undefined;
    let bestRank = Number.POSITIVE_INFINITY;
    let bestOffset = 0;
    for (let offset = 0; offset < n; offset++) {
      const address = this.addresses[(start + offset) % n] as string;
      const rank = (exclude?.has(address) ? 2 : 0) + (this.isDown(address) ? 1 : 0);
      if (rank < bestRank) {
        best = address;
        bestRank = rank;
        bestOffset = offset;
        if (rank === 0) break;
      }
    }
    this.#cursor = (start + bestOffset + 1) % n;
    return best as string;
  }

  markDown(address: string): void {
    if (this.#downMs > 0) this.#downUntil.set(address, this.#clock.now() + this.#downMs);
  }

  markUp(address: string): void {
    this.#downUntil.delete(address);
  }

  /** True while every endpoint is marked down. */
  allDown(): boolean {
    return this.addresses.every((address) => this.isDown(address));
  }
}

/** One server endpoint and its client (channel). */
export interface Endpoint {
  /** `host:port` (or any grpc-js target string). */
  readonly address: string;
  /** The generated grpc-js client bound to this endpoint. */
  readonly client: StoreClient;
}

/** Settings of an {@link EndpointPool}. */
export interface EndpointPoolOptions {
  /** Server addresses, `host:port`. At least one; duplicates are dropped. */
  endpoints: readonly string[];
  /** Channel credentials for every endpoint. Default: insecure. */
  credentials?: ChannelCredentials;
  /** grpc-js channel options (keepalive, max message sizes, ...). */
  channelOptions?: ChannelOptions;
  /** How long an endpoint that answered UNAVAILABLE is avoided, in ms. Default 1000. */
  downMs?: number;
  clock?: Clock;
}

/** One grpc-js StoreClient per endpoint, with round-robin picking. */
export class EndpointPool implements EndpointPicker<Endpoint> {
  readonly #selector: EndpointSelector;
  readonly #endpoints = new Map<string, Endpoint>();
  /** Endpoints that have answered at least once. */
  readonly #answered = new Set<string>();
  #closed = false;

  constructor(options: EndpointPoolOptions) {
    this.#selector = new EndpointSelector(options.endpoints, {
      downMs: options.downMs,
      clock: options.clock,
    });
    const creds = options.credentials ?? grpcCredentials.createInsecure();
    for (const address of this.#selector.addresses) {
      const client = new StoreClient(address, creds, {
        // The transport retries and hedges itself: grpc-js's own retry layer would only add a
        // wrapper (and buffering) to every call.
        'grpc.enable_retries': 0,
        // As large as the server's default (--max-message-bytes): a batch's answer or a
        // 16 MiB cell must not fail on grpc-js's 4 MiB default.
        'grpc.max_receive_message_length': DEFAULT_MAX_MESSAGE_BYTES,
        'grpc.max_send_message_length': DEFAULT_MAX_MESSAGE_BYTES,
        // A restarting server is back within a second or two: reconnect sooner than grpc-js's
        // defaults (1 s first, up to 120 s), so calls waiting for it resume promptly.
        'grpc.initial_reconnect_backoff_ms': 200,
        'grpc.max_reconnect_backoff_ms': 1000,
        // A server that goes silent without closing its connection (a frozen process, a host
        // gone, a network that drops the connection) would hold an idle follow stream, which
        // has no deadline and sends nothing, for ever. While calls are open, a ping every 10 s
        // (gRPC's least for clients) not answered within 5 s closes the connection: its calls
        // fail UNAVAILABLE, and the stream reopens from its cursors, on another endpoint.
        'grpc.keepalive_time_ms': 10_000,
        'grpc.keepalive_timeout_ms': 5_000,
        ...options.channelOptions,
      });
      this.#endpoints.set(address, { address, client });
    }
  }

  /** The endpoint addresses, in the order given. */
  get addresses(): readonly string[] {
    return this.#selector.addresses;
  }

  /** True once {@link close} was called. */
  get closed(): boolean {
    return this.#closed;
  }

  pick(exclude?: ReadonlySet<string>): Endpoint {
    return this.#endpoints.get(this.#selector.pickAddress(exclude)) as Endpoint;
  }

  /** The endpoint with this address, if it is one of the pool's. */
  get(address: string): Endpoint | undefined {
    return this.#endpoints.get(address);
  }

  isDown(address: string): boolean {
    return this.#selector.isDown(address);
  }

  markDown(address: string): void {
    this.#selector.markDown(address);
  }

  markUp(address: string): void {
    this.#answered.add(address);
    this.#selector.markUp(address);
  }

  /** True while every endpoint is marked down. */
  allDown(): boolean {
    return this.#selector.allDown();
  }

  /**
   * True when the endpoint has answered before and its channel has no connection now: its
   * server is restarting (or gone), not misaddressed.
   */
  reconnecting(address: string): boolean {
    const endpoint = this.#endpoints.get(address);
    if (endpoint === undefined || !this.#answered.has(address)) return false;
    const state = endpoint.client.getChannel().getConnectivityState(false);
    return state !== connectivityState.READY && state !== connectivityState.SHUTDOWN;
  }

  /** Closes every channel. Calls already in flight are allowed to finish. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const { client } of this.#endpoints.values()) client.close();
  }
}

function normalizeAddresses(addresses: readonly string[]): string[] {
  const seen = new Set<string>();
  for (const raw of addresses) {
    if (typeof raw !== 'string' || raw.trim() === '') {
      throw new TypeError(`an endpoint must be a non-empty "host:port" string, got ${String(raw)}`);
    }
    seen.add(raw.trim());
  }
  if (seen.size === 0) throw new TypeError('at least one endpoint is required');
  return [...seen];
}
