// Where conditions as typed on a command line, e.g. `hotel_id=7`, `date>=2026-01-01`,
// `room_type in single,double`, `price between 100,200`, typed by the index's field types.
import {
  type Condition,
  FieldType,
  type IndexDefinition,
  type IndexValue,
  Operator,
} from '@shameless/proto';
import { parseExactJson } from './exactJson.js';
import { bigintArgument } from './integerArgument.js';
import { UsageError } from './usageError.js';

export const CONDITION_FORMS =
  'FIELD=V, FIELD!=V, FIELD<V, FIELD<=V, FIELD>V, FIELD>=V, "FIELD in V1,V2,..." and ' +
  '"FIELD between LOW,HIGH" (both inclusive); a list may be a JSON array instead (["a,b", "c"])';

const COMPARISON = /^([a-z][a-z0-9_]*)\s*(<=|>=|!=|=|<|>)\s*(.*)$/s;
const LIST = /^([a-z][a-z0-9_]*)\s+(in|between)\s+(.*)$/is;
const OPERATORS: Record<string, Operator> = {
  '=': Operator.OPERATOR_EQ,
  '!=': Operator.OPERATOR_NE,
  '<': Operator.OPERATOR_LT,
  '<=': Operator.OPERATOR_LE,
  '>': Operator.OPERATOR_GT,
  '>=': Operator.OPERATOR_GE,
  in: Operator.OPERATOR_IN,
  between: Operator.OPERATOR_BETWEEN,
};

/** Each condition text as a Condition whose values are typed as `index` types its fields. */
export function parseConditions(texts: readonly string[], index: IndexDefinition): Condition[] {
  return texts.map((text) => {
    const list = LIST.exec(text.trim());
    const match = list ?? COMPARISON.exec(text.trim());
    if (!match) {
      throw new UsageError(`condition ${JSON.stringify(text)}: expected one of ${CONDITION_FORMS}`);
    }
    const [, fieldName, operator, valueText] = match as unknown as [string, string, string, string];
    const field = index.fields.find((candidate) => candidate.name === fieldName);
    if (!field) {
      throw new UsageError(
        `condition ${JSON.stringify(text)}: ${fieldName} is not a field of index ${index.name || 'primary'}; ` +
          `its fields: ${index.fields.map((candidate) => candidate.name).join(', ')}`,
      );
    }
    const values = list ? listValues(valueText, text) : [valueText];
    return {
      field: fieldName,
      op: OPERATORS[operator.toLowerCase()]!,
      values: values.map((value) => typedValue(value, field.type, fieldName)),
    };
  });
}

function listValues(text: string, condition: string): string[] {
  if (!text.trim().startsWith('[')) return text.split(',').map((value) => value.trim());
  let parsed: unknown;
  try {
    // Exact: JSON.parse would read 9007199254740993 as ...992 and find another record.
    parsed = parseExactJson(text);
  } catch (error) {
    throw new UsageError(`condition ${JSON.stringify(condition)}: ${(error as Error).message}`);
  }
  if (!Array.isArray(parsed)) {
    throw new UsageError(`condition ${JSON.stringify(condition)}: expected a JSON array`);
  }
  // Anything else would be sent as its String(): "null", "[object Object]".
  if (!parsed.every((value) => ['string', 'number', 'bigint'].includes(typeof value))) {
    throw new UsageError(
      `condition ${JSON.stringify(condition)}: expected strings or integers in the JSON array`,
    );
  }
  return parsed.map(String);
}

function typedValue(text: string, type: FieldType, field: string): IndexValue {
  return type === FieldType.FIELD_TYPE_INTEGER
    ? { kind: { $case: 'integer', integer: bigintArgument(text, `condition on ${field}`) } }
    : { kind: { $case: 'string', string: text } };
}
