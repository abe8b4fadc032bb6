// Server reflection through a real server, with the reflection protocol's own client (its
// .proto loaded with proto-loader, as grpcurl would speak it): both versions list the Store and
// hand out its files, which build as grpcurl builds them (each import asked for by name and
// resolved), so tools need no .proto files.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { create, createFileRegistry, fromBinary } from '@bufbuild/protobuf';
import {
  type FileDescriptorProto,
  FileDescriptorProtoSchema,
  FileDescriptorSetSchema,
} from '@bufbuild/protobuf/wkt';
import { expect } from 'chai';
import {
  type ChannelCredentials,
  type Client,
  type ClientDuplexStream,
  type GrpcObject,
  credentials,
  loadPackageDefinition,
} from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { type StoreFixture, startStoreFixture } from '../support/storeFixture.js';

const REFLECTION_PROTOS = join(
  dirname(createRequire(import.meta.url).resolve('@grpc/reflection')),
  '../proto',
);

interface ReflectionResponse {
  list_services_response?: { service: { name: string }[] };
  file_descriptor_response?: { file_descriptor_proto: Buffer[] };
  error_response?: { error_code: number; error_message: string };
}
type ReflectionClient = Client & {
  ServerReflectionInfo(): ClientDuplexStream<Record<string, string>, ReflectionResponse>;
};

function reflectionClient(version: 'v1' | 'v1alpha', address: string): ReflectionClient {
  const definition = loadSync(`grpc/reflection/${version}/reflection.proto`, {
    includeDirs: [REFLECTION_PROTOS],
    keepCase: true,
  });
  const grpcPackage = loadPackageDefinition(definition).grpc as GrpcObject;
  const reflectionPackage = (grpcPackage.reflection as GrpcObject)[version] as GrpcObject;
  const Service = reflectionPackage.ServerReflection as unknown as new (
    address: string,
    creds: ChannelCredentials,
  ) => ReflectionClient;
  return new Service(address, credentials.createInsecure());
}

/** One request on the bidirectional reflection stream, and its one answer. */
function ask(
  client: ReflectionClient,
  request: Record<string, string>,
): Promise<ReflectionResponse> {
  return new Promise((resolve, reject) => {
    const call = client.ServerReflectionInfo();
    call.on('data', (response: ReflectionResponse) => {
      resolve(response);
      call.end();
    });
    call.on('error', reject);
    call.write(request);
  });
}

/**
 * The files reflection hands out for `symbol`, with every import asked for by file name until
 * each is had, as grpcurl does: its files by name.
 */
async function filesOf(
  client: ReflectionClient,
  symbol: string,
): Promise<Map<string, FileDescriptorProto>> {
  const files = new Map<string, FileDescriptorProto>();
  const take = (response: ReflectionResponse) => {
    expect(response.error_response, JSON.stringify(response.error_response)).to.equal(undefined);
    for (const bytes of response.file_descriptor_response!.file_descriptor_proto) {
      const file = fromBinary(FileDescriptorProtoSchema, bytes);
      files.set(file.name, file);
    }
  };
  take(await ask(client, { file_containing_symbol: symbol }));
  const missing = () =>
    [...files.values()].flatMap((file) => file.dependency).find((name) => !files.has(name));
  for (let name = missing(); name !== undefined; name = missing()) {
    take(await ask(client, { file_by_filename: name }));
    expect(files.has(name), `file_by_filename ${name}`).to.equal(true);
  }
  return files;
}

/** The files, each after the files it imports. */
function importsFirst(files: Map<string, FileDescriptorProto>): FileDescriptorProto[] {
  const ordered: FileDescriptorProto[] = [];
  const visit = (file: FileDescriptorProto) => {
    if (ordered.includes(file)) return;
    for (const name of file.dependency) visit(files.get(name)!);
    ordered.push(file);
  };
  files.forEach(visit);
  return ordered;
}

describe('server reflection', function () {
  let store: StoreFixture;
  before(async () => {
    store = await startStoreFixture();
  });
  after(() => store?.close());

  for (const version of ['v1', 'v1alpha'] as const) {
    it(`${version}: lists the Store and serves its .proto files, which build with their imports`, async () => {
      const client = reflectionClient(version, store.address);
      try {
        const listed = await ask(client, { list_services: '' });
        const names = listed.list_services_response!.service.map((service) => service.name);
        expect(names).to.include('shameless.v1.Store');
        expect(names).to.include('grpc.health.v1.Health');

        const files = await filesOf(client, 'shameless.v1.Store');
        expect([...files.keys()]).to.have.members([
          'shameless/v1/store.proto',
          'shameless/v1/cell.proto',
          'shameless/v1/model.proto',
          'shameless/v1/groups.proto',
          'shameless/v1/moves.proto',
          'google/protobuf/timestamp.proto',
        ]);
        // Building a file finds each import by name and resolves every type it names, or throws.
        const registry = createFileRegistry(
          create(FileDescriptorSetSchema, { file: importsFirst(files) }),
        );
        const service = registry.getService('shameless.v1.Store');
        expect(service?.methods.map((method) => method.name)).to.include.members([
          'DescribeStore',
          'WriteCells',
          'FindShard',
        ]);
        const cell = registry.getMessage('shameless.v1.Cell');
        expect(
          cell?.fields.find((field) => field.name === 'created_at')?.message?.typeName,
        ).to.equal('google.protobuf.Timestamp');

        const missing = await ask(client, { file_containing_symbol: 'shameless.v1.Nope' });
        expect(missing.error_response?.error_code).to.equal(5); // NOT_FOUND
        const unknownFile = await ask(client, { file_by_filename: 'shameless/v1/nope.proto' });
        expect(unknownFile.error_response?.error_code).to.equal(5);
      } finally {
        client.close();
      }
    });
  }
});
