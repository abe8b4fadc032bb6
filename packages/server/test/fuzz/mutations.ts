// Byte-level mutations of an encoded protobuf message: cut short, bits flipped, bytes put in or
// taken out, a piece repeated, fields appended with any number and wire type, lengths that
// lie, varints longer than ten bytes. Each is plain data (positions in thousandths of the
// message), so a shrunk counterexample prints as what was done and replays on any length.
import fc from 'fast-check';

export type Mutation =
  | { readonly op: 'truncate'; readonly at: number }
  | { readonly op: 'flip'; readonly at: number; readonly bit: number }
  | { readonly op: 'set'; readonly at: number; readonly value: number }
  | { readonly op: 'insert'; readonly at: number; readonly bytes: readonly number[] }
  | { readonly op: 'delete'; readonly at: number; readonly length: number }
  | { readonly op: 'repeat'; readonly at: number; readonly length: number }
  | {
      readonly op: 'field';
      readonly number: number;
      readonly wireType: number;
      readonly payload: readonly number[];
      /** For wire type 2: the length the field claims, which may not be its payload's. */
      readonly claimed?: number;
    }
  | { readonly op: 'longVarint'; readonly number: number };

const at = fc.integer({ min: 0, max: 999 });
const someBytes = fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 1, maxLength: 8 });

export const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  at.map((position) => ({ op: 'truncate' as const, at: position })),
  fc.tuple(at, fc.integer({ min: 0, max: 7 })).map(([position, bit]) => ({
    op: 'flip' as const,
    at: position,
    bit,
  })),
  fc.tuple(at, fc.integer({ min: 0, max: 255 })).map(([position, value]) => ({
    op: 'set' as const,
    at: position,
    value,
  })),
  fc
    .tuple(at, someBytes)
    .map(([position, bytes]) => ({ op: 'insert' as const, at: position, bytes })),
  fc.tuple(at, fc.integer({ min: 1, max: 16 })).map(([position, length]) => ({
    op: 'delete' as const,
    at: position,
    length,
  })),
  fc.tuple(at, fc.integer({ min: 1, max: 64 })).map(([position, length]) => ({
    op: 'repeat' as const,
    at: position,
    length,
  })),
  fc
    .record({
      number: fc.oneof(
        fc.integer({ min: 1, max: 30 }),
        fc.constantFrom(0, 19_000, 2 ** 29 - 1, 2 ** 29),
      ),
      wireType: fc.integer({ min: 0, max: 7 }),
      payload: fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: 12 }),
      claimed: fc.option(fc.constantFrom(0, 1, 100, 2 ** 31 - 1, 2 ** 32 - 1), { nil: undefined }),
    })
    .map((field) => ({ op: 'field' as const, ...field })),
  fc.integer({ min: 1, max: 30 }).map((number) => ({ op: 'longVarint' as const, number })),
);

/** Most cases go unmutated (a well-formed message of odd values); a quarter get 1 to 3 mutations. */
export const mutations: fc.Arbitrary<readonly Mutation[]> = fc.oneof(
  { weight: 3, arbitrary: fc.constant<readonly Mutation[]>([]) },
  { weight: 1, arbitrary: fc.array(mutation, { minLength: 1, maxLength: 3 }) },
);

function varint(value: number): number[] {
  const bytes: number[] = [];
  let rest = BigInt(value);
  do {
    let next = Number(rest & 0x7fn);
    rest >>= 7n;
    if (rest > 0n) next |= 0x80;
    bytes.push(next);
  } while (rest > 0n);
  return bytes;
}

const place = (length: number, thousandths: number) => Math.floor((thousandths / 1000) * length);

/** `bytes` with the mutations applied in order. */
export function mutate(bytes: Buffer, all: readonly Mutation[]): Buffer {
  let out = Buffer.from(bytes);
  for (const change of all) {
    switch (change.op) {
      case 'truncate':
        out = out.subarray(0, place(out.length, change.at));
        break;
      case 'flip':
      case 'set': {
        if (out.length === 0) break;
        const i = place(out.length, change.at);
        out[i] = change.op === 'flip' ? out[i]! ^ (1 << change.bit) : change.value;
        break;
      }
      case 'insert': {
        const i = place(out.length, change.at);
        out = Buffer.concat([out.subarray(0, i), Buffer.from(change.bytes), out.subarray(i)]);
        break;
      }
      case 'delete': {
        const i = place(out.length, change.at);
        out = Buffer.concat([out.subarray(0, i), out.subarray(i + change.length)]);
        break;
      }
      case 'repeat': {
        const i = place(out.length, change.at);
        const piece = out.subarray(i, i + change.length);
        out = Buffer.concat([
          out.subarray(0, i + piece.length),
          piece,
          out.subarray(i + piece.length),
        ]);
        break;
      }
      case 'field': {
        const tag = varint(change.number * 8 + change.wireType);
        const payload =
          change.wireType === 2
            ? [...varint(change.claimed ?? change.payload.length), ...change.payload]
            : change.payload;
        out = Buffer.concat([out, Buffer.from(tag), Buffer.from(payload)]);
        break;
      }
      case 'longVarint': {
        // A varint of eleven bytes: protobuf allows ten at most.
        const tag = varint(change.number * 8);
        out = Buffer.concat([out, Buffer.from(tag), Buffer.alloc(10, 0xff), Buffer.from([0x01])]);
        break;
      }
    }
  }
  return out;
}
