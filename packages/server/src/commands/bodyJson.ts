// Cell bodies as the CLI's JSON, both ways and exactly: what `get`, `where` and `tail` print,
// `put` takes back as the same MessagePack values. JSON has integers, other numbers, strings,
// arrays and objects with string keys; a body may hold more (a float whose value is whole, a
// binary, an extension type, a map with integer keys), and each such value is printed as an
// object of `$` keys (BODY_FORMS below, also in get's and put's --help and in docs/cli.md). A
// map whose own keys would read as one of those forms is printed as {"$map": [...]}, so that
// no printed object means two things.
//
// Not kept: the width of a value's format (put writes each in its smallest, as the SDK and
// Ruby's msgpack do, so a float32 comes back a float64 of the same value), and the bytes of a
// string that are not UTF-8 (read as U+FFFD). A map that repeats a key is printed with each
// entry, but put refuses it: the writer takes a Map, which holds a key once.
import {
  MalformedMessagePack,
  MessagePackExtension,
  MessagePackFloat,
  type MessagePackReadOptions,
  MessagePackTooDeep,
  TIMESTAMP_TYPE,
  UnencodableValueError,
  encodeMessagePack,
  isPlainObject,
  isStackOverflow,
  readMessagePack,
  readTimestamp,
  setOwnKey,
} from '@shameless/proto';
import { JsonNumber, JsonSyntaxError, exactNumber, parseExactJson } from './exactJson.js';
import { UsageError } from './usageError.js';

/** The forms, for --help. */
export const BODY_FORMS =
  'Integers are JSON integers, exact to 64 bits; a float has a fraction or an exponent ' +
  '(2.0, -0.0, 1e+300), or is {"$float": "NaN"} ("Infinity", "-Infinity"). A binary is ' +
  '{"$base64": "AAE="}; an extension value {"$ext": 5, "$base64": "AAE="}, to which a ' +
  'timestamp (ext -1) adds "$timestamp": "2026-11-23T16:49:31.123456789Z" (UTC, to the ' +
  'nanosecond). A map that a JSON object cannot hold (a key that is not a string, a key ' +
  'repeated, or a key $base64, $ext, $float, $map or $timestamp) is {"$map": [[KEY, VALUE], ...]}.';

const FORM_KEYS: ReadonlySet<string> = new Set(['$base64', '$ext', '$float', '$map', '$timestamp']);

/** Floats and extensions read for printing; see the file comment. */
const PRINTED: MessagePackReadOptions = {
  float: (value) =>
    Number.isFinite(value) ? new JsonNumber(floatLiteral(value)) : { $float: String(value) },
  extension: (type, data) => {
    const printed = { $ext: type, $base64: data.toString('base64') };
    const date = type === TIMESTAMP_TYPE ? timestampText(data) : undefined;
    return date === undefined ? printed : { ...printed, $timestamp: date };
  },
  map: (entries) => {
    const keys = new Set<string>();
    const plain = entries.every(
      ([key]) => typeof key === 'string' && !FORM_KEYS.has(key) && !keys.has(key) && keys.add(key),
    );
    if (!plain) return { $map: entries };
    const object: { [key: string]: unknown } = {};
    for (const [key, value] of entries) setOwnKey(object, key as string, value);
    return object;
  },
};

/** A stored body that is not MessagePack, or is nested deeper than the reader reads. */
export class UnreadableBody extends Error {}

/**
 * A body's JSON value, for stringifyExactJson. An empty blob reads as {}, as the SDK reads it.
 * `what` names the cell in the error for bytes that are not MessagePack.
 */
export function bodyToJson(bytes: Buffer, what: string): unknown {
  if (bytes.length === 0) return {};
  try {
    return readMessagePack(bytes, PRINTED);
  } catch (error) {
    if (error instanceof MessagePackTooDeep) {
      throw new UnreadableBody(`${what}: the body cannot be read: ${error.message}`);
    }
    if (!(error instanceof MalformedMessagePack)) throw error;
    throw new UnreadableBody(`${what}: the body is not valid MessagePack (${error.message})`);
  }
}

/** The shortest literal of a finite float that reads back as that float, and not as an integer. */
function floatLiteral(value: number): string {
  if (Object.is(value, -0)) return '-0.0';
  const literal = String(value);
  return /[.e]/.test(literal) ? literal : `${literal}.0`;
}

/**
 * A timestamp's instant in UTC to the nanosecond, or undefined when its data is of no
 * timestamp layout, its nanoseconds past 999999999, or its seconds beyond a Date's range.
 */
function timestampText(data: Buffer): string | undefined {
  const instant = readTimestamp(data);
  if (!instant || instant.nanoseconds > 999_999_999) return undefined;
  const date = new Date(Number(instant.seconds) * 1000);
  if (Number.isNaN(date.getTime())) return undefined;
  const nanoseconds = String(instant.nanoseconds).padStart(9, '0');
  return date.toISOString().replace(/\.000Z$/, `.${nanoseconds}Z`);
}

/**
 * `text`, a JSON object in the printed forms, as the MessagePack map put sends. `argument`
 * names where it came from in the UsageError of anything refused.
 */
export function bodyFromJson(text: string, argument: string): Buffer {
  try {
    return bodyOfJson(text, argument);
  } catch (error) {
    // Reading and writing recurse once per level: thousands of levels run out of stack, and
    // no server would take such a body anyway.
    if (!isStackOverflow(error)) throw error;
    throw new UsageError(
      `${argument}: nested too deep to read (${error.message}); a body may be maxBodyDepth ` +
        'levels deep at most (`shameless describe`)',
    );
  }
}

