// One owned shard's work (src/groups/shardWork.ts) on its own: the order and concurrency of
// its handler runs, the slot a failed cell holds, parks, a revocation's finish and a loss.
// The end to end behaviour against real servers: test/consume.test.ts.

import { expect } from 'chai';
import type { Delivery as WireDelivery } from '@shameless/proto';
import { FailedPreconditionError, InvalidArgumentError } from '../../src/index.js';
import { ShardWork, errorText, type Delivery } from '../../src/groups/shardWork.js';

const EPOCH = 7n;

function delivery(id: number, attempt = 1, replay = false): WireDelivery {
  return {
    cell: {
      id: BigInt(id),
      shard: 3,
      uuid: `u-${id}`,
      name: 'base',
      refKey: 0,
      createdAt: new Date(0),
      body: Buffer.from([0x80]),
    },
    epoch: EPOCH,
    attempt,
    replay,
  };
}

/** Lets every promise job run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

/** A shard's work whose handler waits for the test to finish each cell. */
function scripted(perShardInFlight: number, after?: Promise<void>) {
  const answers: string[] = [];
  const started: { id: number; delivery: Delivery; finish(error?: unknown): void }[] = [];
  const work = new ShardWork({
    shard: 3,
    epoch: EPOCH,
    perShardInFlight,
    after,
    handle: (cell, info) =>
      new Promise<void>((resolve, reject) => {
        started.push({
          id: Number(cell.id),
          delivery: info,
          finish: (error) => (error === undefined ? resolve() : reject(error)),
        });
      }),
    answers: {
      acknowledge: (shard, epoch, id) => answers.push(`ack ${shard}/${epoch}/${id}`),
      failed: (shard, epoch, id, error) => answers.push(`failed ${shard}/${epoch}/${id}: ${error}`),
      park: (shard, epoch, id, reason) => answers.push(`park ${shard}/${epoch}/${id}: ${reason}`),
    },
    onFailure: () => {},
  });
  const running = () => started.map((run) => run.id);
  const finish = async (id: number, error?: unknown) => {
    started.find((run) => run.id === id)!.finish(error);
    await settle();
  };
  return { work, answers, started, running, finish };
}

describe('a shard’s work', () => {
  it('runs cells in the order delivered, at most perShardInFlight at once, acknowledging each', async () => {
    const { work, answers, running, finish } = scripted(2);
    for (const id of [1, 2, 3, 4]) work.deliver(delivery(id));
    await settle();
    expect(running()).to.deep.equal([1, 2]);
    expect(work.waiting).to.equal(2);
    await finish(2);
    expect(running()).to.deep.equal([1, 2, 3]);
    await finish(1);
    await finish(3);
    await finish(4);
    expect(answers).to.deep.equal(['ack 3/7/2', 'ack 3/7/1', 'ack 3/7/3', 'ack 3/7/4']);
  });

  it('a cell that failed holds its slot until it comes again (ahead of the others) or is parked', async () => {
    const { work, answers, started, running, finish } = scripted(1);
    for (const id of [1, 2, 3]) work.deliver(delivery(id));
    await settle();
    await finish(1, new TypeError('no price'));
    expect(answers).to.deep.equal(['failed 3/7/1: TypeError: no price']);
    expect(running(), 'nothing after it starts').to.deep.equal([1]);
    work.deliver(delivery(1, 2));
    await settle();
    expect(running()).to.deep.equal([1, 1]);
    expect(started[1]!.delivery.attempt).to.equal(2);
    started[1]!.finish(new Error('still no price'));
    await settle();
    expect(running()).to.deep.equal([1, 1]);
    work.parked(1n);
    await settle();
    expect(running(), 'parked: the shard goes on').to.deep.equal([1, 1, 2]);
  });

  it('park() parks instead of acknowledging, from inside the handler only', async () => {
    const { work, answers, started, finish } = scripted(1);
    work.deliver(delivery(1));
    work.deliver(delivery(2));
    await settle();
    expect(() => started[0]!.delivery.park(42 as never)).to.throw(InvalidArgumentError);
    started[0]!.delivery.park('suspect');
    await finish(1);
    expect(() => started[0]!.delivery.park('late')).to.throw(FailedPreconditionError);
    // A handler that parks and then throws still parks.
    started[1]!.delivery.park('bad');
    await finish(2, new Error('and failed'));
    expect(answers).to.deep.equal(['park 3/7/1: suspect', 'park 3/7/2: bad']);
  });

  it('finish() drops what has not started and resolves once the started cells are answered', async () => {
    const { work, answers, running, finish } = scripted(2);
    for (const id of [1, 2, 3, 4]) work.deliver(delivery(id));
    await settle();
    let finished = false;
    const finishing = work.finish().then(() => (finished = true));
    work.deliver(delivery(5));
    await finish(1);
    expect(finished).to.equal(false);
    await finish(2);
    await finishing;
    expect(running()).to.deep.equal([1, 2]);
    expect(answers).to.deep.equal(['ack 3/7/1', 'ack 3/7/2']);
    expect(work.owned).to.equal(false);
  });

  it('lose() aborts the handlers’ signal and answers nothing more', async () => {
    const { work, answers, started, finish } = scripted(1);
    work.deliver(delivery(1));
    work.deliver(delivery(2));
    await settle();
    const signal = started[0]!.delivery.signal;
    expect(signal.aborted).to.equal(false);
    work.lose();
    expect(signal.aborted).to.equal(true);
    await finish(1);
    await work.idle();
    expect(answers).to.deep.equal([]);
    expect(started).to.have.length(1);
  });

  it('starts nothing before the shard’s previous work is idle', async () => {
    let previousDone!: () => void;
    const previous = new Promise<void>((resolve) => (previousDone = resolve));
    const { work, running } = scripted(1, previous);
    work.deliver(delivery(1));
    await settle();
    expect(running()).to.deep.equal([]);
    previousDone();
    await settle();
    expect(running()).to.deep.equal([1]);
  });

  it('an error is sent as its name and message, cut to what the server keeps', () => {
    expect(errorText(new RangeError('too big'))).to.equal('RangeError: too big');
    expect(errorText('plain')).to.equal('plain');
    expect(errorText(undefined)).to.equal('undefined');
    expect(errorText(new Error('x'.repeat(5000)))).to.have.length(2048);
  });
});
