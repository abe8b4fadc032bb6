// A commit's cells reach followers with bodies of their own: a written body may be a view into
// a request's whole message, which a follower keeping the cell would otherwise keep alive.
import { expect } from 'chai';
import { LogNotifier } from '../../../src/engine/log/logNotifier.js';
import type { StoredCell } from '../../../src/engine/mysql/sql/contentRows.js';

describe('LogNotifier', () => {
  it('hands listeners the cells with bodies in a buffer of their own', () => {
    const message = Buffer.alloc(1024 * 1024, 7);
    const written: StoredCell[] = [0, 1, 2].map((i) => ({
      id: 10 + i,
      shard: 3,
      uuid: '6f1c2d3e-0000-4000-8000-000000000000',
      name: 'meta',
      refKey: i,
      createdAt: new Date(1_700_000_000_123),
      body: message.subarray(i * 100, i * 100 + 10 + i),
    }));
    const notifier = new LogNotifier();
    const handed: (readonly StoredCell[])[] = [];
    const unsubscribe = notifier.subscribe(['t'], (_table, cells) => handed.push(cells));
    notifier.notify('t', written);
    notifier.notify('other', written);
    unsubscribe();
    notifier.notify('t', written);

    expect(handed).to.have.length(1);
    expect(handed[0]).to.deep.equal(written);
    for (const cell of handed[0]!) {
      expect(cell.body.buffer.byteLength, 'bytes the kept body holds').to.equal(10 + 11 + 12);
    }
  });
});
