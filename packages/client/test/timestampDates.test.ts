// A timestamp extension (type -1) reads as a Date to the millisecond rounded down: never a Date
// later than the instant it holds. Found by the property tests of issue 56: 999999999 ns past a
// second beyond 2^44 ms read as the next second, and 1 ns before the epoch as the epoch.
import { expect } from 'chai';
import { MessagePackExtension } from '@shameless/proto';
import { decodeBody, encodeBody } from '../src/model/body.js';
import { InvalidArgumentError } from '../src/index.js';

const SOURCE = { model: 'test', uuid: '00000000-0000-4000-8000-000000000000', cell: 'base' };

/** The date of a body {t: timestamp} whose extension bytes (after the type) are `data`. */
function dateOf(header: string, data: Buffer): Date {
  const body = decodeBody(Buffer.concat([Buffer.from('81a174' + header, 'hex'), data]), SOURCE);
  return body.t as Date;
}

describe('timestamps read as Dates', () => {
  it('round a fraction of a millisecond down, however far the instant is from the epoch', () => {
    const latest34BitSecond = 2n ** 34n - 1n;
    const data = Buffer.alloc(8);
    data.writeBigUInt64BE((999_999_999n << 34n) | latest34BitSecond);
    expect(dateOf('d7ff', data).getTime()).to.equal(Number(latest34BitSecond) * 1000 + 999);
  });

  it('round an instant before the epoch down, not towards the epoch', () => {
    const data = Buffer.alloc(12);
    data.writeUInt32BE(999_999_999); // nanoseconds
    data.writeBigInt64BE(-1n, 4); // seconds: 1 ns before the epoch
    expect(dateOf('c70cff', data).getTime()).to.equal(-1);
  });

  it("keep an instant past a Date's range as its extension, written back as it was", () => {
    const data = Buffer.alloc(12);
    data.writeUInt32BE(5); // nanoseconds
    data.writeBigInt64BE(2n ** 62n, 4); // seconds: far past a Date's ±8.64e15 ms
    const bytes = Buffer.concat([Buffer.from('81a174c70cff', 'hex'), data]);
    const body = decodeBody(bytes, SOURCE);
    expect(body.t).to.be.instanceOf(MessagePackExtension);
    expect(encodeBody(body)).to.deep.equal(bytes);
  });

  it('refuse to write an Invalid Date, which no timestamp holds', () => {
    expect(() => encodeBody({ t: new Date(Number.NaN) })).to.throw(
      InvalidArgumentError,
      /t: an Invalid Date has no MessagePack form/,
    );
  });
});
