// @shameless/client: the Shameless SDK.

// Models, records and cells: connect, defineModel, put, where, save, update, each, ...
export * from './model/index.js';

// Transport: connections, deadlines, retries, hedging, typed errors.
export {
  CancelledError,
  ConflictError,
  DEFAULT_DEADLINE_MS,
  DeadlineExceededError,
  FailedPreconditionError,
  InternalError,
  InvalidArgumentError,
  ManualClock,
  NotFoundError,
  PermissionDeniedError,
  ResourceExhaustedError,
  ShamelessError,
  UnauthenticatedError,
  UnavailableError,
  createTransport,
  isTransientStatus,
  systemClock,
  toShamelessError,
  type BudgetOptions,
  type Clock,
  type HedgeOptions,
  type LatencyOptions,
  type RandomSource,
  type RequestOf,
  type ResponseOf,
  type RetryOptions,
  type ShamelessErrorOptions,
  type StreamCallOptions,
  type StreamMethodName,
  type TimerHandle,
  type Transport,
  type TransportOptions,
  type TransportStats,
  type UnaryCallOptions,
  type UnaryMethodName,
} from './transport/index.js';
