// TLS channel credentials that send no server name (SNI) when the address is an IP. grpc-js
// always sets the TLS server name to the host it dials, even an IP address, which RFC 6066
// forbids and for which Node prints a DEP0123 warning on every command. This is grpc-js's own
// secure connector (a TLS socket over its TCP socket, ALPN h2, the peer verified) less that.
import { type Socket, isIP } from 'node:net';
import { type SecureContext, connect, createSecureContext } from 'node:tls';
import {
  CallCredentials,
  type ChannelOptions,
  ChannelCredentials,
  experimental,
} from '@grpc/grpc-js';

export interface TlsFiles {
  /** PEM of the CAs to trust; the system's when absent. */
  ca?: Buffer;
  /** PEM client certificate and its key, for mutual TLS. */
  cert?: Buffer;
  key?: Buffer;
}

export function tlsCredentials(files: TlsFiles): ChannelCredentials {
  return new TlsCredentials(createSecureContext(files));
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
    _options: ChannelOptions,
    callCredentials = CallCredentials.createEmpty(),
  ): experimental.SecureConnector {
    // A dns: target's path is host:port; the host is what the certificate must name.
    const hostPort = target.path.replace(/^\//, '');
    const host = experimental.splitHostPort(hostPort)?.host ?? hostPort;
    return {
      connect: (socket: Socket) =>
        new Promise((resolve, reject) => {
          const tlsSocket = connect(
            {
              socket,
              secureContext: this.context,
              // Node checks the certificate against servername, else host: an IP SAN for an IP.
              host,
              servername: isIP(host) ? undefined : host,
              ALPNProtocols: ['h2'],
            },
            () => {
              if (tlsSocket.authorized) resolve({ socket: tlsSocket, secure: true });
              else reject(tlsSocket.authorizationError);
            },
          );
          tlsSocket.on('error', reject);
        }),
      waitForReady: () => Promise.resolve(),
      getCallCredentials: () => callCredentials,
      destroy: () => {},
    };
  }
}
