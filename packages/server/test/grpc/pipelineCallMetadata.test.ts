// A Pipeline call's own metadata comes from the client as any string map; entries that gRPC
// metadata cannot hold are that call's bad input (grpc-js throws on them), never a throw that
// ends the server process or leaves the call unanswered.
import { expect } from 'chai';
import { status } from '@grpc/grpc-js';
import { RawPipeline, errorOf, responseOf } from '../support/pipelineClient.js';
import { type StoreFixture, startStoreFixture } from '../support/storeFixture.js';

describe('Pipeline call metadata', function () {
  this.timeout(30_000);
  let store: StoreFixture;

  before(async () => {
    store = await startStoreFixture();
  });
  after(() => store?.close());

  for (const [what, metadata] of [
    ['a key with a space', { 'bad key': 'x' }],
    ['an empty key', { '': 'x' }],
    ['a value with a newline', { 'x-note': 'a\nb' }],
    ['a -bin key with a string value', { 'x-bin': 'abc' }],
    ['a token with a newline', { authorization: 'Bearer s3cret-token\n' }],
  ] as const) {
    it(`answers a call whose metadata has ${what} INVALID_ARGUMENT, and the stream goes on`, async () => {
      const pipeline = new RawPipeline(store.api.client);
      try {
        const bad = await pipeline.call(
          { $case: 'describeStore', describeStore: {} },
          { metadata },
        );
        expect(errorOf(bad).code).to.equal(status.INVALID_ARGUMENT);
        expect(errorOf(bad).trailers).to.deep.equal({ 'shameless-field': 'metadata' });
        // The key is named; a value, which may be a credential, is never echoed.
        expect(errorOf(bad).message).to.include(JSON.stringify(Object.keys(metadata)[0]));
        for (const value of Object.values(metadata)) {
          expect(errorOf(bad).message).not.to.include(value);
        }
        const good = await pipeline.call({ $case: 'describeStore', describeStore: {} });
        expect(responseOf(good, 'describeStore').shardsCount).to.equal(4);
        expect((await store.api.describeStore({})).shardsCount).to.equal(4);
      } finally {
        pipeline.stream.cancel();
      }
    });
  }
});
