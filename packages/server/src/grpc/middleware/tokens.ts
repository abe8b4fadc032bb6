// The bearer tokens the server accepts, from the tokens file. The file holds only SHA-256 digests,
// so neither it nor this process's memory holds a token a reader of either could replay; a
// presented token is hashed and compared with every digest in constant time.
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ROLES, type Role } from './methodRoles.js';

export interface TokenHolder {
  /** The name the file gives the token, for logs and messages (never the token itself). */
  readonly name: string;
  readonly role: Role;
}

interface TokenEntry extends TokenHolder {
  readonly digest: Buffer;
}

/** A tokens file that cannot be used; the message names the file and the entry at fault. */
export class TokensFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TokensFileError';
  }
}

const EXAMPLE =
  '{"tokens":[{"name":"ingest","role":"writer","sha256":"<lowercase hex SHA-256 of the token>"}]}';

/** Reads and checks a tokens file; throws TokensFileError saying what is wrong and where. */
export function readTokensFile(path: string): TokenEntry[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new TokensFileError(
      `cannot read the tokens file ${path} (${code}); check the path and that this user may read it`,
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    // JSON.parse's message quotes the text around the error, which could be a pasted token.
    throw new TokensFileError(`the tokens file ${path} is not valid JSON; expected ${EXAMPLE}`);
  }
  const tokens = (parsed as { tokens?: unknown } | null)?.tokens;
  if (typeof parsed !== 'object' || Array.isArray(parsed) || !Array.isArray(tokens)) {
    throw new TokensFileError(`the tokens file ${path} must hold ${EXAMPLE}`);
  }
  const names = new Set<string>();
  const digests = new Set<string>();
  return tokens.map((entry: unknown, i): TokenEntry => {
    const where = `the tokens file ${path}: tokens[${i}]`;
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
      throw new TokensFileError(`${where} must be an object like ${EXAMPLE}`);
    }
    const { name, role, sha256 } = entry as Record<string, unknown>;
    if (typeof name !== 'string' || name === '') {
      throw new TokensFileError(`${where}.name must be a non-empty string`);
    }
    if (names.has(name)) throw new TokensFileError(`${where}.name "${name}" is used twice`);
    if (typeof role !== 'string' || !(ROLES as readonly string[]).includes(role)) {
      throw new TokensFileError(`${where}.role must be one of ${ROLES.join(', ')}`);
    }
    if (typeof sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(sha256)) {
      throw new TokensFileError(
        `${where}.sha256 must be 64 lowercase hex digits, the SHA-256 of the token (e.g. printf %s "$TOKEN" | sha256sum)`,
      );
    }
    if (digests.has(sha256)) {
      throw new TokensFileError(`${where}.sha256 is the same token as an earlier entry`);
    }
    names.add(name);
    digests.add(sha256);
    return { name, role: role as Role, digest: Buffer.from(sha256, 'hex') };
  });
}

/** The accepted tokens, replaceable as a whole (on SIGHUP) while calls are being checked. */
export class TokenSet {
  private entries: readonly TokenEntry[];

  constructor(readonly path: string) {
    this.entries = readTokensFile(path);
  }

  get size(): number {
    return this.entries.length;
  }

  /** Re-reads the file; when it is unusable, the tokens stay as they were and this throws. */
  reload(): void {
    this.entries = readTokensFile(this.path);
  }

  /** Who holds this token, or undefined for a token the file does not list. */
  holderOf(token: string): TokenHolder | undefined {
    const digest = createHash('sha256').update(token, 'utf8').digest();
    let found: TokenEntry | undefined;
    // Every digest is compared, so the time taken says nothing about which one matched.
    for (const entry of this.entries) {
      if (timingSafeEqual(digest, entry.digest) && !found) found = entry;
    }
    return found && { name: found.name, role: found.role };
  }
}
