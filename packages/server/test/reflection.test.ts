// Server reflection through a real server, with the reflection protocol's own client (its
// .proto loaded with proto-loader, as grpcurl would speak it): both versions list the Store and
// hand out its file descriptor, so tools need no .proto files.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
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
import { type StoreFixture, startStoreFixture } from './support/storeFixture.js';

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

/** The leading name (field 1) and package (field 2) of a serialized FileDescriptorProto. */
function nameAndPackage(descriptor: Buffer): [string, string] {
  const fields: string[] = [];
  let offset = 0;
  for (const tag of [0x0a, 0x12]) {
    expect(descriptor[offset]).to.equal(tag);
    const length = descriptor[offset + 1]!;
    fields.push(descriptor.subarray(offset + 2, offset + 2 + length).toString());
    offset += 2 + length;
  }
  return fields as [string, string];
}

describe('server reflection', function () {
  let store: StoreFixture;
  before(async () => {
    store = await startStoreFixture();
  });
  after(() => store?.close());

  for (const version of ['v1', 'v1alpha'] as const) {
    it(`${version}: lists shameless.v1.Store and serves its file descriptor`, async () => {
      const client = reflectionClient(version, store.address);
      try {
        const listed = await ask(client, { list_services: '' });
        const names = listed.list_services_response!.service.map((service) => service.name);
        expect(names).to.include('shameless.v1.Store');
        expect(names).to.include('grpc.health.v1.Health');

        const file = await ask(client, { file_containing_symbol: 'shameless.v1.Store' });
        const descriptors = file.file_descriptor_response!.file_descriptor_proto;
        // @grpc/reflection rebuilds one file per package, named after it.
        const [name, protoPackage] = nameAndPackage(descriptors[0]!);
        expect(name).to.equal('shameless_v1.proto');
        expect(protoPackage).to.equal('shameless.v1');
        expect(descriptors[0]!.toString()).to.include('DescribeStore').and.include('WriteCells');

        const missing = await ask(client, { file_containing_symbol: 'shameless.v1.Nope' });
        expect(missing.error_response?.error_code).to.equal(5); // NOT_FOUND
      } finally {
        client.close();
      }
    });
  }
});
