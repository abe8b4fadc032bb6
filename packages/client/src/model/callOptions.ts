// How the model layer marks its calls for the transport: reads may be retried and hedged;
// writes carry one requestId per logical write, sent unchanged on every attempt, so they may
// be retried (never hedged: a hedge would only race the same write).

import { randomUUID } from 'node:crypto';
import type { Consistency, UnaryCallOptions } from '../transport/index.js';

/** Per-call options of every method that talks to the store. */
export interface CallOptions {
  /**
   * The deadline of the call, every retry and hedge included, in ms from now. Defaults to the
   * store's `deadlineMs` (5 s unless set in {@link connect}).
   */
  readonly deadlineMs?: number;
  /** Aborting it cancels the call, which then rejects with a CancelledError. */
  readonly signal?: AbortSignal;
  /**
   * How fresh a read must be (writes ignore it): `'strong'`, `'session'` (this client's own
   * writes always seen) or `{ maxStalenessMs }`. Defaults to the store's `consistency`
   * (`'session'` unless set in {@link connect}); see docs/consistency.md#read-replicas.
   */
  readonly consistency?: Consistency;
}

/** Per-call options of a write. */
export interface WriteOptions extends CallOptions {
  /**
   * The write's idempotency key: 1 to 64 characters of `[A-Za-z0-9._:-]`. By default the SDK
   * picks a random UUID once per logical write and resends it on every retry, so a retried
   * write creates exactly one version. Pass your own (e.g. the id of the queue message being
   * handled) to keep that guarantee across process restarts.
   */
  readonly requestId?: string;
}

/** The transport options of a read: safe to retry and to hedge. */
export function readCall(options: CallOptions = {}): UnaryCallOptions {
  return {
    idempotent: true,
    hedgeable: true,
    deadlineMs: options.deadlineMs,
    signal: options.signal,
    consistency: options.consistency,
  };
}

/** The transport options of a write that carries a requestId: safe to retry, not hedged. */
export function writeCall(options: CallOptions = {}): UnaryCallOptions {
  return {
    idempotent: true,
    hedgeable: false,
    deadlineMs: options.deadlineMs,
    signal: options.signal,
  };
}

/** A fresh requestId for one logical write. */
export function newRequestId(): string {
  return randomUUID();
}
