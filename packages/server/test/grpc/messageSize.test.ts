// The estimate of a response's memory that admission and stream buffering count with (pure).
import { expect } from 'chai';
import { messageBytes } from '../../src/grpc/call/messageSize.js';

describe('the size of a response message (pure)', () => {
  it('counts bodies and strings whole, other scalars as 8 bytes, on top of 64', () => {
    const body = Buffer.alloc(1000);
    expect(messageBytes({})).to.equal(64);
    expect(messageBytes({ uuid: 'abcd', refKey: 3, body })).to.equal(64 + 4 + 8 + 1000);
    expect(messageBytes({ body: new Uint8Array(10), at: new Date(), none: null })).to.equal(
      64 + 10 + 0 + 8,
    );
  });

  it('adds up the cells of a batch answer, however nested', () => {
    const cell = { uuid: 'u'.repeat(36), name: 'base', body: Buffer.alloc(1024) };
    const answer = { results: Array.from({ length: 1000 }, () => ({ cell })) };
    expect(messageBytes(answer)).to.equal(64 + 1000 * (36 + 4 + 1024));
  });

  it("counts the bodies of a WhereMany answer, the service's deepest message", () => {
    const body = Buffer.alloc(600 * 1024);
    const answer = {
      pages: [{ records: [{ uuid: 'u', cells: [{ name: 'meta', body }] }], nextPageToken: '' }],
    };
    expect(messageBytes(answer)).to.equal(64 + 1 + 4 + 600 * 1024);
  });

  it("stops below a WhereMany answer's bodies (depth 7), counting what lies deeper as 8 bytes", () => {
    let deep: unknown = { body: Buffer.alloc(100) };
    for (let i = 0; i < 8; i++) deep = { next: deep };
    expect(messageBytes(deep)).to.equal(64 + 8);
  });
});
