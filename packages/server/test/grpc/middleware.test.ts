// The server's middleware chain, through a real gRPC server over a real MariaDB: every Store call
// passes each layer in order with its context, a layer can refuse a call with a status, and
// health stays outside the chain. Twice: with layers that have a unary form, which run unary
// calls by promises, and with one that has not, which makes the chain run them as streams of one.
import { expect } from 'chai';
import { status } from '@grpc/grpc-js';
import type { CallContext } from '../../src/grpc/call/callContext.js';
import { type ServerMiddleware, middlewareLayer } from '../../src/grpc/call/middleware.js';
import { StatusError } from '../../src/grpc/call/statusError.js';
import { rejection } from '../support/grpcCalls.js';
import { hookedLayer, streamOnly } from '../support/hookedLayer.js';
import { RATE_MODEL, type StoreFixture, startStoreFixture } from '../support/storeFixture.js';

for (const form of ['by promises', 'as streams'] as const) {
  describe(`server middleware chain, unary calls run ${form}`, function () {
    let store: StoreFixture;
    const seen: string[] = [];
    const contexts: CallContext[] = [];

    const recording = (name: string): ServerMiddleware =>
      hookedLayer({
        before: (context) => {
          seen.push(`${name}>${context.method}`);
          if (name === 'outer') contexts.push(context);
        },
        answered: (context) => seen.push(`${name}<${context.method}`),
      });
    /** Which form of this layer each call ran through. */
    const forms: string[] = [];
    const formSeen = middlewareLayer(
      async function* (request, context, next) {
        forms.push('stream');
        yield* next(request, context);
      },
      (request, context, next, deliver) => {
        forms.push('unary');
        return next(request, context, deliver);
      },
    );
    const refuseFindShard = hookedLayer({
      before: (context) => {
        if (context.method === 'FindShard') throw new StatusError(status.PERMISSION_DENIED, 'no');
      },
    });

    before(async () => {
      store = await startStoreFixture({
        middleware: [
          recording('outer'),
          recording('inner'),
          formSeen,
          form === 'by promises' ? refuseFindShard : streamOnly(refuseFindShard),
        ],
      });
      await store.api.defineModel({ model: RATE_MODEL });
    });
    after(() => store?.close());
    beforeEach(() => {
      seen.length = 0;
      contexts.length = 0;
      forms.length = 0;
    });

    it('runs a unary call through every layer, outermost first, with its context', async () => {
      await store.api.describeStore({});
      expect(seen).to.deep.equal([
        'outer>DescribeStore',
        'inner>DescribeStore',
        'inner<DescribeStore',
        'outer<DescribeStore',
      ]);
      const [context] = contexts;
      expect(context?.kind).to.equal('unary');
      expect(context?.peer).to.match(/127\.0\.0\.1/);
      expect(context?.deadline)
        .to.be.greaterThan(Date.now())
        .and.lessThan(Date.now() + 20_000);
      expect(context?.cancellation.aborted).to.equal(false);
      expect(forms).to.deep.equal([form === 'by promises' ? 'unary' : 'stream']);
    });

    it('runs a server stream through the same layers', async () => {
      await store.api.each({ model: 'rate', shards: [0] });
      expect(seen).to.deep.equal(['outer>Each', 'inner>Each', 'inner<Each', 'outer<Each']);
      expect(contexts[0]?.kind).to.equal('serverStream');
      expect(forms).to.deep.equal(['stream']);
    });

    it('answers with the status a layer refuses the call with', async () => {
      const error = await rejection(store.api.findShard({ key: { $case: 'uuid', uuid: 'x' } }));
      expect(error.code).to.equal(status.PERMISSION_DENIED);
      expect(error.details).to.equal('no');
      expect(seen).to.deep.equal(['outer>FindShard', 'inner>FindShard']);
    });

    it('maps an engine error raised under the layers once, as without them', async () => {
      const error = await rejection(store.api.getCell({ model: 'nope', uuid: 'u', cell: 'base' }));
      expect(error.code).to.equal(status.NOT_FOUND);
    });
  });
}
