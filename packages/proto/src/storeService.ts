// The Store's grpc-js service definition and client class: ts-proto's, with every message
// encoded by encodeMessage (see there for why). Decoding is ts-proto's own, except that a
// request's strings must be UTF-8, as proto3 requires: read leniently, each bad byte would
// become U+FFFD, and a query would find another value's records.
import { makeGenericClientConstructor } from '@grpc/grpc-js';
import { BinaryReader } from '@bufbuild/protobuf/wire';
import { type MessageEncoder, encodeMessage } from './encodeMessage.js';
import {
  StoreClient as GeneratedStoreClient,
  StoreDefinition,
  StoreService as GeneratedStoreService,
} from './gen/shameless/v1/store.js';

type Methods = typeof GeneratedStoreService;

interface MessageDecoder {
  decode(input: BinaryReader): unknown;
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
/** Throws on a string that is not UTF-8, which the server answers as a malformed request. */
const decodeStrictUtf8 = (bytes: Uint8Array): string => strictUtf8.decode(bytes);

export const StoreService = Object.fromEntries(
  Object.entries(GeneratedStoreService).map(([name, method]) => {
    const types: {
      requestType: MessageEncoder<unknown> & MessageDecoder;
      responseType: MessageEncoder<unknown>;
    } = StoreDefinition.methods[name as keyof Methods];
    return [
      name,
      {
        ...method,
        requestSerialize: (request: unknown) => encodeMessage(types.requestType, request),
        requestDeserialize: (bytes: Buffer) =>
          types.requestType.decode(new BinaryReader(bytes, decodeStrictUtf8)),
        responseSerialize: (response: unknown) => encodeMessage(types.responseType, response),
      },
    ];
  }),
) as Methods;

/**
 * The generated client's methods: the type of `new StoreClient(...)`. An interface, not an
 * alias, so that a type inferred from it is named from this package's index.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface StoreClient extends GeneratedStoreClient {}

export const StoreClient: {
  new (...args: ConstructorParameters<typeof GeneratedStoreClient>): StoreClient;
  readonly service: typeof StoreService;
  readonly serviceName: string;
} = makeGenericClientConstructor(StoreService, StoreDefinition.fullName) as never;
