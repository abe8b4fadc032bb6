// A unary call whose client does not read its response: plain HTTP/2 (a gRPC client always
// reads), so that a test can hold a response on the server's side of the flow-control window
// and then take it, or walk away.
import http2 from 'node:http2';

export interface UnreadCall {
  /** Reads the response to its end: the grpc-status it ended with. */
  read(): Promise<string>;
  /** Resets the stream without reading it, as a client that gives up does. */
  cancel(): void;
}

/** Sends `request` (an encoded request message) to `path` (`/package.Service/Method`). */
export function sendUnread(address: string, path: string, request: Uint8Array): UnreadCall {
  const session = http2.connect(`http://${address}`);
  session.on('error', () => {}); // a reset session, at the end
  const stream = session.request({
    ':method': 'POST',
    ':path': path,
    'content-type': 'application/grpc',
    te: 'trailers',
  });
  stream.on('error', () => {}); // the cancel's own reset
  const frame = Buffer.alloc(5 + request.length);
  frame.writeUInt32BE(request.length, 1);
  frame.set(request, 5);
  stream.end(frame);
  stream.pause();
  return {
    read: () =>
      new Promise((resolve, reject) => {
        let code = '';
        stream.on('trailers', (trailers) => (code = String(trailers['grpc-status'])));
        stream.on('end', () => {
          session.close();
          resolve(code);
        });
        stream.on('error', reject);
        stream.on('data', () => {});
        stream.resume();
      }),
    cancel: () => {
      stream.close(http2.constants.NGHTTP2_CANCEL);
      session.close();
    },
  };
}
