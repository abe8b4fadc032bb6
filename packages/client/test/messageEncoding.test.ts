// Message encoding (pure): @shameless/proto encodes every request and answer through one reused
// writer. Its bytes must be exactly ts-proto's own, whatever came before: a large message, or
// one whose encoding failed half-way.

import { expect } from 'chai';
import {
  GetCellsResponse,
  PutManyRequest,
  StoreClient,
  StoreService,
  encodeMessage,
} from '@shameless/proto';

/** ts-proto's own encoding: a fresh writer for the one message. */
function reference(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes);
}

function putMany(bodyBytes: number, count: number): PutManyRequest {
  return {
    puts: Array.from({ length: count }, (_, i) => ({
      model: 'rate',
      values: Buffer.alloc(bodyBytes, i % 251),
      requestId: `request-${i}`,
      omitBodyAsSent: i % 2 === 0,
    })),
  };
}

function getCells(count: number, refKey: number): GetCellsResponse {
  return {
    results: Array.from({ length: count }, (_, i) => ({
      cell: {
        id: 2n ** 63n - 1n - BigInt(i),
        shard: i % 16,
        uuid: '2f1e4c1a-8d3b-4c52-9a0e-6b7f0d2c9e11',
        name: 'base',
        refKey,
        createdAt: new Date(Date.UTC(2026, 10, 25, 12, 0, 0, i % 1000)),
        body: Buffer.from([0x81, 0xa1, 0x76, i % 128]),
      },
    })),
  };
}

describe('message encoding (pure)', () => {
  it('writes the bytes ts-proto writes, for small and large messages in any order', () => {
    const messages = [
      putMany(10, 1),
      putMany(16 * 1024, 16),
      putMany(1, 3),
      putMany(3 * 1024 * 1024, 1), // past what the reused writer keeps
      putMany(100, 2),
    ];
    for (const message of messages) {
      const bytes = encodeMessage(PutManyRequest, message);
      expect(bytes.equals(reference(PutManyRequest.encode(message).finish()))).to.equal(true);
      expect(PutManyRequest.decode(bytes)).to.deep.equal(message);
    }
  });

  it('answers bytes of their own: the next message does not overwrite them', () => {
    const first = encodeMessage(GetCellsResponse, getCells(3, 1));
    const copy = Buffer.from(first);
    encodeMessage(GetCellsResponse, getCells(3, 2));
    expect(first.equals(copy)).to.equal(true);
  });

  it('starts afresh after a message that failed half-way', () => {
    const broken = getCells(5, 1);
    broken.results[3]!.cell!.refKey = 2 ** 40; // not an int32: the encoder throws mid-message
    expect(() => encodeMessage(GetCellsResponse, broken)).to.throw(/int32/);
    const message = getCells(2, 7);
    const bytes = encodeMessage(GetCellsResponse, message);
    expect(bytes.equals(reference(GetCellsResponse.encode(message).finish()))).to.equal(true);
  });

  it('is what the service definition and the client class send', () => {
    const message = putMany(64, 2);
    const expected = reference(PutManyRequest.encode(message).finish());
    expect(StoreService.putMany.requestSerialize(message).equals(expected)).to.equal(true);
    expect(StoreClient.service).to.equal(StoreService);
  });
});
