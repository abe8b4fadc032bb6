import { expect } from 'chai';
import {
  clientLayer,
  composeMiddleware,
  composeUnary,
  onlyMessage,
  type ClientMiddleware,
} from '../../../src/transport/call/compose.js';
import { GET_CELL, READ, messages } from './support.js';

describe('composeMiddleware', () => {
  it('runs layers outermost first, each around the rest, over the terminal', async () => {
    const order: string[] = [];
    const layer = (name: string): ClientMiddleware =>
      async function* (call, options, next) {
        order.push(`${name} in`);
        for await (const message of next(call, options)) yield `${name}(${String(message)})`;
        order.push(`${name} out`);
      };
    const chain = composeMiddleware([layer('a'), layer('b')], () => messages('x'));
    expect(await onlyMessage(GET_CELL, chain(GET_CELL, READ))).to.equal('a(b(x))');
    expect(order).to.deep.equal(['a in', 'b in', 'b out', 'a out']);
  });

  it('gives a layer the same next on every call, so it can send calls of its own', async () => {
    const nexts = new Set<unknown>();
    const chain = composeMiddleware(
      [
        (call, options, next) => {
          nexts.add(next);
          return next(call, options);
        },
      ],
      () => messages(1),
    );
    for (let i = 0; i < 3; i++) await onlyMessage(GET_CELL, chain(GET_CELL, READ));
    expect(nexts.size).to.equal(1);
  });

  it('onlyMessage refuses a call that ended without an answer', async () => {
    const chain = composeMiddleware([], () => messages());
    const error = await onlyMessage(GET_CELL, chain(GET_CELL, READ)).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(TypeError);
    expect((error as Error).message).to.match(/getCell: the call ended without an answer/);
  });
});

describe('composeUnary', () => {
  /** A layer in both forms that records which form ran it. */
  const layer = (name: string, order: string[]): ClientMiddleware =>
    clientLayer(
      async function* (call, options, next) {
        order.push(`${name} as a stream`);
        for await (const message of next(call, options)) yield `${name}(${String(message)})`;
      },
      async (call, options, next) => {
        order.push(`${name} in`);
        const message = await next(call, options);
        order.push(`${name} out`);
        return `${name}(${String(message)})`;
      },
    );

  it("runs the layers' unary forms outermost first, each around the rest, over the terminal", async () => {
    const order: string[] = [];
    const chain = composeUnary([layer('a', order), layer('b', order)], async () => 'x');
    expect(await chain?.(GET_CELL, READ)).to.equal('a(b(x))');
    expect(order).to.deep.equal(['a in', 'b in', 'b out', 'a out']);
  });

  it('gives a layer the same next on every call', async () => {
    const nexts = new Set<unknown>();
    const remembering = clientLayer(
      (call, options, next) => next(call, options),
      (call, options, next) => {
        nexts.add(next);
        return next(call, options);
      },
    );
    const chain = composeUnary([remembering], async () => 1);
    for (let i = 0; i < 3; i++) await chain?.(GET_CELL, READ);
    expect(nexts.size).to.equal(1);
  });

  it('is undefined when a layer has no unary form: such a chain runs one-message calls as streams', () => {
    const order: string[] = [];
    const streamOnly: ClientMiddleware = (call, options, next) => next(call, options);
    expect(composeUnary([layer('a', order), streamOnly], async () => 'x')).to.equal(undefined);
    expect(composeUnary([layer('a', order)], async () => 'x')).to.be.a('function');
  });
});
