// Running one layer on its own: a call, and a `next` that answers as the test says, recording
// the options each attempt reached it with.

import {
  type CallNext,
  type ClientCall,
  type ClientCallOptions,
  type ClientMiddleware,
  onlyMessage,
} from '../../../src/transport/call/compose.js';

export const GET_CELL: ClientCall = { method: 'getCell', request: {}, shape: 'unary' };
export const EACH: ClientCall = { method: 'each', request: {}, shape: 'serverStream' };
export const READ = { idempotent: true, hedgeable: true } as const;

/** A `next` that runs `answer` for each attempt (its n-th call is attempt n). */
export function scriptedNext(
  answer: (attempt: number, options: ClientCallOptions) => AsyncIterable<unknown>,
): CallNext & { readonly seen: ClientCallOptions[] } {
  const seen: ClientCallOptions[] = [];
  const next = (_call: ClientCall, options: ClientCallOptions) => {
    seen.push(options);
    return answer(seen.length - 1, options);
  };
  return Object.assign(next, { seen });
}

/** An answer of these messages. */
export async function* messages(...values: unknown[]): AsyncGenerator<unknown> {
  for (const value of values) yield value;
}

/** An answer that fails with `error` (after `before` messages). */
export async function* failing(error: unknown, ...before: unknown[]): AsyncGenerator<unknown> {
  for (const value of before) yield value;
  throw error;
}

/** How `run` drives a one-message call (unary, collect) through a layer that has both forms. */
let oneMessageCalls: 'by promises' | 'as streams' = 'by promises';

/**
 * `body`'s tests twice: one-message calls run by the layer's unary form (as the transport runs
 * them), then through its generator (as a chain holding an interceptor without one runs them).
 */
export function describeForms(title: string, body: () => void): void {
  for (const form of ['by promises', 'as streams'] as const) {
    describe(`${title}, one-message calls ${form}`, function () {
      before(() => (oneMessageCalls = form));
      body();
    });
  }
}

/** Runs `layer` over `next`; resolves with every message, or rejects with the error. */
export async function run(
  layer: ClientMiddleware,
  next: CallNext,
  options: ClientCallOptions = READ,
  call: ClientCall = GET_CELL,
): Promise<unknown[]> {
  const oneMessage = call.shape === 'unary' || call.shape === 'collect';
  if (oneMessageCalls === 'by promises' && oneMessage && layer.unary !== undefined) {
    return [
      await layer.unary(call, options, (each, eachOptions) =>
        onlyMessage(each, next(each, eachOptions)),
      ),
    ];
  }
  const received: unknown[] = [];
  for await (const message of layer(call, options, next)) received.push(message);
  return received;
}

export { rejection as failure } from '../../support/storeFixture.js';
