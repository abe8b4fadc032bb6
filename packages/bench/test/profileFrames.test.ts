// The top frames a closing note quotes come from real V8 profiles of this process: a function
// that does nearly all the work must lead the list under its own name, located in its
// TypeScript source (mapped back from the compiled file), and summing profiles sums samples.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  type ProfileFrame,
  formatProfileSummary,
  profileClockMicros,
  summariseProfiles,
} from '../src/measure/profileFrames.js';
import { SdkProfiler } from '../src/measure/sdkProfiler.js';
import { SourceLocator } from '../src/measure/sourceLocations.js';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '../../../..');

/** Spins for `ms` of wall time, looking at the clock rarely: the frame the profile must find. */
function spinForProfile(ms: number): number {
  const until = Date.now() + ms;
  let sum = 0;
  while (Date.now() < until) {
    for (let i = 0; i < 100_000; i++) sum += Math.sqrt(sum + i);
  }
  return sum;
}

describe('profile frames', () => {
  const directories: string[] = [];
  after(async () => {
    for (const directory of directories) await rm(directory, { recursive: true, force: true });
  });

  it('puts the busiest frame first, at its TypeScript file and line, summed over profiles', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'bench-profile-'));
    directories.push(directory);
    const profiler = new SdkProfiler(directory, 'test');
    let between = 0;
    try {
      await profiler.profile('first', async () => void spinForProfile(300));
      between = profileClockMicros();
      await profiler.profile('second', async () => void spinForProfile(300));
    } finally {
      profiler.close();
    }
    assert.deepEqual(profiler.paths, [
      join(directory, 'test-first.cpuprofile'),
      join(directory, 'test-second.cpuprofile'),
    ]);

    const locator = new SourceLocator(REPO);
    const both = await summariseProfiles(profiler.paths, locator, { top: 5 });
    // The spinning is this file's: once V8 inlines spinForProfile, its samples land on the
    // caller, an arrow function of this file too, so the location is what is certain.
    const top = both.frames[0]!;
    assert.match(top.location, /^packages\/bench\/test\/profileFrames\.test\.ts:\d+$/);
    const thisFile = both.frames
      .filter((frame) => frame.location.startsWith('packages/bench/test/profileFrames.test.ts:'))
      .reduce((sum, frame) => sum + frame.share, 0);
    assert.ok(thisFile > 0.5 && thisFile <= 1, `this file's share of busy samples: ${thisFile}`);
    assert.ok(
      both.frames.every((frame, i) => i === 0 || frame.samples <= both.frames[i - 1]!.samples),
    );

    const all = Number.MAX_SAFE_INTEGER;
    const first = await summariseProfiles([profiler.paths[0]!], locator, { top: all });
    const second = await summariseProfiles([profiler.paths[1]!], locator, { top: all });
    assert.equal(both.profiles, 2);
    assert.equal(both.samples, first.samples + second.samples);
    // Counted from a time between the two: the second's samples alone.
    const fromBetween = await summariseProfiles(profiler.paths, locator, {
      top: all,
      fromMicros: between,
    });
    assert.ok(first.samples > 0 && second.samples > 0);
    assert.equal(fromBetween.samples, second.samples);
    const samplesOf = (frames: readonly ProfileFrame[]) =>
      frames
        .filter(
          (frame) => frame.functionName === top.functionName && frame.location === top.location,
        )
        .reduce((sum, frame) => sum + frame.samples, 0);
    assert.equal(top.samples, samplesOf(first.frames) + samplesOf(second.frames));
    assert.ok(
      formatProfileSummary('Test', both).includes(
        `| ${top.functionName.padEnd(Math.max(...both.frames.map((f) => f.functionName.length), 8))} | ${top.location}`,
      ),
    );
  });
});
