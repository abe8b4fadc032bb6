// Issue 54's hold target is read off the mover's holds and the writes of the same run: checked
// here against results built by hand, on both sides of the bound, with a refusal failing it.
import assert from 'node:assert/strict';
import { formatMovesRows } from '../src/report/movesReport.js';
import type { CutOverResult, WritesDuring } from '../src/workloads/cutOversUnderWrites.js';
import type { MovesResult } from '../src/workloads/shardMoveCopy.js';

const writes = (p99: number, refused = 0): WritesDuring => ({
  count: 1000,
  p50: 30,
  p99,
  p999: p99,
  max: p99 + 10,
  refused,
});

const underWrites = (holds: number[], refused = 0): CutOverResult => ({
  plan: { moving: [1, 2, 3, 4], writesPerSecond: 500, bodyBytes: 1024 },
  staying: [5, 6, 7, 8],
  holds: holds.map((holdMs, i) => ({ shard: i + 1, holdMs })),
  holdP99Ms: Math.max(...holds),
  moved: writes(160, refused),
  stayed: writes(170),
  ...(refused > 0 ? { firstRefusal: 'shard 1: 14 UNAVAILABLE: gone' } : {}),
  moveMs: 2000,
});

const moves = (held?: CutOverResult): MovesResult => ({
  plan: { cells: 20_000, bodyBytes: 1024 },
  copyMs: 1000,
  copyCellsPerSecond: 20_000,
  moveMs: 1300,
  holdMs: 20,
  dumpMs: 1500,
  dumpCellsPerSecond: 13_333,
  ...(held ? { underWrites: held } : {}),
});

const holdLine = (text: string) =>
  text.split('\n').find((line) => line.includes('writes held at the cut-over: p99'));

describe("the shard moves' report (issue 54)", () => {
  it('meets the hold target at 100 ms over the shards moved, not above', () => {
    assert.match(
      holdLine(formatMovesRows(moves(underWrites([40, 100, 30, 20]))))!,
      /^ {2}met {6}.*p99 100 ms over 4 shards, 0 refused/,
    );
    assert.match(
      holdLine(formatMovesRows(moves(underWrites([40, 101, 30, 20]))))!,
      /NOT met +writes held at the cut-over: p99 101 ms/,
    );
  });

  it('fails the hold target when a write was refused, and says which', () => {
    const text = formatMovesRows(moves(underWrites([40, 50, 30, 20], 3)));
    assert.match(holdLine(text)!, /NOT met.*3 refused/);
    assert.match(text, /first refused: shard 1: 14 UNAVAILABLE: gone/);
  });

  it("prints each shard's hold and the writes beside the shards that stayed", () => {
    const text = formatMovesRows(moves(underWrites([40, 50, 30, 20])));
    assert.match(text, /shard 1 40 ms, shard 2 50 ms, shard 3 30 ms, shard 4 20 ms/);
    assert.match(text, /to the shards moved +1000 +30\.0 +160\.0 +170\.0 +0/);
    assert.match(text, /to the shards that stayed \(baseline\) +1000 +30\.0 +170\.0 +180\.0 +0/);
  });

  it('says the hold target was not measured when the run had too few shards for the cut-overs', () => {
    const text = formatMovesRows(moves());
    assert.equal(holdLine(text), undefined);
    assert.match(
      text,
      /not measured {2}writes held at the cut-over under writes \(the cut-overs need --shards-count 9 or more\)/,
    );
    assert.match(text, /met {6}mover copy 20,000 cells\/s/);
  });
});
