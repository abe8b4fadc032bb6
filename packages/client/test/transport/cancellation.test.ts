// A call's cancellation, which the layers watch instead of an AbortSignal: its watchers told once
// with its first reason, an AbortSignal made only when asked and aborted with it, and the links
// that make an attempt's follow its call's and a call's follow its caller's signal.
import { expect } from 'chai';
import {
  CallCancellation,
  linkedCancellation,
  watchAbort,
} from '../../src/transport/call/cancellation.js';

describe('call cancellation', () => {
  it('tells each watcher once, with its first reason, and no one who stopped watching', () => {
    const cancellation = new CallCancellation();
    const told: string[] = [];
    cancellation.onAbort(() => told.push(`a: ${String(cancellation.reason)}`));
    const stopB = cancellation.onAbort(() => told.push('b'));
    cancellation.onAbort(() => told.push('c'));
    stopB();
    stopB();
    expect(cancellation.aborted).to.equal(false);
    expect(cancellation.reason).to.equal(undefined);
    cancellation.abort('the deadline');
    cancellation.abort('a later abort');
    expect(told).to.deep.equal(['a: the deadline', 'c']);
    expect(cancellation.reason).to.equal('the deadline');
    // As an aborted AbortSignal's new listener: never called.
    cancellation.onAbort(() => told.push('late'))();
    expect(told).to.deep.equal(['a: the deadline', 'c']);
  });

  it('makes its AbortSignal when asked, aborted with it, before or after', () => {
    const before = new CallCancellation();
    const signal = before.signal;
    expect(before.signal).to.equal(signal);
    expect(signal.aborted).to.equal(false);
    const reason = new Error('caller left');
    before.abort(reason);
    expect(signal.aborted).to.equal(true);
    expect(signal.reason).to.equal(reason);

    const after = new CallCancellation();
    after.abort(reason);
    expect(after.signal.aborted).to.equal(true);
    expect(after.signal.reason).to.equal(reason);
  });

  it('follows cancellations and signals until unlinked, with the reason of the first', () => {
    const call = new CallCancellation();
    const interceptor = new AbortController();
    const attempt = linkedCancellation(call, interceptor.signal);
    interceptor.abort('the interceptor gave up');
    expect(attempt.cancellation.reason).to.equal('the interceptor gave up');
    call.abort('the deadline');
    expect(attempt.cancellation.reason).to.equal('the interceptor gave up');

    const parent = new CallCancellation();
    const unlinked = linkedCancellation(parent);
    unlinked.unlink();
    parent.abort('the deadline');
    expect(unlinked.cancellation.aborted).to.equal(false);

    // Cancelling the attempt alone (a hedge that lost) leaves the call.
    const call2 = new CallCancellation();
    const loser = linkedCancellation(call2);
    loser.cancellation.abort('another attempt answered first');
    expect(call2.aborted).to.equal(false);
  });

  it('is cancelled at once by a source already cancelled', () => {
    const done = new AbortController();
    done.abort('gone');
    expect(linkedCancellation(undefined, done.signal).cancellation.reason).to.equal('gone');
  });

  it("watches an AbortSignal's abort as a cancellation's, and stops on request", () => {
    const controller = new AbortController();
    const told: string[] = [];
    const stop = watchAbort(controller.signal, () => told.push('first'));
    watchAbort(controller.signal, () => told.push('second'));
    stop();
    controller.abort();
    expect(told).to.deep.equal(['second']);
    expect(() => watchAbort(undefined, () => told.push('never'))()).to.not.throw();
  });

  it("watches a signal of another realm or a polyfill's by what it has, not by its class", () => {
    // An EventTarget with the 'abort' event and no AbortSignal prototype, as a polyfill makes.
    const target = new EventTarget();
    const foreign = Object.assign(target, { aborted: false, reason: undefined as unknown });
    const told: string[] = [];
    const link = linkedCancellation(foreign as unknown as AbortSignal);
    watchAbort(foreign as unknown as AbortSignal, () => told.push('told'));
    foreign.aborted = true;
    foreign.reason = 'gone';
    target.dispatchEvent(new Event('abort'));
    expect(told).to.deep.equal(['told']);
    expect(link.cancellation.reason).to.equal('gone');
  });
});
