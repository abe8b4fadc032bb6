// `where` conditions ({ hotel_id: 1, check_in_date: { gte: '2026-12-01' } }) -> the wire's
// typed Condition list, checked against the index so that a mistake fails before any call,
// naming the field.

import { Operator, type Condition as WireCondition, type IndexValue } from '@shameless/proto';
import { InvalidArgumentError } from '../transport/index.js';
import { toWireInt64 } from './integers.js';
import type { FieldType, IndexSchema, Operators } from './schema.js';

const OPERATORS: Readonly<Record<keyof Operators<unknown>, Operator>> = {
  eq: Operator.OPERATOR_EQ,
  ne: Operator.OPERATOR_NE,
  lt: Operator.OPERATOR_LT,
  lte: Operator.OPERATOR_LE,
  gt: Operator.OPERATOR_GT,
  gte: Operator.OPERATOR_GE,
  in: Operator.OPERATOR_IN,
  between: Operator.OPERATOR_BETWEEN,
};

/**
 * Converts the conditions of a `where` on `index` (named `indexName` of model `model`) into
 * the wire's conditions. Keys whose value is `undefined` are ignored.
 */
export function toWireConditions(
  model: string,
  indexName: string,
  index: IndexSchema,
  conditions: { readonly [field: string]: unknown },
): WireCondition[] {
  const where = `where on index ${indexName} of ${model}`;
  const shardValue = conditions[index.shardOn];
  if (typeof shardValue !== 'number' && typeof shardValue !== 'bigint') {
    throw new InvalidArgumentError(
      `${where}: ${index.shardOn} = <integer> is required (it picks the index shard)`,
    );
  }
  const wire: WireCondition[] = [];
  for (const [field, condition] of Object.entries(conditions)) {
    if (condition === undefined) continue;
    const type = Object.hasOwn(index.fields, field) ? index.fields[field] : undefined;
    if (type === undefined) {
      throw new InvalidArgumentError(
        `${where}: ${field} is not a field of the index (${Object.keys(index.fields).join(', ')})`,
      );
    }
    const value = (v: unknown): IndexValue => toIndexValue(where, field, type, v);
    if (!isOperators(condition)) {
      wire.push({ field, op: Operator.OPERATOR_EQ, values: [value(condition)] });
      continue;
    }
    const entries = Object.entries(condition).filter(([, operand]) => operand !== undefined);
    if (entries.length === 0) {
      throw new InvalidArgumentError(`${where}: the condition on ${field} has no operator`);
    }
    for (const [name, operand] of entries) {
      const op = Object.hasOwn(OPERATORS, name)
        ? OPERATORS[name as keyof Operators<unknown>]
        : undefined;
      if (op === undefined) {
        throw new InvalidArgumentError(
          `${where}: unknown operator ${name} on ${field}; use ${Object.keys(OPERATORS).join(', ')}`,
        );
      }
      wire.push({ field, op, values: operandValues(where, field, name, operand).map(value) });
    }
  }
  return wire;
}

function isOperators(condition: unknown): condition is Operators<unknown> {
  return typeof condition === 'object' && condition !== null && !Array.isArray(condition);
}

function operandValues(where: string, field: string, op: string, operand: unknown): unknown[] {
  if (op === 'in') {
    if (!Array.isArray(operand) || operand.length === 0) {
      throw new InvalidArgumentError(`${where}: ${field} in: needs a non-empty array`);
    }
    return operand;
  }
  if (op === 'between') {
    if (!Array.isArray(operand) || operand.length !== 2) {
      throw new InvalidArgumentError(`${where}: ${field} between: needs [low, high]`);
    }
    return operand;
  }
  return [operand];
}

function toIndexValue(where: string, field: string, type: FieldType, value: unknown): IndexValue {
  if (type === 'integer') {
    if (typeof value === 'number' || typeof value === 'bigint') {
      return { kind: { $case: 'integer', integer: toWireInt64(value, `${where}: ${field}`) } };
    }
  } else if (typeof value === 'string') {
    return { kind: { $case: 'string', string: value } };
  }
  throw new InvalidArgumentError(
    `${where}: ${field} is ${type === 'integer' ? 'an integer' : 'a string'} field, got ${describe(value)}`,
  );
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return `${typeof value} ${typeof value === 'string' ? JSON.stringify(value) : String(value)}`;
}
