// `shameless put MODEL VALUES`: the gem's upsert with values given as JSON.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { type Command, Option } from 'commander';
import { BODY_FORMS, bodyFromJson } from './bodyJson.js';
import { cellToJson } from './cellJson.js';
import { runClientCommand } from './clientCommand.js';
import { addConnectionOptions } from './connection.js';
import { stringifyExactJson } from './exactJson.js';

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
          'JSON object, or - to read it from stdin, in the forms `get` prints a body in, so that a printed ' +
          'body can be put back as it was; each value goes in its smallest format. Prints {"uuid", ' +
          '"created", "base"} as a JSON line.\n\n' +
          `Bodies: ${BODY_FORMS} A $timestamp must be the instant its $base64 holds, and a $map must not ` +
          'repeat a key.\n\n' +
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
      const text = valuesText === '-' ? readFileSync(0, 'utf8') : valuesText;
      const response = await connection.unary(connection.client.put, {
        model,
        values: bodyFromJson(text, '<values>'),
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
