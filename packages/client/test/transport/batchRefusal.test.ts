// Refusals of a batch's size (pure): INVALID_ARGUMENT naming the batch's own items field, as the
// server words it, and nothing else.
import { Metadata, status } from '@grpc/grpc-js';
import { expect } from 'chai';
import { sizeRefusalOf } from '../../src/transport/batch/batchRefusal.js';
import { errorForStatus } from '../../src/transport/call/errors.js';

const invalid = (details: string, field?: string) => {
  const metadata = new Metadata();
  if (field !== undefined) metadata.set('shameless-field', field);
  return errorForStatus(status.INVALID_ARGUMENT, details, { metadata });
};

describe('batch size refusals (pure)', () => {
  it('reads the limit the server states for the batch field', () => {
    expect(
      sizeRefusalOf(invalid('keys: at most 100 per call, got 500', 'keys'), 'keys'),
    ).to.deep.equal({
      maxItems: 100,
    });
    // Without the trailer, the field the message names.
    expect(sizeRefusalOf(invalid('puts: at most 5 per call, got 12'), 'puts')).to.deep.equal({
      maxItems: 5,
    });
  });

  it('a bound on what the items ask for in all: a refusal, with no count of items', () => {
    const error = invalid(
      'queries: ask for at most 10000 records in all (a limit of 0 counts as 1000), got 12000',
      'queries',
    );
    expect(sizeRefusalOf(error, 'queries')).to.deep.equal({ maxItems: undefined });
  });

  it('is no refusal of the size when it names an item, another field, or another status', () => {
    expect(sizeRefusalOf(invalid('keys[3].uuid: not a uuid', 'keys[3].uuid'), 'keys')).to.equal(
      undefined,
    );
    expect(sizeRefusalOf(invalid('writes: at most 5 per call, got 9', 'writes'), 'keys')).to.equal(
      undefined,
    );
    expect(sizeRefusalOf(invalid('keys: at least one is required', 'keys'), 'keys')).to.equal(
      undefined,
    );
    const unavailable = errorForStatus(status.UNAVAILABLE, 'keys: at most 5 per call, got 9');
    expect(sizeRefusalOf(unavailable, 'keys')).to.equal(undefined);
  });
});
