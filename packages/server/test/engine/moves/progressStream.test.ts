// The mover's progress as an async iterator: every event in order, then the command's answer
// or its failure.
import { expect } from 'chai';
import { progressStream } from '../../../src/engine/moves/progressStream.js';
import type { MoveProgress } from '../../../src/engine/moves/shardMover.js';

const event = (step: string): MoveProgress => ({
  moveId: 1,
  shard: 3,
  source: 0,
  target: 1,
  phase: 'copying',
  step,
  rowsCopied: 0,
  lag: 0,
});

describe('mover progress stream (pure)', () => {
  it('yields every event in order, told at once or later, then answers what the command answered', async () => {
    const stream = progressStream(async (tell) => {
      tell(event('created'));
      tell(event('copying'));
      await new Promise((resolve) => setTimeout(resolve, 5));
      tell(event('copied'));
      return 'done';
    });
    const steps: string[] = [];
    let answer: IteratorResult<MoveProgress, string>;
    while (!(answer = await stream.next()).done) steps.push(answer.value.step);
    expect(steps).to.deep.equal(['created', 'copying', 'copied']);
    expect(answer.value).to.equal('done');
  });

  it('throws the command’s failure after the events told before it', async () => {
    const steps: string[] = [];
    const failure = await (async () => {
      for await (const progress of progressStream(async (tell) => {
        tell(event('created'));
        await new Promise((resolve) => setTimeout(resolve, 1));
        throw new Error('verify found a difference');
      })) {
        steps.push(progress.step);
      }
    })().then(
      () => undefined,
      (error: unknown) => error as Error,
    );
    expect(steps).to.deep.equal(['created']);
    expect(failure?.message).to.equal('verify found a difference');
  });
});
