// What to do next after a failed call, by its gRPC status: the hint line the client commands
// print under the status and details.
import { type ServiceError, status } from '@grpc/grpc-js';
import { tlsFailureHint } from './tlsFailure.js';

/** What the hints may name: the command and its options as given. */
export interface HintContext {
  /** The command as typed after `shameless`, e.g. `where` or `group reset`. */
  command: string;
  address: string;
  deadlineMs: string;
  /** Whether the command asked for TLS. */
  tls: boolean;
  /** The command's argument or flag behind each top-level request field, e.g. limit: --page-size. */
  argumentOfField: Readonly<Record<string, string>>;
}

export function hintFor(error: ServiceError, context: HintContext): string | undefined {
  const field = error.metadata?.get('shameless-field')[0];
  switch (error.code) {
    case status.UNAVAILABLE:
      return (
        tlsFailureHint(error.details, context.address, context.tls) ??
        `is a server running at ${context.address}? Start one with \`shameless serve\`, or point ` +
          '--address (or SHAMELESS_ADDRESS) at it; if it is running, one of its MySQL partitions may be down'
      );
    case status.DEADLINE_EXCEEDED:
      return `the call took longer than --deadline-ms ${context.deadlineMs}; raise it, or narrow the request`;
    case status.UNAUTHENTICATED:
      return 'pass a token the server accepts with --token (or SHAMELESS_TOKEN)';
    case status.PERMISSION_DENIED:
      return roleHint(error.details);
    case status.INVALID_ARGUMENT: {
      const help = `\`shameless ${context.command} --help\` shows the forms accepted`;
      return typeof field === 'string' ? `${fixField(field, context)}; ${help}` : help;
    }
    case status.NOT_FOUND:
      return '`shameless describe` lists the models, their indices and cells';
    case status.FAILED_PRECONDITION:
      return '`shameless describe` shows the stored definition; indices of a defined model cannot change';
    case status.RESOURCE_EXHAUSTED:
      return messageSizeHint(error.details) ?? 'the server is overloaded; retry after a moment';
    case status.UNIMPLEMENTED:
      return `is ${context.address} a Shameless server of this version?`;
    case status.INTERNAL:
      return 'a server bug; the server log has the details';
    default:
      return undefined;
  }
}

/**
 * A known token whose role is too small: another token is needed, not the same one again. The
 * server's refusal names the role needed and the token's name (never the token).
 */
function roleHint(details: string): string {
  const match = /needs the (\w+) role; the token "([^"]*)"/.exec(details);
  return match
    ? `the token "${match[2]}" is known, but its role may not make this call: pass a token with ` +
        `the ${match[1]} role with --token (or SHAMELESS_TOKEN)`
    : 'pass a token whose role may make this call with --token (or SHAMELESS_TOKEN)';
}

/** The server names a request field (`limit`, `conditions[1].values`); the user typed a flag. */
function fixField(field: string, context: HintContext): string {
  const argument = context.argumentOfField[field.split(/[.[]/)[0]!];
  return argument
    ? `fix ${argument} (sent as the request field ${field})`
    : `fix the request field ${field}`;
}

/**
 * grpc-js's refusal of a message past the server's --max-message-bytes (the client takes any
 * size): "Received" is the request, "Sent" the server's answer. Retrying sends the same again.
 */
function messageSizeHint(details: string): string | undefined {
  // The server's own refusal of an answer it could not cut (a record whose cells alone exceed).
  if (/^the answer would exceed \d+ bytes/.test(details)) {
    return 'retrying cannot help: ask for less at once (fewer --cell, or a smaller --page-size)';
  }
  const match = /(Received|Sent) message larger than max \((\d+) vs\.? (\d+)\)/.exec(details);
  if (!match) return undefined;
  const [, direction, size, limit] = match as unknown as [string, string, string, string];
  const limitText = `${limit} bytes, the --max-message-bytes of \`shameless serve\``;
  return direction === 'Received'
    ? `the request (${size} bytes) is larger than the server accepts (${limitText}); a cell body ` +
        "may be at most the store's largest cell (maxCellBytes in `shameless describe`), so " +
        'retrying cannot help: send less'
    : `the answer (${size} bytes) is larger than the server sends (${limitText}); retrying ` +
        'cannot help: ask for less at once (a smaller --page-size or fewer --cell)';
}
