import { expect } from 'chai';
import {
  composeMiddleware,
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
