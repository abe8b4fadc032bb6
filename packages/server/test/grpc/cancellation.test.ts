// A call's cancellation (cancellation.ts): read as a flag, its AbortSignal made only when asked
// for, and the same answers whether the signal was asked for before the cancel, after it, or
// never.
import { expect } from 'chai';
import { CallCancellation } from '../../src/grpc/call/cancellation.js';

describe('CallCancellation', () => {
  it('is not aborted until cancelled, and has no reason', () => {
    const cancellation = new CallCancellation();
    expect(cancellation.aborted).to.equal(false);
    expect(cancellation.reason).to.equal(undefined);
    expect(cancellation.signal.aborted).to.equal(false);
  });

  it('gives a signal asked for after the cancel already aborted, with its reason', () => {
    const cancellation = new CallCancellation();
    const reason = new Error('the client cancelled');
    cancellation.abort(reason);
    expect(cancellation.aborted).to.equal(true);
    expect(cancellation.reason).to.equal(reason);
    expect(cancellation.signal.aborted).to.equal(true);
    expect(cancellation.signal.reason).to.equal(reason);
  });

  it('aborts a signal asked for before the cancel, once, and keeps the first reason', () => {
    const cancellation = new CallCancellation();
    const heard: unknown[] = [];
    cancellation.signal.addEventListener('abort', () => heard.push(cancellation.signal.reason));
    const first = Symbol('the deadline passed');
    cancellation.abort(first);
    cancellation.abort(Symbol('the stream ended'));
    expect(heard).to.deep.equal([first]);
    expect(cancellation.reason).to.equal(first);
  });

  it('gives a cancel without a reason the AbortError an AbortController gives, one for both', () => {
    for (const signalFirst of [false, true]) {
      const cancellation = new CallCancellation();
      const signal = signalFirst ? cancellation.signal : undefined;
      cancellation.abort();
      const reason = cancellation.reason as DOMException;
      expect(reason.name).to.equal('AbortError');
      expect((signal ?? cancellation.signal).reason).to.equal(reason);
    }
  });

  it("follows a stream's signal, and is cancelled only through it", () => {
    const stream = new AbortController();
    const cancellation = new CallCancellation(stream.signal);
    expect(cancellation.signal).to.equal(stream.signal);
    expect(cancellation.aborted).to.equal(false);
    expect(() => cancellation.abort()).to.throw(TypeError, 'through that signal');
    const shutdown = Symbol('the server is shutting down');
    stream.abort(shutdown);
    expect(cancellation.aborted).to.equal(true);
    expect(cancellation.reason).to.equal(shutdown);
  });
});
