// The transport's public surface.

export {
  DEFAULT_BACKOFF,
  backoffCeiling,
  exponentialBackoff,
  type BackoffOptions,
  type BackoffPolicy,
  type RandomSource,
} from './backoff.js';
export { DEFAULT_BUDGET, TokenBudget, type BudgetOptions } from './budget.js';
export { ManualClock, sleep, systemClock, type Clock, type TimerHandle } from './clock.js';
export {
  coalesceCalls,
  createCoalescingTransport,
  type CoalescingOptions,
  type CoalescingSettings,
} from './coalescing.js';
export {
  EndpointPool,
  EndpointSelector,
  type Endpoint,
  type EndpointPicker,
  type EndpointPoolOptions,
} from './endpoints.js';
export {
  AlreadyExistsError,
  CancelledError,
  ConflictError,
  DeadlineExceededError,
  FailedPreconditionError,
  InternalError,
  InvalidArgumentError,
  NotFoundError,
  PermissionDeniedError,
  ResourceExhaustedError,
  ShamelessError,
  UnauthenticatedError,
  UnavailableError,
  errorForStatus,
  isMessageTooLarge,
  isTransientStatus,
  toShamelessError,
  type ShamelessErrorOptions,
} from './errors.js';
export { LatencyTracker, LatencyWindow, type LatencyOptions } from './latency.js';
export type { RequestOf, ResponseOf, StreamMethodName, UnaryMethodName } from './methods.js';
export {
  DEFAULT_HEDGE,
  DEFAULT_RETRY,
  resolveHedgePolicy,
  resolveRetryPolicy,
  type HedgeOptions,
  type HedgePolicy,
  type RetryOptions,
  type RetryPolicy,
} from './policy.js';
export type { TransportStats } from './stats.js';
export {
  StreamExecutor,
  type StartStream,
  type StreamAttempt,
  type StreamCallOptions,
} from './stream.js';
export {
  DEFAULT_DEADLINE_MS,
  createTransport,
  type Transport,
  type TransportOptions,
} from './transport.js';
export {
  UnaryExecutor,
  type Attempt,
  type AttemptContext,
  type AttemptKind,
  type StartAttempt,
  type UnaryCallOptions,
} from './unary.js';
