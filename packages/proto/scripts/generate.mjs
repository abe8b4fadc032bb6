// Generates src/gen from ../../proto with ts-proto, and descriptors/shameless.binpb (protoc's
// FileDescriptorSet of the same files and their imports, which server reflection hands out as
// written), using the protoc binary shipped in the npm `protoc` package (nothing is downloaded).
// Runs on every build, so neither can be stale; neither is committed.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const packageDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const protoRoot = resolve(packageDir, '../../proto');
const outDir = join(packageDir, 'src/gen');
const descriptorDir = join(packageDir, 'descriptors');
const require = createRequire(import.meta.url);

const protoc = join(dirname(require.resolve('protoc/package.json')), 'protoc.cjs');
const plugin = join(dirname(require.resolve('ts-proto/package.json')), 'protoc-gen-ts_proto');

const protoFiles = readdirSync(join(protoRoot, 'shameless/v1'))
  .filter((name) => name.endsWith('.proto'))
  .map((name) => `shameless/v1/${name}`);

const options = [
  'outputServices=grpc-js',
  // The message types of each method, which src/storeService.ts encodes with.
  'outputServices=generic-definitions',
  'esModuleInterop=true',
  'forceLong=bigint',
  'useDate=true',
  'oneof=unions',
  'env=node',
  'importSuffix=.js',
  'useOptionals=none',
  'outputIndex=false',
].join(',');

for (const dir of [outDir, descriptorDir]) {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
}
execFileSync(
  process.execPath,
  [
    protoc,
    `--plugin=protoc-gen-ts_proto=${plugin}`,
    `--ts_proto_out=${outDir}`,
    `--ts_proto_opt=${options}`,
    `--descriptor_set_out=${join(descriptorDir, 'shameless.binpb')}`,
    '--include_imports',
    `-I${protoRoot}`,
    ...protoFiles,
  ],
  { stdio: 'inherit' },
);
console.log(`generated ${protoFiles.length} proto files into ${outDir} and ${descriptorDir}`);
