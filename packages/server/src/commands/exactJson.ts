// JSON with exact 64-bit integers. JSON.parse reads 9007199254740993 as ...992, and
// JSON.stringify refuses bigints; cell bodies and ids hold such integers, so the CLI reads an
// integer literal past 2^53 as a bigint and prints a bigint as a bare JSON number. A number's
// literal also tells a float from an integer (2.0 from 2), which a JS number cannot: a reader
// that needs it gets the literal, and a writer gives a JsonNumber.
import { setOwnKey } from '@shameless/proto';

/** Malformed JSON; the message says where. */
export class JsonSyntaxError extends Error {}

/** A number printed as this literal: a float whose value is whole prints as `2.0`, not `2`. */
export class JsonNumber {
  constructor(readonly literal: string) {}
}

/**
 * A number literal as a value: an integer beyond ±(2^53 - 1) a bigint, any other a number (-0
 * as an integer is 0). `integral`: the literal has neither fraction nor exponent.
 */
export function exactNumber(literal: string, integral: boolean): number | bigint {
  const number = Number(literal);
  if (!integral) return number;
  return Number.isSafeInteger(number) ? number + 0 : BigInt(literal);
}

const NUMBER = /-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y;
const LITERALS: [string, unknown][] = [
  ['true', true],
  ['false', false],
  ['null', null],
];

/** Parses JSON, each number literal read by `number` (by default {@link exactNumber}). */
export function parseExactJson(
  text: string,
  number: (literal: string, integral: boolean) => unknown = exactNumber,
): unknown {
  let position = 0;
  const fail = (expected: string): never => {
    const found = position < text.length ? JSON.stringify(text[position]) : 'the end';
    throw new JsonSyntaxError(`expected ${expected} at character ${position + 1}, found ${found}`);
  };
  const skipSpace = () => {
    while (position < text.length && ' \t\n\r'.includes(text[position]!)) position += 1;
  };
  const expect = (char: string) => {
    skipSpace();
    if (text[position] !== char) fail(JSON.stringify(char));
    position += 1;
  };
  const string = (): string => {
    const start = position;
    if (text[position] !== '"') fail('a string');
    position += 1;
    while (position < text.length && text[position] !== '"') {
      position += text[position] === '\\' ? 2 : 1;
    }
    if (position >= text.length) fail('the closing quote of a string');
    position += 1;
    try {
      return JSON.parse(text.slice(start, position)) as string;
    } catch {
      position = start;
      return fail('a valid string');
    }
  };
  const value = (): unknown => {
    skipSpace();
    const char = text[position];
    if (char === '{') {
      position += 1;
      const object: Record<string, unknown> = {};
      skipSpace();
      if (text[position] === '}') {
        position += 1;
        return object;
      }
      for (;;) {
        skipSpace();
        const key = string();
        expect(':');
        setOwnKey(object, key, value());
        skipSpace();
        if (text[position] === '}') break;
        expect(',');
      }
      position += 1;
      return object;
    }
    if (char === '[') {
      position += 1;
      const array: unknown[] = [];
      skipSpace();
      if (text[position] === ']') {
        position += 1;
        return array;
      }
      for (;;) {
        array.push(value());
        skipSpace();
        if (text[position] === ']') break;
        expect(',');
      }
      position += 1;
      return array;
    }
    if (char === '"') return string();
    for (const [word, literal] of LITERALS) {
      if (text.startsWith(word, position)) {
        position += word.length;
        return literal;
      }
    }
    NUMBER.lastIndex = position;
    const match = NUMBER.exec(text);
    if (!match) return fail('a JSON value');
    position += match[0].length;
    return number(match[0], match[1] === undefined && match[2] === undefined);
  };
  const result = value();
  skipSpace();
  if (position < text.length) fail('the end of the JSON text');
  return result;
}

/**
 * JSON text of a value holding bigints (printed as bare integers), JsonNumbers (their
 * literal), dates (ISO strings) and binaries ({"$base64": "..."}), on one line unless `indent`
 * is given. With `indent`, the values below the first `lineDepth` levels are each on one line:
 * 2 prints a table's rows (an object of arrays of objects) one per line.
 */
export function stringifyExactJson(value: unknown, indent = 0, lineDepth = Infinity): string {
  const write = (item: unknown, depth: number): string => {
    if (typeof item === 'bigint') return item.toString();
    if (item instanceof JsonNumber) return item.literal;
    if (item instanceof Date) return JSON.stringify(item.toISOString());
    if (item instanceof Uint8Array) {
      return write({ $base64: Buffer.from(item).toString('base64') }, depth);
    }
    if (item === undefined || typeof item === 'function' || typeof item === 'symbol') {
      return 'null';
    }
    if (typeof item !== 'object' || item === null) return JSON.stringify(item);
    const entries: [string | undefined, unknown][] = Array.isArray(item)
      ? item.map((element): [undefined, unknown] => [undefined, element])
      : Object.entries(item).filter(([, field]) => field !== undefined);
    const [open, close] = Array.isArray(item) ? ['[', ']'] : ['{', '}'];
    if (entries.length === 0) return open + close;
    const lines = indent > 0 && depth < lineDepth;
    const pad = lines ? '\n' + ' '.repeat(indent * (depth + 1)) : '';
    const parts = entries.map(
      ([key, field]) =>
        (key === undefined ? '' : JSON.stringify(key) + (lines ? ': ' : ':')) +
        write(field, depth + 1),
    );
    const end = lines ? '\n' + ' '.repeat(indent * depth) : '';
    return open + pad + parts.join(',' + pad) + end + close;
  };
  return write(value, 0);
}
