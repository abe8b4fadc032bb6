// The top frames of CPU profiles by self time, read from the .cpuprofile JSON V8 writes (nodes
// of the call tree, and the node each sample landed in), so a note on a change can quote where
// the time goes without opening a flame graph. A function's samples are summed over every call
// path it appears on; several profiles (one per SDK run) are summed the same way. The server's
// profile covers its whole life; only its samples from the first measured run on are counted,
// so that the warm-up, where V8 compiles the server's code, does not stand in for the runs.
import { readFile } from 'node:fs/promises';
import type { SourceLocator } from './sourceLocations.js';

/** One function's self time. */
export interface ProfileFrame {
  readonly functionName: string;
  /** `file:line`, in the TypeScript source where there is one. */
  readonly location: string;
  readonly samples: number;
  /** Its samples over the busy ones (every sample but `(idle)`). */
  readonly share: number;
}

export interface ProfileSummary {
  readonly profiles: number;
  readonly samples: number;
  /** Samples with nothing running, over all samples. */
  readonly idleShare: number;
  /** The top frames by self time, most first. */
  readonly frames: readonly ProfileFrame[];
}

/** The parts of V8's profile format read here. */
interface CpuProfile {
  readonly nodes: readonly {
    readonly id: number;
    readonly callFrame: {
      readonly functionName: string;
      readonly url: string;
      readonly lineNumber: number;
      readonly columnNumber: number;
    };
    readonly hitCount?: number;
  }[];
  readonly samples?: readonly number[];
  /** When the profile started, in µs of the clock profileClockMicros reads. */
  readonly startTime?: number;
  /** Each sample's time after the one before (the first's after startTime), in µs. */
  readonly timeDeltas?: readonly number[];
}

/**
 * Now, in µs of the clock V8's CPU profiles keep time with (the system's monotonic clock, in
 * every process alike): a time to compare a profile's samples with.
 */
export function profileClockMicros(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

export interface SummaryOptions {
  /** Frames to keep (default 15). */
  readonly top?: number;
  /** Count only samples taken at or after this time (profileClockMicros). */
  readonly fromMicros?: number;
}

const IDLE = '(idle)';

export async function summariseProfiles(
  paths: readonly string[],
  locator: SourceLocator,
  { top = 15, fromMicros }: SummaryOptions = {},
): Promise<ProfileSummary> {
  const byFrame = new Map<string, { functionName: string; location: string; samples: number }>();
  let total = 0;
  let idle = 0;
  for (const path of paths) {
    const profile = JSON.parse(await readFile(path, 'utf8')) as CpuProfile;
    const hits = new Map<number, number>();
    if (profile.samples) {
      const times = fromMicros === undefined ? undefined : sampleTimes(profile);
      profile.samples.forEach((id, i) => {
        if (times && times[i]! < fromMicros!) return;
        hits.set(id, (hits.get(id) ?? 0) + 1);
      });
    } else {
      for (const node of profile.nodes) hits.set(node.id, node.hitCount ?? 0);
    }
    for (const node of profile.nodes) {
      const samples = hits.get(node.id) ?? 0;
      if (samples === 0) continue;
      total += samples;
      const { functionName, url, lineNumber, columnNumber } = node.callFrame;
      if (functionName === IDLE) {
        idle += samples;
        continue;
      }
      const key = `${functionName}\u0000${url}\u0000${lineNumber}\u0000${columnNumber}`;
      const frame = byFrame.get(key);
      if (frame) frame.samples += samples;
      else {
        byFrame.set(key, {
          functionName: functionName || '(anonymous)',
          // (program) and (garbage collector) are V8's own entries, not functions.
          location: /^\(.*\)$/.test(functionName)
            ? ''
            : locator.locate(url, lineNumber, columnNumber),
          samples,
        });
      }
    }
  }
  const busy = total - idle;
  const frames = [...byFrame.values()]
    .sort((a, b) => b.samples - a.samples)
    .slice(0, top)
    .map((frame) => ({ ...frame, share: busy > 0 ? frame.samples / busy : 0 }));
  return {
    profiles: paths.length,
    samples: total,
    idleShare: total > 0 ? idle / total : 0,
    frames,
  };
}

/** Each sample's time: Infinity, so that every sample counts, in a profile without times. */
function sampleTimes(profile: CpuProfile): number[] {
  let time = profile.startTime ?? Infinity;
  const deltas = profile.timeDeltas ?? [];
  return (profile.samples ?? []).map((_, i) => (time += deltas[i] ?? 0));
}

/** The summary as a Markdown table under a title line. */
export function formatProfileSummary(title: string, summary: ProfileSummary): string {
  const header = `${title}: ${summary.samples.toLocaleString('en-US')} samples in ${summary.profiles} profile(s), ${(summary.idleShare * 100).toFixed(0)}% idle; top frames by self time, % of busy samples`;
  const rows = summary.frames.map((frame) => [
    frame.functionName,
    frame.location,
    `${(frame.share * 100).toFixed(1)}%`,
  ]);
  const columns = ['function', 'file:line', 'self'];
  const widths = columns.map((title, i) =>
    Math.max(title.length, ...rows.map((row) => row[i]!.length)),
  );
  const render = (cells: readonly string[]) =>
    `| ${cells.map((cell, i) => (i === 2 ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!))).join(' | ')} |`;
  const rule = `|${widths.map((width, i) => (i === 2 ? `${'-'.repeat(width + 1)}:` : '-'.repeat(width + 2))).join('|')}|`;
  return [header, '', render(columns), rule, ...rows.map(render)].join('\n');
}
