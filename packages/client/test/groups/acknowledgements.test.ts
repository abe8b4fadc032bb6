// A member's acknowledgements batched (src/groups/acknowledgements.ts): one message a few
// milliseconds after the first id, at once when an eighth of the in-flight window waits, at
// once on flush, nothing after a discard; ids grouped by shard and epoch.

import { expect } from 'chai';
import type { Acknowledge } from '@shameless/proto';
import { ManualClock } from '../../src/index.js';
import { ACK_DELAY_MS, Acknowledgements, ackBatchIds } from '../../src/groups/acknowledgements.js';

function batched(maxInFlight: number) {
  const clock = new ManualClock();
  const sent: Acknowledge[] = [];
  const acks = new Acknowledgements((ack) => sent.push(ack), clock, ackBatchIds(maxInFlight));
  return { clock, sent, acks };
}

describe('acknowledgements', () => {
  it('a batch goes at once when an eighth of maxInFlight waits (32 of the default 256)', () => {
    expect([256, 1024, 8, 7, 1].map(ackBatchIds)).to.deep.equal([32, 128, 1, 1, 1]);
    const { clock, sent, acks } = batched(256);
    for (let id = 1n; id <= 31n; id++) acks.add(3, 7n, id);
    expect(sent).to.deep.equal([]);
    acks.add(4, 7n, 1n);
    expect(sent).to.have.length(1);
    expect(sent[0]!.shards.map((shard) => [shard.shard, shard.ids.length])).to.deep.equal([
      [3, 31],
      [4, 1],
    ]);
    // Its timer went with it: nothing more is sent for it.
    expect(clock.pendingTimers).to.equal(0);
  });

  it('a smaller batch goes ACK_DELAY_MS after its first id, grouped by shard and epoch', async () => {
    const { clock, sent, acks } = batched(256);
    acks.add(3, 7n, 10n);
    await clock.advance(ACK_DELAY_MS - 1);
    acks.add(3, 8n, 11n);
    acks.add(3, 7n, 12n);
    expect(sent).to.deep.equal([]);
    await clock.advance(1);
    expect(sent).to.deep.equal([
      {
        shards: [
          { shard: 3, epoch: 7n, ids: [10n, 12n] },
          { shard: 3, epoch: 8n, ids: [11n] },
        ],
      },
    ]);
  });

  it('flush sends what waits at once; discard forgets it', async () => {
    const { clock, sent, acks } = batched(256);
    acks.flush();
    expect(sent).to.deep.equal([]);
    acks.add(1, 1n, 1n);
    acks.flush();
    expect(sent).to.have.length(1);
    acks.add(1, 1n, 2n);
    acks.discard();
    await clock.advance(ACK_DELAY_MS * 2);
    expect(sent).to.have.length(1);
  });
});
