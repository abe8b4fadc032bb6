// How every client command runs: connect with the common options, do the work, and turn any
// failure into a message on stderr (the gRPC status, its details and what to do next) and a
// non-zero exit code; never a stack trace.
import { type ServiceError, status } from '@grpc/grpc-js';
import type { Command } from 'commander';
import { type ConnectionOptionValues, StoreConnection, usesTls } from './connection.js';
import { type HintContext, hintFor } from './failureHints.js';
import { withoutOpensslNoise } from './tlsFailure.js';
import { CLIENT_EXIT, UsageError } from './usageError.js';

/**
 * What a command knows better than the common hints: the hint for a failure, or undefined for
 * the common one (e.g. a NOT_FOUND of a consumer group, not of a model).
 */
export type CommandHint = (error: ServiceError, context: HintContext) => string | undefined;

/**
 * Runs `work` against the server the command's options name; sets the exit code.
 * `argumentOfField` names the command's argument behind each request field, so that a field the
 * server refuses is named as the user typed it; `hint` comes before the common hints.
 */
export async function runClientCommand(
  command: Command,
  argumentOfField: Readonly<Record<string, string>>,
  work: (connection: StoreConnection) => Promise<void>,
  hint?: CommandHint,
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
    const context = {
      command: commandPath(command),
      address: options.address,
      deadlineMs: options.deadlineMs,
      tls: usesTls(options),
      argumentOfField,
    };
    for (const line of failureLines(error, context, hint)) console.error(line);
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

/** The command as typed after `shameless`: `where`, `group reset`. */
function commandPath(command: Command): string {
  const names: string[] = [];
  for (let at: Command | null = command; at?.parent; at = at.parent) names.unshift(at.name());
  return names.join(' ');
}

function failureLines(error: unknown, context: HintContext, commandHint?: CommandHint): string[] {
  if (error instanceof UsageError) return [`shameless: ${error.message}`];
  if (!isServiceError(error)) return [`shameless: ${(error as Error).message ?? String(error)}`];
  const name = status[error.code] ?? `status ${error.code}`;
  const details = withoutOpensslNoise(error.details).trim() || '(no details)';
  const hint = commandHint?.(error, context) ?? hintFor(error, context);
  return [`shameless: ${name}: ${details}`, ...(hint ? [`hint: ${hint}`] : [])];
}
