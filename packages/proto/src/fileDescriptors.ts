// The Store's .proto files as protoc compiled them (scripts/generate.mjs writes the set at build
// time), for server reflection. Tools such as grpcurl build each file they are handed and
// resolve its imports by name, so the files must keep their own names and imports; descriptors
// rebuilt by protobufjs, as @grpc/proto-loader makes them, merge a package into one file that
// names no imports (grpc/grpc-node#3018).
import { readFileSync } from 'node:fs';
import { BinaryReader, WireType } from '@bufbuild/protobuf/wire';

const DESCRIPTOR_SET = new URL('../descriptors/shameless.binpb', import.meta.url);

/** FileDescriptorSet.file: the field every file of the set is encoded in. */
const FILE_FIELD = 1;

/**
 * The serialized FileDescriptorSet of `shameless/v1/*.proto` and their imports, as protoc wrote
 * it. Throws when the build did not write it.
 */
export function storeDescriptorSet(): Buffer {
  return readFileSync(DESCRIPTOR_SET);
}

/** Each file of a serialized FileDescriptorSet, as the FileDescriptorProto bytes it holds. */
export function fileDescriptorsOf(set: Uint8Array): Buffer[] {
  const reader = new BinaryReader(set);
  const files: Buffer[] = [];
  while (reader.pos < reader.len) {
    const [field, wireType] = reader.tag();
    if (field === FILE_FIELD && wireType === WireType.LengthDelimited) {
      files.push(Buffer.from(reader.bytes()));
    } else {
      reader.skip(wireType);
    }
  }
  return files;
}
