// The text of a query with its values inlined, as mysql2 sends it (its `queryFormat`): mysql2's
// own formatting, except that long Buffers (cell bodies) go into the text's bytes as hex in one
// copy each. Built by string concatenation, as mysql2 does, a large write's text is a rope of
// thousands of pieces, which V8 flattens before mysql2 can encode it: a transaction writing 500
// cells of 1 KB took 7.6–10 ms of CPU to format and encode that way, 1.9–2.5 ms this way; eight
// cells 35 µs against 25 (docs/performance.md, "A write's text").
import mysql, { type SqlValue } from 'mysql2';

/** Shorter Buffers (a binary index value, say) are left to mysql2: splicing pays for bodies. */
const MIN_SPLICED_BYTES = 256;

/**
 * The query's text with `values` in place of its `?` placeholders: the same string as mysql2's
 * `format(sql, values, false, timezone)`.
 */
export function formatQuery(
  sql: string,
  values: SqlValue | SqlValue[] | undefined,
  timezone?: string,
): string {
  if (!Array.isArray(values) || values.length === 0) {
    return mysql.format(sql, values, false, timezone);
  }
  const bodies: Buffer[] = [];
  const marked = markBodies(values, bodies);
  if (bodies.length === 0) return mysql.format(sql, values, false, timezone);
  const text = mysql.format(sql, marked, false, timezone);
  return spliceBodies(text, bodies) ?? mysql.format(sql, values, false, timezone);
}

/**
 * Stands for a body in the formatted text: its index between two NULs. No other part of the text
 * holds a NUL (mysql2 escapes it in strings and Buffers, and no statement has one), so the
 * marks are found again by splitting at NULs.
 */
class BodyMark {
  constructor(readonly index: number) {}

  toSqlString(): string {
    return `\0${this.index}\0`;
  }
}

/** `values` with each long Buffer, at any depth of the lists, replaced by its mark. */
function markBodies(values: readonly SqlValue[], bodies: Buffer[]): SqlValue[] {
  const marked = new Array<SqlValue>(values.length);
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    if (Buffer.isBuffer(value) && value.length >= MIN_SPLICED_BYTES) {
      marked[i] = new BodyMark(bodies.length);
      bodies.push(value);
    } else if (Array.isArray(value)) {
      marked[i] = markBodies(value, bodies);
    } else {
      marked[i] = value;
    }
  }
  return marked;
}

/** Beyond Latin-1: such a character takes more than one byte of the builder's bytes. */
const BEYOND_LATIN1 = /[\u0100-\uffff]/;
const [QUOTE, X] = [0x27, 0x58];

/**
 * The formatted text with each mark replaced by its body as mysql2 writes a Buffer (`X'…'`, hex
 * in lower case), built as bytes and read back as one flat string. Undefined, for mysql2's own
 * formatting instead, when the text has a character beyond Latin-1 (a Latin-1 character is one
 * byte there and back) or has a NUL besides the marks'.
 */
function spliceBodies(text: string, bodies: readonly Buffer[]): string | undefined {
  const parts = text.split('\0');
  if (parts.length !== 2 * bodies.length + 1 || BEYOND_LATIN1.test(text)) return undefined;
  let length = 0;
  for (let i = 0; i < parts.length; i += 2) length += parts[i]!.length;
  for (const body of bodies) length += 2 * body.length + 3;
  const bytes = Buffer.allocUnsafe(length);
  let at = bytes.write(parts[0]!, 0, 'latin1');
  for (let i = 1; i < parts.length; i += 2) {
    // Marks come in the order of the values, mysql2's order of writing them.
    const body = bodies[(i - 1) / 2]!;
    bytes[at++] = X;
    bytes[at++] = QUOTE;
    at += bytes.write(body.toString('hex'), at, 'latin1');
    bytes[at++] = QUOTE;
    at += bytes.write(parts[i + 1]!, at, 'latin1');
  }
  return bytes.toString('latin1', 0, at);
}
