// The transport's public surface.

export {
  DEFAULT_BACKOFF,
  backoffCeiling,
  exponentialBackoff,
  type BackoffOptions,
  type BackoffPolicy,
  type RandomSource,
} from './policy/backoff.js';
export { DEFAULT_BUDGET, TokenBudget, type BudgetOptions } from './policy/budget.js';
export { ManualClock, sleep, systemClock, type Clock, type TimerHandle } from './call/clock.js';
export { SessionToken, type Consistency } from './call/consistency.js';
export {
  coalesceCalls,
  coalescingLayer,
  type CoalescingCounters,
  type CoalescingOptions,
  type CoalescingSettings,
} from './batch/coalescing.js';
export { transportChain, type ChainParts } from './middleware/chain.js';
export {
  EndpointPool,
  EndpointSelector,
  type Endpoint,
  type EndpointPicker,
  type EndpointPoolOptions,
} from './policy/endpoints.js';
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
} from './call/errors.js';
export { LatencyTracker, LatencyWindow, type LatencyOptions } from './policy/latency.js';
export type {
  BidiMethodName,
  RequestOf,
  ResponseOf,
  StreamMethodName,
  UnaryMethodName,
} from './call/methods.js';
export {
  DEFAULT_HEDGE,
  DEFAULT_RETRY,
  resolveHedgePolicy,
  resolveRetryPolicy,
  type HedgeOptions,
  type HedgePolicy,
  type RetryOptions,
  type RetryPolicy,
} from './policy/policy.js';
export type { TransportStats } from './call/stats.js';
export { metricsText } from './call/metricsText.js';
export {
  DEFAULT_DEADLINE_MS,
  createCoalescingTransport,
  createTransport,
  type TlsOptions,
  type TransportOptions,
} from './transport.js';
export type {
  CallSender,
  StreamCallOptions,
  Transport,
  UnaryCallOptions,
} from './call/transportInterface.js';
export { AttemptLog, type AttemptInfo, type AttemptKind } from './call/attempts.js';
export type { Cancellation } from './call/cancellation.js';
export {
  clientLayer,
  composeMiddleware,
  composeUnary,
  onlyMessage,
  type CallNext,
  type UnaryNext,
  type ClientCallOptions,
  type CallShape,
  type ClientCall,
  type ClientMiddleware,
} from './call/compose.js';
export type { TokenSource } from './middleware/credentials.js';
