// The group-commit queue on its own: how it forms groups from callers' writes, how many run at
// once, and what it refuses. The transaction is a function here that records its groups; the
// transaction itself is tested against MariaDB in consistency/groupCommit.test.ts.
import { expect } from 'chai';
import { type CallScope, UNBOUNDED } from '../../../src/engine/base/callScope.js';
import { GroupCommit, type GroupLimits } from '../../../src/engine/write/groupCommit.js';
import { ResourceExhaustedError } from '../../../src/engine/base/errors.js';
import type { ItemOutcome, WriteItem } from '../../../src/engine/write/writeItems.js';

/** An append of `bytes` bytes, tagged so a test can tell items apart. */
const item = (tag: string, bytes = 10): WriteItem =>
  ({
    kind: 'append',
    uuid: tag,
    cell: 'base',
    content: { mode: 'replace', bytes: Buffer.alloc(bytes) },
    requestId: tag,
  }) as unknown as WriteItem;

/** An item's shard: the tag's first letter (`a1` and `a2` share shard 0, `b1` is on 1). */
const shardOfTag = (item: WriteItem) => item.uuid.charCodeAt(0) - 'a'.charCodeAt(0);

const limits = (overrides: Partial<GroupLimits> = {}): GroupLimits => ({
  concurrency: 1,
  maxItems: 100,
  maxBytes: 1_000_000,
  maxQueuedBytes: 10_000_000,
  ...overrides,
});

