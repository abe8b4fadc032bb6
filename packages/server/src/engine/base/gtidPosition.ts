// Replication positions as MariaDB writes them: a GTID is `domain-server-sequence`, and a
// position is one GTID per replication domain (`0-1-100,3-7-42`), as @@gtid_binlog_pos,
// @@gtid_slave_pos and MASTER_GTID_WAIT speak it. Within a domain the sequence numbers only
// grow, so one position covers another when each of the other's domains is at or past it; the
// server id says who wrote a transaction and plays no part in the order.

export interface Gtid {
  readonly server: bigint;
  readonly sequence: bigint;
}

/** One GTID per domain: how far a server's binary log, or a replica's applying, has come. */
export type GtidPosition = ReadonlyMap<bigint, Gtid>;

export const EMPTY_POSITION: GtidPosition = new Map();

const GTID = /^(\d{1,10})-(\d{1,10})-(\d{1,20})$/;
const UINT32_MAX = 2n ** 32n - 1n;
const UINT64_MAX = 2n ** 64n - 1n;

/** Thrown for text that is not a GTID position; the message says which part. */
export class MalformedPositionError extends Error {}

/** Parses `0-1-100,3-7-42` (an empty text is the empty position). */
export function parsePosition(text: string): GtidPosition {
  const position = new Map<bigint, Gtid>();
  if (text.trim() === '') return position;
  for (const part of text.split(',')) {
    const match = GTID.exec(part.trim());
    if (!match) throw new MalformedPositionError(`${JSON.stringify(part)} is not a GTID`);
    const domain = BigInt(match[1]!);
    const server = BigInt(match[2]!);
    const sequence = BigInt(match[3]!);
    if (domain > UINT32_MAX || server > UINT32_MAX || sequence > UINT64_MAX) {
      throw new MalformedPositionError(`${JSON.stringify(part)} is out of range`);
    }
    const known = position.get(domain);
    if (!known || known.sequence < sequence) position.set(domain, { server, sequence });
  }
  return position;
}

/** The position as MariaDB writes it, domains in order (so equal positions read the same). */
export function formatPosition(position: GtidPosition): string {
  return [...position.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([domain, { server, sequence }]) => `${domain}-${server}-${sequence}`)
    .join(',');
}

/** Whether `applied` has reached `wanted` in every domain `wanted` names. */
export function covers(applied: GtidPosition, wanted: GtidPosition): boolean {
  for (const [domain, { sequence }] of wanted) {
    const reached = applied.get(domain);
    if (!reached || reached.sequence < sequence) return false;
  }
  return true;
}

/** The later of the two in each domain: what a reader must wait for to see both. */
export function mergePositions(a: GtidPosition, b: GtidPosition): GtidPosition {
  if (a.size === 0) return b;
  if (b.size === 0) return a;
  const merged = new Map(a);
  for (const [domain, gtid] of b) {
    const known = merged.get(domain);
    if (!known || known.sequence < gtid.sequence) merged.set(domain, gtid);
  }
  return merged;
}
