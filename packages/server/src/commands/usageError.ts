// Input the CLI refuses before calling the server (a malformed flag, an unreadable file).
export class UsageError extends Error {}

/** Exit codes of the client commands. */
export const CLIENT_EXIT = { ok: 0, failed: 1, usage: 2 } as const;