/** A transaction that holds each group until released, recording the groups' items. */
function heldTransactions() {
  const groups: string[][] = [];
  const release: (() => void)[] = [];
  let running = 0;
  let mostRunning = 0;
  const run = async (_scope: CallScope, items: readonly WriteItem[]): Promise<ItemOutcome[]> => {
    groups.push(items.map((i) => i.uuid));
    running += 1;
    mostRunning = Math.max(mostRunning, running);
    await new Promise<void>((resolve) => release.push(resolve));
    running -= 1;
    return items.map((i) => ({ status: 'taken', owner: i.uuid }));
  };
  return { run, groups, release, mostRunning: () => mostRunning };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('group commit queue (pure)', () => {
  it('puts writes of the same turn in one group, and later ones in the next', async () => {
    const tx = heldTransactions();
    const commit = new GroupCommit(tx.run, shardOfTag, limits());
    const first = [
      commit.submit(UNBOUNDED, [item('a')]),
      commit.submit(UNBOUNDED, [item('b'), item('c')]),
    ];
    await turn();
    expect(tx.groups).to.deep.equal([['a', 'b', 'c']]);
    const later = [commit.submit(UNBOUNDED, [item('d')]), commit.submit(UNBOUNDED, [item('e')])];
    await turn();
    expect(tx.groups, 'the next group waits for a free transaction').to.have.length(1);
    tx.release.shift()!();
    const answers = await Promise.all(first);
    expect(
      answers.map((outcomes) => outcomes.map((o) => o.status === 'taken' && o.owner)),
    ).to.deep.equal([['a'], ['b', 'c']]);
    await turn();
    expect(tx.groups[1]).to.deep.equal(['d', 'e']);
    tx.release.shift()!();
    await Promise.all(later);
  });

  it('reports what runs and waits now, and counts groups by size for metrics', async () => {
    const tx = heldTransactions();
    const commit = new GroupCommit(tx.run, shardOfTag, limits());
    const first = commit.submit(UNBOUNDED, [item('a'), item('b'), item('c')]);
    await turn();
    const second = commit.submit(UNBOUNDED, [item('d')]);
    await turn();
    expect(commit.activity).to.deep.include({ running: 1, waiting: 1, groups: 1, items: 3 });
    tx.release.shift()!();
    await first;
    await turn();
    tx.release.shift()!();
    await second;
    await turn(); // the slot is freed after the callers are answered
    const { groupSizes, running, waiting } = commit.activity;
    expect([running, waiting]).to.deep.equal([0, 0]);
    // Bounds 1, 2, 4, ...: the group of 1 in the first bucket, the group of 3 in the third.
    expect(groupSizes.slice(0, 4)).to.deep.equal([1, 0, 1, 0]);
    expect(groupSizes.reduce((sum, count) => sum + count, 0)).to.equal(2);
  });

  it('bounds a group by items and bytes, never splitting a caller, and runs at most `concurrency` at once', async () => {
    const tx = heldTransactions();
    const commit = new GroupCommit(
      tx.run,
      shardOfTag,
      limits({ concurrency: 2, maxItems: 3, maxBytes: 100 }),
    );
    const calls = [
      commit.submit(UNBOUNDED, [item('a'), item('b')]),
      commit.submit(UNBOUNDED, [item('c'), item('d')]), // would make 4 items: next group
      commit.submit(UNBOUNDED, [item('e', 200)]), // alone over the byte bound: a group of its own
      commit.submit(UNBOUNDED, [item('f')]),
    ];
    await turn();
    expect(tx.groups).to.deep.equal([
      ['a', 'b'],
      ['c', 'd'],
    ]);
    tx.release.shift()!();
    await turn();
    expect(tx.groups[2]).to.deep.equal(['e']);
    tx.release.shift()!();
    await turn();
    expect(tx.groups[3]).to.deep.equal(['f']);
    while (tx.release.length > 0) tx.release.shift()!();
    await Promise.all(calls);
    expect(tx.mostRunning()).to.equal(2);
  });

  it('shares a large enough group among free transactions, a shard in one only, callers in order', async () => {
    const tx = heldTransactions();
    const commit = new GroupCommit(
      tx.run,
      shardOfTag,
      limits({ concurrency: 2, minSplitItems: 2 }),
    );
    const calls = ['a1', 'b1', 'a2', 'c1', 'b2', 'c2'].map((tag) =>
      commit.submit(UNBOUNDED, [item(tag)]),
    );
    await turn();
    // c1 goes where fewer items are (with b1), and c2 after it.
    expect(tx.groups).to.deep.equal([
      ['a1', 'a2'],
      ['b1', 'c1', 'b2', 'c2'],
    ]);
    expect(tx.mostRunning()).to.equal(2);
    while (tx.release.length > 0) tx.release.shift()!();
    await Promise.all(calls);
  });

  it("keeps a caller's writes on several shards in one transaction when a group is shared", async () => {
    // The contract: a WriteCells call's writes on one partition commit together.
    const tx = heldTransactions();
    const commit = new GroupCommit(
      tx.run,
      shardOfTag,
      limits({ concurrency: 2, minSplitItems: 2 }),
    );
    const calls = [
      commit.submit(
        UNBOUNDED,
        ['a1', 'b1', 'c1', 'd1'].map((tag) => item(tag)),
      ),
      commit.submit(UNBOUNDED, [item('e1')]),
      commit.submit(UNBOUNDED, [item('f1')]),
      commit.submit(UNBOUNDED, [item('b2')]),
    ];
    await turn();
    expect(tx.groups).to.deep.equal([
      ['a1', 'b1', 'c1', 'd1', 'b2'],
      ['e1', 'f1'],
    ]);
    while (tx.release.length > 0) tx.release.shift()!();
    await Promise.all(calls);
  });

  it('keeps a group whole when its parts would be smaller than minSplitItems', async () => {
    const tx = heldTransactions();
    const commit = new GroupCommit(
      tx.run,
      shardOfTag,
      limits({ concurrency: 2, minSplitItems: 4 }),
    );
    const calls = ['a1', 'b1', 'c1', 'd1', 'e1'].map((tag) =>
      commit.submit(UNBOUNDED, [item(tag)]),
    );
    await turn();
    expect(tx.groups).to.deep.equal([['a1', 'b1', 'c1', 'd1', 'e1']]);
    while (tx.release.length > 0) tx.release.shift()!();
    await Promise.all(calls);
  });

  it('fails every caller of a failed group, and only them', async () => {
    let groups = 0;
    const commit = new GroupCommit(
      async (_scope, items) => {
        groups += 1;
        if (groups === 1) throw new Error('partition down');
        return items.map((i) => ({ status: 'taken', owner: i.uuid }));
      },
      shardOfTag,
      limits(),
    );
    const failed = Promise.allSettled([
      commit.submit(UNBOUNDED, [item('a')]),
      commit.submit(UNBOUNDED, [item('b')]),
    ]);
    await turn();
    const later = commit.submit(UNBOUNDED, [item('c')]);
    const settled = [...(await failed), ...(await Promise.allSettled([later]))];
    expect(settled.map((s) => s.status)).to.deep.equal(['rejected', 'rejected', 'fulfilled']);
  });

  it('refuses writes beyond the queued bytes with RESOURCE_EXHAUSTED, and takes them again once drained', async () => {
    const tx = heldTransactions();
    const commit = new GroupCommit(
      tx.run,
      shardOfTag,
      limits({ maxQueuedBytes: 100, maxItems: 1 }),
    );
    const running = commit.submit(UNBOUNDED, [item('a', 60)]);
    await turn(); // 'a' is in its transaction: the queue is empty again
    const queued = commit.submit(UNBOUNDED, [item('b', 60)]);
    const refused = commit.submit(UNBOUNDED, [item('c', 60)]);
    expect(commit.waiting).to.equal(1);
    const error = await refused.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).to.be.instanceOf(ResourceExhaustedError);
    expect((error as Error).message).to.match(/^partition 0 has 0\.0 MiB of writes waiting/);
    tx.release.shift()!();
    await running;
    await turn();
    tx.release.shift()!();
    await queued;
    const again = commit.submit(UNBOUNDED, [item('d', 60)]);
    await turn();
    tx.release.shift()!();
    await again;
    expect(tx.groups).to.deep.equal([['a'], ['b'], ['d']]);
  });
});
