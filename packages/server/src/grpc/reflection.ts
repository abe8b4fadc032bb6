// gRPC server reflection (grpc.reflection.v1 and v1alpha), so that grpcurl, Postman and the like
// can list and call the Store with no .proto files of their own. It hands out the Store's files
// as protoc compiled them (@shameless/proto's storeDescriptorSet), with their own names and
// imports, so that a tool can build each one; and the health service's, when its .proto is found.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Server } from '@grpc/grpc-js';
import {
  type PackageDefinition,
  loadFileDescriptorSetFromBuffer,
  loadSync,
} from '@grpc/proto-loader';
import { ReflectionService } from '@grpc/reflection';
import { fileDescriptorsOf, storeDescriptorSet } from '@shameless/proto';
import type { Logger } from '../engine/base/logger.js';

const HEALTH_PROTO = 'health/v1/health.proto';

/**
 * Adds the reflection services describing the Store (and health, when its .proto is found).
 * Without the Store's descriptors (a build that did not write them) it logs why and serves
 * without reflection: the Store itself does not need them.
 */
export function addReflection(server: Server, logger: Logger): void {
  const definition = (loaded ??= loadDefinition(logger));
  if (definition) new ReflectionService(definition).addToServer(server);
}

/** Loaded once per process: every server of a process describes the same files. */
let loaded: PackageDefinition | null | undefined;

function loadDefinition(logger: Logger): PackageDefinition | null {
  let set: Buffer;
  try {
    set = storeDescriptorSet();
  } catch (error) {
    logger.warn("server reflection is off: the Store's descriptor set was not found", {
      error: (error as Error).message,
      hint: 'build @shameless/proto (pnpm build) to write it',
    });
    return null;
  }
  return { ...healthDefinition(), ...storeDefinition(set) };
}

/**
 * The Store's definition, each type carrying protoc's files. @grpc/reflection serves the files
 * it finds in the definitions' fileDescriptorProtos; proto-loader fills them with files that
 * protobufjs rebuilt, which merge a package into one file that names no imports, so that a tool
 * resolving imports by name (grpcurl) cannot build it (grpc/grpc-node#3018).
 */
function storeDefinition(set: Buffer): PackageDefinition {
  const files = fileDescriptorsOf(set);
  const definition = loadFileDescriptorSetFromBuffer(set, { keepCase: true });
  for (const entry of Object.values(definition)) {
    if ('fileDescriptorProtos' in entry) entry.fileDescriptorProtos = files;
  }
  return definition;
}

function healthDefinition(): PackageDefinition {
  try {
    const root = join(
      dirname(createRequire(import.meta.url).resolve('grpc-health-check/package.json')),
      'proto',
    );
    return existsSync(join(root, HEALTH_PROTO))
      ? loadSync(HEALTH_PROTO, { includeDirs: [root], keepCase: true })
      : {};
  } catch {
    return {};
  }
}
