// Input the CLI refuses before calling the server (a malformed flag, an unreadable file), and
// its exit codes.
import type { CommanderError } from 'commander';

export class UsageError extends Error {}

/** Exit codes of the client commands. */
export const CLIENT_EXIT = { ok: 0, failed: 1, usage: 2 } as const;

/**
 * Commander's exit: help and --version exit 0; everything else it refuses (an unknown option or
 * command, a missing or extra argument, a value outside --order's choices…) is input refused
 * before any call, so it exits 2 like our own checks, not commander's 1.
 */
export function exitAfterCommander(error: CommanderError): never {
  process.exit(error.exitCode === 0 ? CLIENT_EXIT.ok : CLIENT_EXIT.usage);
}
