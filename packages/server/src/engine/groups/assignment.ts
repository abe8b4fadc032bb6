// Which live member of a group should own each shard: balanced within one shard of the fair
// share, and sticky. Every server computes it from the rows it read, for its own members only
// (it claims what its members should have and is free, and revokes what they should give up),
// so the function must give every server the same answer from the same rows: it depends on
// nothing but its arguments, and breaks every tie by member id.
//
// Sticky: a member keeps every shard it owns up to its share, so a join or a leave moves only
// the shards that must move (a member's excess, a dead member's shards) and no others.

/**
 * The owner each shard should have. `owners` maps each shard to its owner as read (missing or
 * undefined: none); owners not among `members` (live members) count as none. Every shard of
 * `shards` gets an owner when there is at least one member.
 */
export function assignShards(
  shards: readonly number[],
  owners: ReadonlyMap<number, string | undefined>,
  members: readonly string[],
): Map<number, string> {
  const target = new Map<number, string>();
  if (members.length === 0) return target;
  const live = [...new Set(members)].sort(compareIds);
  const owned = new Map<string, number[]>(live.map((member) => [member, []]));
  const free: number[] = [];
  for (const shard of [...shards].sort((a, b) => a - b)) {
    const owner = owners.get(shard);
    const list = owner === undefined ? undefined : owned.get(owner);
    if (list) list.push(shard);
    else free.push(shard);
  }
  // Shares: everyone the floor of the fair share, and one more for as many as the remainder,
  // given first to those who own the most already (fewer shards move), then by id.
  const base = Math.floor(shards.length / live.length);
  let extra = shards.length % live.length;
  const share = new Map<string, number>();
  const byHoldings = [...live].sort(
    (a, b) => owned.get(b)!.length - owned.get(a)!.length || compareIds(a, b),
  );
  for (const member of byHoldings) {
    const more = extra > 0 && owned.get(member)!.length > base ? 1 : 0;
    extra -= more;
    share.set(member, base + more);
  }
  // The remainder not yet given goes to members below their share, by id.
  for (const member of live) {
    if (extra === 0) break;
    if (share.get(member) === base) {
      share.set(member, base + 1);
      extra -= 1;
    }
  }
  for (const member of live) {
    const list = owned.get(member)!;
    const keep = share.get(member)!;
    for (const shard of list.slice(0, keep)) target.set(shard, member);
    free.push(...list.slice(keep));
  }
  free.sort((a, b) => a - b);
  let next = 0;
  for (const member of live) {
    let holds = Math.min(owned.get(member)!.length, share.get(member)!);
    while (holds < share.get(member)! && next < free.length) {
      target.set(free[next++]!, member);
      holds += 1;
    }
  }
  return target;
}

/** Member ids in code-unit order, the same on every server. */
function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
