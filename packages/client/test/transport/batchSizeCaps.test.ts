// Learned batch sizes (pure): after an answer over a size limit, a kind's batches carry at most
// half the calls of the refused one, one more after each batch that fits at that size, until
// the form's own bound, or the server's where it stated a lower one; one model's refusals leave
// another's batches alone.
import { expect } from 'chai';
import { GET_CELL } from '../../src/transport/batch/batchForms.js';
import { BatchSizeCaps } from '../../src/transport/batch/batchSizeCaps.js';

const of = (model: string) => ({ model, uuid: '2f1e4c1a-8d3b-4c52-9a0e-6b7f0d2c9e11', cell: '' });

describe('batch size caps (pure)', () => {
  it('halves after a refusal, grows one call per batch that fits at the cap', () => {
    const caps = new BatchSizeCaps();
    expect(caps.boundsOf(GET_CELL, of('rate'))).to.equal(GET_CELL.bounds);
    caps.tooLarge(GET_CELL, of('rate'), 7);
    expect(caps.boundsOf(GET_CELL, of('rate')).maxItems).to.equal(4);
    caps.fitted(GET_CELL, of('rate'), 2); // smaller than the cap: says nothing of it
    expect(caps.boundsOf(GET_CELL, of('rate')).maxItems).to.equal(4);
    caps.fitted(GET_CELL, of('rate'), 4);
    expect(caps.boundsOf(GET_CELL, of('rate')).maxItems).to.equal(5);
    caps.tooLarge(GET_CELL, of('rate'), 20); // half of 20 is no lower than 5
    expect(caps.boundsOf(GET_CELL, of('rate')).maxItems).to.equal(5);
    expect(caps.boundsOf(GET_CELL, of('rate')).maxBytes).to.equal(GET_CELL.bounds.maxBytes);
  });

  it('keeps each model to its own cap', () => {
    const caps = new BatchSizeCaps();
    caps.tooLarge(GET_CELL, of('blob'), 64);
    expect(caps.boundsOf(GET_CELL, of('blob')).maxItems).to.equal(32);
    expect(caps.boundsOf(GET_CELL, of('rate'))).to.equal(GET_CELL.bounds);
  });

  it("keeps every group of the method within the server's stated limit, for good", () => {
    const caps = new BatchSizeCaps();
    caps.tooLarge(GET_CELL, of('blob'), 400);
    caps.tooLarge(GET_CELL, of('big'), 20);
    caps.serverLimit(GET_CELL, 100);
    expect(caps.boundsOf(GET_CELL, of('rate')).maxItems).to.equal(100);
    expect(caps.boundsOf(GET_CELL, of('blob')).maxItems).to.equal(100);
    expect(caps.boundsOf(GET_CELL, of('big')).maxItems).to.equal(10);
    for (let i = 10; i < 100; i++) caps.fitted(GET_CELL, of('big'), i);
    expect(caps.boundsOf(GET_CELL, of('big')).maxItems).to.equal(100);
    caps.fitted(GET_CELL, of('big'), 100);
    expect(caps.boundsOf(GET_CELL, of('big')).maxItems).to.equal(100);
    caps.serverLimit(GET_CELL, 200); // a higher one changes nothing
    expect(caps.boundsOf(GET_CELL, of('rate')).maxItems).to.equal(100);
  });

  it('forgets the cap once it is back at the form bound', () => {
    const caps = new BatchSizeCaps();
    const bound = GET_CELL.bounds.maxItems;
    caps.tooLarge(GET_CELL, of('rate'), 2 * bound - 2);
    expect(caps.boundsOf(GET_CELL, of('rate')).maxItems).to.equal(bound - 1);
    caps.fitted(GET_CELL, of('rate'), bound - 1);
    expect(caps.boundsOf(GET_CELL, of('rate'))).to.equal(GET_CELL.bounds);
  });
});
