// The exit codes of `shameless plan`, apart from the plan itself so that --help needs no engine.
/** Exit codes of `shameless plan`, documented in its --help. */
export const PLAN_EXIT = {
  nothingToChange: 0,
  /** A check failed: serve or DefineModel would refuse, or a partition is unreachable. */
  checkFailed: 1,
  /** Bad settings or model file (usage). */
  usage: 2,
  changes: 3,
} as const;
