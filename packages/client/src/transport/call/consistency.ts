// Read consistency and the session token, as the contract carries them (docs/consistency.md):
// a read says how fresh it must be in request metadata; a write answers the session token in
// its trailers. The token is `1:` then `<partition>=<GTID position>` per partition, separated by
// `;`, a position being MariaDB's `domain-server-sequence` list; the transport keeps the merge
// of every token its writes got back, so that calls answered out of order lose none.

/**
 * How fresh a read must be: `strong` reads each partition's primary; `session` reads a replica
 * that has applied this client's own writes (else the primary); `{ maxStalenessMs }` reads any
 * replica no staler than that (else the primary). Without replicas every read is strong.
 */
export type Consistency = 'strong' | 'session' | { readonly maxStalenessMs: number };

export const CONSISTENCY_KEY = 'shameless-consistency';
export const SESSION_TOKEN_KEY = 'shameless-session-token';
export const MAX_STALENESS_KEY = 'shameless-max-staleness-ms';

const TOKEN_VERSION = '1:';

/** Checks a consistency given by a caller; a TypeError says what is wrong. */
export function checkConsistency(consistency: Consistency): Consistency {
  if (consistency === 'strong' || consistency === 'session') return consistency;
  const bound = (consistency as { maxStalenessMs?: unknown } | null)?.maxStalenessMs;
  if (typeof bound !== 'number' || !Number.isInteger(bound) || bound < 0) {
    throw new TypeError(
      "consistency must be 'strong', 'session' or { maxStalenessMs: <whole ms, 0 or more> }",
    );
  }
  return consistency;
}

/** The request metadata of a read at `consistency` in a session holding `token`. */
export function consistencyMetadata(
  consistency: Consistency,
  token: string | undefined,
): Record<string, string> {
  if (consistency === 'strong') return { [CONSISTENCY_KEY]: 'strong' };
  if (consistency === 'session') {
    return token === undefined
      ? { [CONSISTENCY_KEY]: 'session' }
      : { [CONSISTENCY_KEY]: 'session', [SESSION_TOKEN_KEY]: token };
  }
  return {
    [CONSISTENCY_KEY]: 'bounded',
    [MAX_STALENESS_KEY]: String(consistency.maxStalenessMs),
  };
}

/** Per partition, per domain: the GTID with the highest sequence. */
type Positions = Map<string, Map<string, { gtid: string; sequence: bigint }>>;

/**
 * The token of one client's session: every write's answer merged in, so that a read sent with
 * it is answered by a server that has applied them all.
 */
export class SessionToken {
  #positions: Positions = new Map();
  #text: string | undefined;

  /** The token to send, or undefined before the first write answered one. */
  get current(): string | undefined {
    return this.#text;
  }

  /** Merges a token a write answered (or one handed over from another session). */
  observe(token: string): void {
    const merged = parseToken(token);
    if (merged === undefined) return;
    let changed = false;
    for (const [partition, domains] of merged) {
      let known = this.#positions.get(partition);
      if (!known) this.#positions.set(partition, (known = new Map()));
      for (const [domain, gtid] of domains) {
        const before = known.get(domain);
        if (before === undefined || before.sequence < gtid.sequence) {
          known.set(domain, gtid);
          changed = true;
        }
      }
    }
    if (changed) this.#text = formatToken(this.#positions);
  }
}

/** A token's positions, or undefined for text that is not one (ignored: the server checks). */
function parseToken(token: string): Positions | undefined {
  if (!token.startsWith(TOKEN_VERSION)) return undefined;
  const positions: Positions = new Map();
  const body = token.slice(TOKEN_VERSION.length);
  if (body === '') return positions;
  for (const part of body.split(';')) {
    const equals = part.indexOf('=');
    if (equals < 1) return undefined;
    const domains = new Map<string, { gtid: string; sequence: bigint }>();
    for (const gtid of part.slice(equals + 1).split(',')) {
      const match = /^(\d+)-(\d+)-(\d+)$/.exec(gtid);
      if (!match) return undefined;
      const sequence = BigInt(match[3]!);
      const before = domains.get(match[1]!);
      if (before === undefined || before.sequence < sequence) {
        domains.set(match[1]!, { gtid, sequence });
      }
    }
    positions.set(part.slice(0, equals), domains);
  }
  return positions;
}

function formatToken(positions: Positions): string {
  const parts = [...positions]
    .sort(([a], [b]) => Number(a) - Number(b))
    .map(
      ([partition, domains]) =>
        `${partition}=${[...domains.values()].map(({ gtid }) => gtid).join(',')}`,
    );
  return TOKEN_VERSION + parts.join(';');
}
