// Copies the .proto files from the repository's proto/ into this package's proto/, so the
// published package carries them for clients in other languages and for reflection-less tools
// (grpcurl -import-path, Postman). Runs on build and before `pnpm pack`; the copy is not committed.
import { cpSync, rmSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const packageDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const source = resolve(packageDir, '../../proto');
const target = resolve(packageDir, 'proto');

rmSync(target, { recursive: true, force: true });
cpSync(source, target, { recursive: true });
