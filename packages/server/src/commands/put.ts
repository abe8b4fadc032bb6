// `shameless put MODEL VALUES`: the gem's upsert with values given as JSON.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { type Command, Option } from 'commander';
import { cellToJson, encodeJsonBody, parseJsonBody } from './cellJson.js';
import { runClientCommand } from './clientCommand.js';
import { addConnectionOptions } from './connection.js';
import { JsonSyntaxError, stringifyExactJson } from './exactJson.js';
import { UsageError } from './usageError.js';

/** Where each PutRequest field comes from, for the hint when the server refuses one. */
const ARGUMENT_OF_FIELD = {
  model: '<model>',
  values: '<values>',
  request_id: '--request-id',
};

export function registerPut(program: Command): void {
  const command = addConnectionOptions(
    program
      .command('put')
      .summary('create or update a record by its primary index values (Put)')
      .description(
        'Put: finds the record by the primary index fields in VALUES and appends a new base version ' +
          'merged with the other values, or creates the record (every index field required). VALUES is a ' +
          'JSON object, or - to read it from stdin; integers past 2^53 are kept exact, and a number with a ' +
          'fraction or exponent (1e20) is a float, unless a whole number within 32 bits. Prints {"uuid", ' +
          '"created", "base"} as a JSON line.\n\n' +
          'Example: shameless put cli_rate \'{"hotel_id": 7, "room_type": "double", "price": 120}\'',
      )
      .argument('<model>', 'the model name')
      .argument('<values>', 'a JSON object, or - for stdin')
      .addOption(
        new Option(
          '--request-id <id>',
          'idempotency key: the same id again creates no second version (random when omitted)',
        ),
      ),
  );
  command.action((model: string, valuesText: string, options: { requestId?: string }) =>
    runClientCommand(command, ARGUMENT_OF_FIELD, async (connection) => {
      const values = parseValues(valuesText === '-' ? readFileSync(0, 'utf8') : valuesText);
      const response = await connection.unary(connection.client.put, {
        model,
        values: encodeJsonBody(values, '<values>'),
        requestId: options.requestId ?? randomUUID(),
      });
      console.log(
        stringifyExactJson({
          uuid: response.uuid,
          created: response.created,
          base: response.base ? cellToJson(response.base) : null,
        }),
      );
    }),
  );
}

function parseValues(text: string): Record<string, unknown> {
  let values: unknown;
  try {
    values = parseJsonBody(text);
  } catch (error) {
    if (error instanceof JsonSyntaxError) throw new UsageError(`<values>: ${error.message}`);
    throw error;
  }
  if (typeof values !== 'object' || values === null || Array.isArray(values)) {
    throw new UsageError('<values>: must be a JSON object, e.g. {"hotel_id": 7}');
  }
  return values as Record<string, unknown>;
}
