// Read consistency and the session token on every attempt: a read carries the consistency it
// asks for (the call's, else the transport's default) and, for `session`, the session's token;
// a write's answer brings back a token, merged into the session before the caller sees the
// answer, so that the caller's next read, through whichever server, sees the write.

import { type ClientMiddleware, passingLayer, withOptions } from '../call/compose.js';
import {
  type Consistency,
  SESSION_TOKEN_KEY,
  type SessionToken,
  consistencyMetadata,
} from '../call/consistency.js';

/** Methods a replica may answer (the server's list; others read the primary). */
const READS = new Set([
  'getCell',
  'getCells',
  'previous',
  'where',
  'whereMany',
  'fetchLatestCells',
  'each',
]);
/** Methods whose answers carry a session token. */
const WRITES = new Set(['put', 'putMany', 'writeCell', 'writeCells', 'defineModel']);

export interface SessionSettings {
  readonly session: SessionToken;
  /** The consistency of a read that asks for none. */
  readonly consistency: Consistency;
}

export function sessionLayer({ session, consistency }: SessionSettings): ClientMiddleware {
  const observe = (trailers: Readonly<Record<string, string>>) => {
    const token = trailers[SESSION_TOKEN_KEY];
    if (token !== undefined) session.observe(token);
  };
  return passingLayer((call, options, next) => {
    if (WRITES.has(call.method)) return next(call, withOptions(options, { onTrailers: observe }));
    if (!READS.has(call.method)) return next(call, options);
    const metadata = consistencyMetadata(options.consistency ?? consistency, session.current);
    return next(
      call,
      withOptions(options, {
        metadata: options.metadata === undefined ? metadata : { ...options.metadata, ...metadata },
      }),
    );
  });
}
