// The transport baselines: a bare grpc-js echo of raw bytes (no protobuf, no handler work),
// served from its own process as the Shameless server is, so the two are measured in the same
// shape: as unary calls (the echo), and as messages of one open stream (the road the
// SDK's Pipeline takes). Whatever Shameless does beyond these is its own cost.
import * as grpc from '@grpc/grpc-js';
import { rawBytesMethod } from './rawBytesMethod.js';

export const ECHO_SERVICE = {
  echo: rawBytesMethod('/shameless.bench.Echo/Echo', false),
  /** Every message sent back, in order, on one stream. */
  pipe: rawBytesMethod('/shameless.bench.Echo/Pipe', true),
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
    pipe: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
      call.on('data', (message: Buffer) => call.write(message));
      call.on('end', () => call.end());
    },
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

type EchoStub = grpc.Client & {
  echo(payload: Buffer, callback: (error: grpc.ServiceError | null, reply: Buffer) => void): void;
  pipe(): grpc.ClientDuplexStream<Buffer, Buffer>;
};

function echoStub(address: string): EchoStub {
  const Client = grpc.makeGenericClientConstructor(ECHO_SERVICE, 'Echo');
  return new Client(address, grpc.credentials.createInsecure(), {
    'grpc.max_receive_message_length': 16 * 1024 * 1024 + 1024,
  }) as unknown as EchoStub;
}

/** The echo as unary calls: each payload a call of its own. */
export function connectEcho(address: string): EchoClient {
  const client = echoStub(address);
  return {
    echo: (payload) =>
      new Promise((resolve, reject) =>
        client.echo(payload, (error, reply) => (error ? reject(error) : resolve(reply))),
      ),
    close: () => client.close(),
  };
}

/** The echo as messages of one stream, answered in the order sent. */
export function connectStreamEcho(address: string): EchoClient {
  const client = echoStub(address);
  const stream = client.pipe();
  const waiting: { resolve(reply: Buffer): void; reject(error: Error): void }[] = [];
  stream.on('data', (reply: Buffer) => waiting.shift()?.resolve(reply));
  stream.on('error', (error: Error) => {
    for (const caller of waiting.splice(0)) caller.reject(error);
  });
  return {
    echo: (payload) =>
      new Promise((resolve, reject) => {
        waiting.push({ resolve, reject });
        stream.write(payload);
      }),
    close: () => {
      stream.end();
      client.close();
    },
  };
}
