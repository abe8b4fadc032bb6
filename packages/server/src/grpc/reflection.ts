// gRPC server reflection (grpc.reflection.v1 and v1alpha), so that grpcurl, Postman and the like
// can list and call the Store with no .proto files of their own. The descriptors are loaded from
// the .proto sources: from a `proto/` directory shipped with @shameless/proto or with this
// package when installed, else from the repository's `proto/` (a checkout).
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Server } from '@grpc/grpc-js';
import { type PackageDefinition, loadSync } from '@grpc/proto-loader';
import { ReflectionService } from '@grpc/reflection';
import type { Logger } from '../engine/logger.js';

const STORE_PROTO = 'shameless/v1/store.proto';
const HEALTH_PROTO = 'health/v1/health.proto';

/** Directories that may hold `shameless/v1/store.proto`, most specific first. */
function protoRootCandidates(): string[] {
  const require = createRequire(import.meta.url);
  const packageDirectory = (name: string): string | undefined => {
    try {
      return dirname(require.resolve(`${name}/package.json`));
    } catch {
      return undefined;
    }
  };
  // This file is dist/src/grpc/reflection.js inside the server package.
  const serverPackage = fileURLToPath(new URL('../../../', import.meta.url));
  return [
    packageDirectory('@shameless/proto'),
    serverPackage,
    join(serverPackage, '../..'),
  ].flatMap((directory) => (directory ? [join(directory, 'proto')] : []));
}

/** The directory holding the Store's .proto files, or undefined when none is found. */
export function findProtoRoot(): string | undefined {
  return protoRootCandidates().find((root) => existsSync(join(root, STORE_PROTO)));
}

/**
 * Adds the reflection services describing the Store (and health, when its .proto is found).
 * Without the .proto files it logs why and serves without reflection: the Store itself does
 * not need them.
 */
export function addReflection(server: Server, logger: Logger): void {
  const definition = (loaded ??= loadDescriptors());
  if (!definition) {
    logger.warn('server reflection is off: the .proto files were not found', {
      looked: protoRootCandidates().map((root) => join(root, STORE_PROTO)),
    });
    return;
  }
  new ReflectionService(definition).addToServer(server);
}

/** Loaded once per process: every server of a process describes the same files. */
let loaded: PackageDefinition | null | undefined;

function loadDescriptors(): PackageDefinition | null {
  const protoRoot = findProtoRoot();
  if (!protoRoot) return null;
  const files = [STORE_PROTO];
  const includeDirs = [protoRoot];
  const healthRoot = healthProtoRoot();
  if (healthRoot) {
    files.push(HEALTH_PROTO);
    includeDirs.push(healthRoot);
  }
  return loadSync(files, { includeDirs, keepCase: true });
}

function healthProtoRoot(): string | undefined {
  try {
    const root = join(
      dirname(createRequire(import.meta.url).resolve('grpc-health-check/package.json')),
      'proto',
    );
    return existsSync(join(root, HEALTH_PROTO)) ? root : undefined;
  } catch {
    return undefined;
  }
}
