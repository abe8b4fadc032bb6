// How every client command runs: connect with the common options, do the work, and turn any
// failure into a message on stderr (the gRPC status, its details and what to do next) and a
// non-zero exit code; never a stack trace.
import { type ServiceError, status } from '@grpc/grpc-js';
import type { Command } from 'commander';
import { type ConnectionOptionValues, StoreConnection } from './connection.js';
import { CLIENT_EXIT, UsageError } from './usageError.js';

/** Runs `work` against the server the command's options name; sets the exit code. */
export async function runClientCommand(
  command: Command,
  work: (connection: StoreConnection) => Promise<void>,
): Promise<void> {
  const options = command.opts<ConnectionOptionValues>();
  let connection: StoreConnection | undefined;
  try {
    connection = new StoreConnection(
      options,
      command.getOptionValueSource('deadlineMs') !== 'default',
    );
    await work(connection);
  } catch (error) {
    for (const line of failureLines(error, options)) console.error(line);
    process.exitCode = error instanceof UsageError ? CLIENT_EXIT.usage : CLIENT_EXIT.failed;
  } finally {
    connection?.close();
  }
}

function isServiceError(error: unknown): error is ServiceError {
  return (
    error instanceof Error &&
    typeof (error as Partial<ServiceError>).code === 'number' &&
    typeof (error as Partial<ServiceError>).details === 'string'
  );
}

function failureLines(error: unknown, options: ConnectionOptionValues): string[] {
  if (error instanceof UsageError) return [`shameless: ${error.message}`];
  if (!isServiceError(error)) return [`shameless: ${(error as Error).message ?? String(error)}`];
  const name = status[error.code] ?? `status ${error.code}`;
  const field = error.metadata?.get('shameless-field')[0];
  const lines = [`shameless: ${name}: ${error.details.trim() || '(no details)'}`];
  const hint = hintFor(error.code, options, typeof field === 'string' ? field : undefined);
  if (hint) lines.push(`hint: ${hint}`);
  return lines;
}

function hintFor(
  code: status,
  options: ConnectionOptionValues,
  field: string | undefined,
): string | undefined {
  switch (code) {
    case status.UNAVAILABLE:
      return (
        `is a server running at ${options.address}? Start one with \`shameless serve\`, or point ` +
        '--address (or SHAMELESS_ADDRESS) at it; if it is running, one of its MySQL partitions may be down'
      );
    case status.DEADLINE_EXCEEDED:
      return `the call took longer than --deadline-ms ${options.deadlineMs}; raise it, or narrow the request`;
    case status.UNAUTHENTICATED:
    case status.PERMISSION_DENIED:
      return 'pass a token the server accepts with --token (or SHAMELESS_TOKEN)';
    case status.INVALID_ARGUMENT:
      return field
        ? `fix the request field ${field}; \`shameless <command> --help\` shows the forms accepted`
        : '`shameless <command> --help` shows the forms accepted';
    case status.NOT_FOUND:
      return '`shameless describe` lists the models, their indices and cells';
    case status.FAILED_PRECONDITION:
      return '`shameless describe` shows the stored definition; indices of a defined model cannot change';
    case status.RESOURCE_EXHAUSTED:
      return 'the server is overloaded; retry after a moment';
    case status.UNIMPLEMENTED:
      return `is ${options.address} a Shameless server of this version?`;
    case status.INTERNAL:
      return 'a server bug; the server log has the details';
    default:
      return undefined;
  }
}
