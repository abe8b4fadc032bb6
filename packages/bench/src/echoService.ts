// The transport baseline: a bare grpc-js unary echo of raw bytes (no protobuf, no handler
// work), served from its own process as the Shameless server is, so the two are measured in
// the same shape. Whatever Shameless does beyond this is its own cost.
import * as grpc from '@grpc/grpc-js';

const identity = (bytes: Buffer) => bytes;

export const ECHO_SERVICE = {
  echo: {
    path: '/shameless.bench.Echo/Echo',
    requestStream: false,
    responseStream: false,
    requestSerialize: identity,
    requestDeserialize: identity,
    responseSerialize: identity,
    responseDeserialize: identity,
  },
} satisfies grpc.ServiceDefinition;

/** Serves the echo on `127.0.0.1:0` and resolves with the bound port. */
export async function serveEcho(): Promise<{ port: number; server: grpc.Server }> {
  const server = new grpc.Server({
    'grpc.max_receive_message_length': 16 * 1024 * 1024 + 1024,
    'grpc.max_send_message_length': 16 * 1024 * 1024 + 1024,
  });
  server.addService(ECHO_SERVICE, {
    echo: (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) =>
      callback(null, call.request),
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) =>
      error ? reject(error) : resolve(bound),
    ),
  );
  return { port, server };
}

export interface EchoClient {
  echo(payload: Buffer): Promise<Buffer>;
  close(): void;
}

export function connectEcho(address: string): EchoClient {
  const Client = grpc.makeGenericClientConstructor(ECHO_SERVICE, 'Echo');
  const client = new Client(address, grpc.credentials.createInsecure(), {
    'grpc.max_receive_message_length': 16 * 1024 * 1024 + 1024,
  }) as unknown as grpc.Client & {
    echo(payload: Buffer, callback: (error: grpc.ServiceError | null, reply: Buffer) => void): void;
  };
  return {
    echo: (payload) =>
      new Promise((resolve, reject) =>
        client.echo(payload, (error, reply) => (error ? reject(error) : resolve(reply))),
      ),
    close: () => client.close(),
  };
}
