// TLS channel credentials for the SDK (connect's `tls`) and the client commands (`--tls-ca`,
// ...). They are grpc-js's own secure connector (a TLS socket over its TCP socket, ALPN h2, the
// certificate checked against the host dialled, or against `grpc.ssl_target_name_override`, and
// through an HTTP proxy against the server's host, not the proxy's) less one thing: grpc-js
// sends the host it dials as the TLS server name (SNI) even when that is an IP address, which
// RFC 6066 forbids and for which Node prints a DEP0123 deprecation warning in the caller's
// process. An IP address goes without a server name, and its certificate must still name it.
import { type Socket, isIP } from 'node:net';
import {
  type ConnectionOptions,
  type SecureContext,
  checkServerIdentity,
  connect,
  createSecureContext,
} from 'node:tls';
import {
  CallCredentials,
  type ChannelOptions,
  ChannelCredentials,
  experimental,
} from '@grpc/grpc-js';

export interface TlsFiles {
  /** PEM of the CAs to trust; the system's when absent. */
  readonly ca?: Buffer;
  /** PEM client certificate and its key, for mutual TLS. */
  readonly cert?: Buffer;
  readonly key?: Buffer;
}

/** Credentials trusting `files.ca` (and presenting `cert` and `key`, when given). */
export function tlsCredentials(files: TlsFiles): ChannelCredentials {
  return new TlsCredentials(createSecureContext(files));
}

/**
 * What a connection to `target` checks the server's certificate against and sends as its
 * server name: the host of the target, or of `grpc.http_connect_target` when grpc-js goes
 * through an HTTP proxy (`grpc_proxy`, `https_proxy`), whose own host is not the server's; or
 * `grpc.ssl_target_name_override` when set. No server name for an IP address.
 */
function tlsNamesOf(
  target: experimental.GrpcUri,
  options: ChannelOptions,
): { readonly host: string; readonly checkedName: string; readonly servername?: string } {
  const connectTarget = options['grpc.http_connect_target'];
  const authority = authorityOf(
    typeof connectTarget === 'string' ? (parseUri(connectTarget) ?? target) : target,
  );
  const host = experimental.splitHostPort(authority)?.host ?? authority;
  const override = options['grpc.ssl_target_name_override'];
  const checkedName = typeof override === 'string' && override !== '' ? override : host;
  return isIP(checkedName) ? { host, checkedName } : { host, checkedName, servername: checkedName };
}

class TlsCredentials extends ChannelCredentials {
  constructor(private readonly context: SecureContext) {
    super();
  }

  _isSecure(): boolean {
    return true;
  }

  _equals(other: ChannelCredentials): boolean {
    return other === this;
  }

  _createSecureConnector(
    target: experimental.GrpcUri,
    options: ChannelOptions,
    callCredentials = CallCredentials.createEmpty(),
  ): experimental.SecureConnector {
    const { host, checkedName, servername } = tlsNamesOf(target, options);
    const connection: ConnectionOptions = {
      secureContext: this.context,
      host,
      ...(servername === undefined ? {} : { servername }),
      checkServerIdentity: (_host, certificate) => checkServerIdentity(checkedName, certificate),
      ALPNProtocols: ['h2'],
      ...(options['grpc-node.tls_enable_trace'] ? { enableTrace: true } : {}),
    };
    return {
      connect: (socket: Socket) =>
        new Promise((resolve, reject) => {
          const tlsSocket = connect({ ...connection, socket }, () => {
            if (tlsSocket.authorized) resolve({ socket: tlsSocket, secure: true });
            else reject(tlsSocket.authorizationError);
          });
          tlsSocket.on('error', reject);
        }),
      waitForReady: () => Promise.resolve(),
      getCallCredentials: () => callCredentials,
      destroy: () => {},
    };
  }
}

/** grpc-js's target URI grammar (uri-parser.ts), which `experimental` does not export. */
const URI = /^(?:([A-Za-z0-9+.-]+):)?(?:\/\/([^/]*)\/)?(.+)$/;

function parseUri(text: string): experimental.GrpcUri | undefined {
  const match = URI.exec(text);
  if (match === null) return undefined;
  return { scheme: match[1], authority: match[2], path: match[3]! };
}

/** The authority grpc-js's resolver of the target's scheme gives it (`getDefaultAuthority`). */
function authorityOf(target: experimental.GrpcUri): string {
  switch (target.scheme) {
    case 'unix':
    case 'unix-abstract':
      return 'localhost';
    case 'ipv4':
    case 'ipv6':
      return target.path.split(',')[0]!;
    default:
      return target.path.replace(/^\//, '');
  }
}
