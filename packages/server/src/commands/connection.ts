// The client commands' connection: the common options (address, token, TLS, deadline) and a
// Store client built from them with the generated grpc-js client. The TLS variables are
// SHAMELESS_CLIENT_TLS_*: serve's SHAMELESS_TLS_CERT/KEY, exported in the same shell, are the
// server's own certificate, which a client must not present.
import { readFileSync } from 'node:fs';
import {
  type CallOptions,
  type ClientReadableStream,
  type ClientUnaryCall,
  type ServiceError,
  ChannelCredentials,
  Metadata,
  credentials,
} from '@grpc/grpc-js';
import { StoreClient, tlsCredentials } from '@shameless/proto';
import { type Command, Option } from 'commander';
import { INT32_MAX, integerArgument } from './integerArgument.js';
import { checkTlsFiles } from './tlsFileCheck.js';
import { UsageError } from './usageError.js';

export const DEFAULT_ADDRESS = '127.0.0.1:50051';
export const DEFAULT_DEADLINE_MS = 10_000;

export interface ConnectionOptionValues {
  address: string;
  token?: string;
  tls?: boolean;
  tlsCa?: string;
  tlsCert?: string;
  tlsKey?: string;
  deadlineMs: string;
}

export function addConnectionOptions(command: Command): Command {
  return command
    .addOption(
      new Option('--address <host:port>', 'the Shameless server to call')
        .env('SHAMELESS_ADDRESS')
        .default(DEFAULT_ADDRESS),
    )
    .addOption(
      new Option(
        '--token <token>',
        'bearer token sent as `authorization: Bearer <token>` (never printed)',
      ).env('SHAMELESS_TOKEN'),
    )
    .addOption(new Option('--tls', 'use TLS, trusting the system CAs (implied by --tls-ca)'))
    .addOption(
      new Option(
        '--tls-ca <file>',
        'PEM file of the CA that signed the server certificate (or of a self-signed server ' +
          'certificate); a file with neither is refused before any call',
      ).env('SHAMELESS_CLIENT_TLS_CA'),
    )
    .addOption(
      new Option(
        '--tls-cert <file>',
        'PEM client certificate, for mutual TLS (with --tls-key)',
      ).env('SHAMELESS_CLIENT_TLS_CERT'),
    )
    .addOption(
      new Option('--tls-key <file>', 'PEM private key of --tls-cert').env(
        'SHAMELESS_CLIENT_TLS_KEY',
      ),
    )
    .addOption(
      new Option(
        '--deadline-ms <ms>',
        'deadline of each call (at most 2147483647, about 24 days); streams (where, tail) have none unless this is given',
      )
        .env('SHAMELESS_DEADLINE_MS')
        .default(String(DEFAULT_DEADLINE_MS)),
    );
}

/** A generated grpc-js unary method, called with metadata and options. */
export type UnaryMethod<Req, Res> = (
  request: Req,
  metadata: Metadata,
  options: Partial<CallOptions>,
  callback: (error: ServiceError | null, response: Res) => void,
) => ClientUnaryCall;
type StreamMethod<Req, Res> = (
  request: Req,
  metadata: Metadata,
  options: Partial<CallOptions>,
) => ClientReadableStream<Res>;

export class StoreConnection {
  readonly client: StoreClient;
  readonly address: string;
  readonly deadlineMs: number;
  /** Whether streams get a deadline: only when --deadline-ms was given. */
  private readonly streamDeadline: boolean;
  private readonly token: string | undefined;

  constructor(options: ConnectionOptionValues, deadlineGiven: boolean) {
    // grpc-js throws, with a stack, on a deadline too far ahead; 2^31 - 1 ms is about 24 days.
    const deadlineMs = integerArgument(options.deadlineMs, '--deadline-ms', 1, INT32_MAX);
    // grpc-js refuses an empty target with a bare 'Could not parse target name ""'; an
    // exported SHAMELESS_ADDRESS of an unset variable is empty.
    if (options.address.trim() === '') {
      throw new UsageError(
        `--address (SHAMELESS_ADDRESS) is empty: give the server as host:port, e.g. ${DEFAULT_ADDRESS}`,
      );
    }
    this.address = options.address;
    this.deadlineMs = deadlineMs;
    this.streamDeadline = deadlineGiven;
    this.token = checkedToken(options.token);
    // grpc-js refuses answers over 4 MiB by default, though a cell may be larger; the server
    // bounds what it sends (serve --max-message-bytes), so the client takes whatever comes.
    // A stream without --deadline-ms (`tail --follow` above all) would wait for ever on a
    // server gone silent without closing the connection: a ping every 10 s, not answered
    // within 5 s, closes it, and the command fails UNAVAILABLE (tail with its cursor).
    this.client = new StoreClient(options.address, channelCredentials(options), {
      'grpc.max_receive_message_length': -1,
      'grpc.keepalive_time_ms': 10_000,
      'grpc.keepalive_timeout_ms': 5_000,
    });
  }

  /** One unary call with the token and the deadline. */
  unary<Req, Res>(method: UnaryMethod<Req, Res>, request: Req): Promise<Res> {
    return new Promise((resolve, reject) => {
      method.call(
        this.client,
        request,
        this.metadata(),
        { deadline: Date.now() + this.deadlineMs },
        (error, response) => (error ? reject(error) : resolve(response)),
      );
    });
  }

  /** A server stream with the token, and the deadline when one was given. */
  stream<Req, Res>(method: StreamMethod<Req, Res>, request: Req): ClientReadableStream<Res> {
    return method.call(
      this.client,
      request,
      this.metadata(),
      this.streamDeadline ? { deadline: Date.now() + this.deadlineMs } : {},
    );
  }

  close(): void {
    this.client.close();
  }

  private metadata(): Metadata {
    const metadata = new Metadata();
    if (this.token) metadata.set('authorization', `Bearer ${this.token}`);
    return metadata;
  }
}

/**
 * The token, if a gRPC header can carry it: printable ASCII. grpc-js refuses any other value
 * with a message quoting it, which would print the token; a \r or \n is what a token read
 * from a file or a tty most often brings along.
 */
function checkedToken(token: string | undefined): string | undefined {
  if (token === undefined || /^[ -~]*$/.test(token)) return token;
  throw new UsageError(
    '--token (SHAMELESS_TOKEN): it holds a character a gRPC header cannot carry (a line end, ' +
      'another control character or a non-ASCII letter); check where it was read from for a ' +
      'trailing \\r or \\n',
  );
}

/** Whether the command's options ask for TLS: --tls, or any TLS file. */
export function usesTls(options: ConnectionOptionValues): boolean {
  return Boolean(options.tls || options.tlsCa || options.tlsCert || options.tlsKey);
}

function channelCredentials(options: ConnectionOptionValues): ChannelCredentials {
  if (!usesTls(options)) return credentials.createInsecure();
  if (Boolean(options.tlsCert) !== Boolean(options.tlsKey)) {
    throw new UsageError(
      '--tls-cert and --tls-key go together: give both for mutual TLS, or neither',
    );
  }
  const files = {
    ca: options.tlsCa ? readPem(options.tlsCa, '--tls-ca') : undefined,
    key: options.tlsKey ? readPem(options.tlsKey, '--tls-key') : undefined,
    cert: options.tlsCert ? readPem(options.tlsCert, '--tls-cert') : undefined,
  };
  checkTlsFiles(files, options.tlsCa);
  return tlsCredentials(files);
}

function readPem(path: string, flag: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    throw new UsageError(
      `${flag}: cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
    );
  }
}
