// Tokens files for tests: random tokens, written as the server reads them (SHA-256 digests only).
import { createHash, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import type { Role } from '../../src/grpc/middleware/methodRoles.js';

export interface TestToken {
  name: string;
  role: Role;
  /** The secret a client sends. */
  token: string;
}

export function newToken(name: string, role: Role): TestToken {
  return { name, role, token: randomBytes(24).toString('base64url') };
}

export function sha256Hex(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** Writes {"tokens":[{name, role, sha256}]} to the file. */
export function writeTokensFile(path: string, tokens: readonly TestToken[]): void {
  const entries = tokens.map(({ name, role, token }) => ({ name, role, sha256: sha256Hex(token) }));
  writeFileSync(path, JSON.stringify({ tokens: entries }));
}
