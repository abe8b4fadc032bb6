// The middleware layer that lets a Store call through only with a known bearer token whose role
// covers the RPC. Its messages name the token's name and the roles, never the token.
import { status } from '@grpc/grpc-js';
import type { Metadata } from '@grpc/grpc-js';
import type { CallContext } from '../call/callContext.js';
import { type ServerMiddleware, middlewareLayer } from '../call/middleware.js';
import { roleIncludes, roleNeeded } from './methodRoles.js';
import { StatusError } from '../call/statusError.js';
import type { TokenHolder, TokenSet } from './tokens.js';

const BEARER = /^Bearer +([^\s]+) *$/i;

export function authorization(tokens: TokenSet): ServerMiddleware {
  const admit = (context: CallContext) => {
    const holder = authenticate(tokens, context.metadata);
    const needed = roleNeeded(context.method);
    if (!roleIncludes(holder.role, needed)) {
      throw new StatusError(
        status.PERMISSION_DENIED,
        `${context.method} needs the ${needed} role; the token "${holder.name}" has the ${holder.role} role`,
      );
    }
  };
  return middlewareLayer(
    async function* (request, context, next) {
      admit(context);
      yield* next(request, context);
    },
    async (request, context, next, deliver) => {
      admit(context);
      return next(request, context, deliver);
    },
  );
}

function authenticate(tokens: TokenSet, metadata: Metadata): TokenHolder {
  const values = metadata.get('authorization');
  if (values.length === 0) {
    throw new StatusError(
      status.UNAUTHENTICATED,
      'no token: this server needs the metadata "authorization: Bearer <token>"',
    );
  }
  const match = values.length === 1 && typeof values[0] === 'string' && BEARER.exec(values[0]);
  if (!match) {
    throw new StatusError(
      status.UNAUTHENTICATED,
      'malformed authorization metadata: send exactly one "authorization: Bearer <token>"',
    );
  }
  const holder = tokens.holderOf(match[1]!);
  if (!holder) {
    throw new StatusError(
      status.UNAUTHENTICATED,
      "unknown token: it is not in the server's tokens file (was it rotated?)",
    );
  }
  return holder;
}