function bodyOfJson(text: string, argument: string): Buffer {
  let parsed: unknown;
  try {
    parsed = parseExactJson(text, (literal, integral) =>
      integral ? exactNumber(literal, true) : new MessagePackFloat(Number(literal)),
    );
  } catch (error) {
    if (error instanceof JsonSyntaxError) throw new UsageError(`${argument}: ${error.message}`);
    throw error;
  }
  const body = fromJson(parsed, argument);
  if (!(body instanceof Map) && !isPlainObject(body)) {
    throw new UsageError(`${argument}: must be a JSON object, e.g. {"hotel_id": 7}`);
  }
  try {
    return encodeMessagePack(body);
  } catch (error) {
    if (error instanceof UnencodableValueError) {
      throw new UsageError(`${argument}: ${error.message}`);
    }
    throw error;
  }
}

// MessagePack's integers: int64 and uint64. The writer refuses a bigint beyond them too, but
// only the CLI knows to advise a fraction or exponent for a float.
const MIN_INTEGER = -(2n ** 63n);
const MAX_INTEGER = 2n ** 64n - 1n;

/** A parsed JSON value with its forms made the values they stand for; `path` names it. */
function fromJson(value: unknown, path: string): unknown {
  if (typeof value === 'bigint' && (value < MIN_INTEGER || value > MAX_INTEGER)) {
    throw new UsageError(
      `${path}: ${value} is beyond MessagePack's 64-bit integers (${MIN_INTEGER} to ${MAX_INTEGER}); ` +
        'write it as a string, or with a fraction or exponent to store a float',
    );
  }
  if (Array.isArray(value)) return value.map((item, i) => fromJson(item, `${path}[${i}]`));
  if (!isPlainObject(value)) return value;
  const keys = Object.keys(value);
  if (keys.some((key) => FORM_KEYS.has(key))) return fromForm(value, keys, path);
  const object: { [key: string]: unknown } = {};
  for (const key of keys) setOwnKey(object, key, fromJson(value[key], `${path}.${key}`));
  return object;
}

/** The value an object with a form key stands for; anything but a form is refused. */
function fromForm(form: { [key: string]: unknown }, keys: string[], path: string): unknown {
  const shape = [...keys].sort().join(',');
  if (shape === '$base64') return base64(form.$base64, `${path}.$base64`);
  if (shape === '$base64,$ext' || shape === '$base64,$ext,$timestamp') {
    return extension(form, path);
  }
  if (shape === '$float') {
    const { $float: name } = form;
    if (name === 'NaN' || name === 'Infinity' || name === '-Infinity') {
      return new MessagePackFloat(Number(name));
    }
    throw new UsageError(
      `${path}.$float: must be "NaN", "Infinity" or "-Infinity"; write any other float as a number`,
    );
  }
  if (shape === '$map') return map(form.$map, `${path}.$map`);
  throw new UsageError(
    `${path}: an object with a key ${keys.filter((key) => FORM_KEYS.has(key)).join(', ')} ` +
      'must be exactly one of the forms of values JSON has no type for ({"$base64"}, ' +
      '{"$ext", "$base64"}, {"$float"}, {"$map"}; see --help); write a map with such keys as ' +
      '{"$map": [["$ext", 1], ...]}',
  );
}

function extension(form: { [key: string]: unknown }, path: string): MessagePackExtension {
  const type = form.$ext;
  if (typeof type !== 'number' || !Number.isInteger(type) || type < -128 || type > 127) {
    throw new UsageError(`${path}.$ext: must be an integer from -128 to 127 (the extension type)`);
  }
  const data = base64(form.$base64, `${path}.$base64`);
  if (form.$timestamp !== undefined) {
    const held = type === TIMESTAMP_TYPE ? timestampText(data) : undefined;
    if (form.$timestamp !== held) {
      throw new UsageError(
        `${path}.$timestamp: ${JSON.stringify(form.$timestamp)} is not the instant $base64 ` +
          `holds (${held ?? 'none: not a timestamp'}); the bytes are what is stored: change ` +
          '$base64, or leave $timestamp out',
      );
    }
  }
  return new MessagePackExtension(type, data);
}

function map(pairs: unknown, path: string): Map<unknown, unknown> {
  const entries = Array.isArray(pairs) ? pairs : [];
  if (!Array.isArray(pairs) || entries.some((pair) => !Array.isArray(pair) || pair.length !== 2)) {
    throw new UsageError(`${path}: must be an array of [key, value] pairs`);
  }
  const result = new Map<unknown, unknown>();
  entries.forEach(([key, value]: unknown[], i) => {
    const at = `${path}[${i}]`;
    const read = fromJson(key, `${at}[0]`);
    if (result.has(read)) {
      throw new UsageError(
        `${at}[0]: the map repeats key ${stringKey(key)}; readers keep only one of its values: give each key once`,
      );
    }
    result.set(read, fromJson(value, `${at}[1]`));
  });
  return result;
}

function stringKey(key: unknown): string {
  return typeof key === 'string' ? JSON.stringify(key) : String(key);
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

function base64(text: unknown, path: string): Buffer {
  if (typeof text !== 'string' || !BASE64.test(text)) {
    throw new UsageError(
      `${path}: must be the bytes in base64 (A-Z, a-z, 0-9, + and /, padded with =)`,
    );
  }
  return Buffer.from(text, 'base64');
}
