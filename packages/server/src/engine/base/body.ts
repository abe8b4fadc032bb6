// Cell bodies: MessagePack maps with string keys, kept as the bytes their writer sent. A body
// is checked on the way in and merged as bytes (encodedMap.ts), so no value is ever decoded and
// encoded again: reads, merges and copies all keep each value's type and bytes.
import { type BodyLimits, BodyRuleError } from './bodyRules.js';
import { EMPTY_MAP, EncodedMap, MalformedMapError } from './encodedMap.js';
import { InvalidArgumentError } from './errors.js';

export type Body = EncodedMap;

/**
 * Checks a body sent in a request, or says which request field is malformed: a map with
 * string keys, well-formed, and within `limits` and the rules every reader needs
 * (bodyRules.ts), the path to the offending value in the message.
 */
export function parseBody(bytes: Buffer, field: string, limits: BodyLimits): Body {
  if (bytes.length === 0) {
    throw new InvalidArgumentError(
      field,
      'must be a MessagePack map (empty map: 0x80), got no bytes',
    );
  }
  let body: EncodedMap;
  try {
    body = EncodedMap.parse(bytes, limits);
  } catch (error) {
    if (error instanceof BodyRuleError) throw new InvalidArgumentError(field, error.message);
    if (!(error instanceof MalformedMapError)) throw error;
    throw new InvalidArgumentError(
      field,
      error.message === 'not a map'
        ? 'must be a MessagePack map with string keys'
        : `is not valid MessagePack (${error.message})`,
    );
  }
  if (body.hasNonStringKey) {
    throw new InvalidArgumentError(field, 'must have string keys only');
  }
  return body;
}

/**
 * The latest version's body with `patch` merged over it (the gem's shallow merge), as bytes.
 * A missing or corrupt stored body counts as empty rather than failing every later write.
 */
export function mergeIntoStored(stored: Buffer | undefined, patch: Body): Buffer {
  return storedBody(stored).mergedWith(patch);
}

function storedBody(bytes: Buffer | undefined): EncodedMap {
  if (!bytes || bytes.length === 0) return EncodedMap.parse(EMPTY_MAP);
  try {
    return EncodedMap.parse(bytes);
  } catch {
    return EncodedMap.parse(EMPTY_MAP);
  }
}
