// What a guide shows as a sample's output, compared with what the sample printed. The shown
// text is the printed text line for line, except for three kinds of stand-in, so that a reader
// sees a plausible value where a run prints its own:
// - `…` alone on a line stands for any number of lines (none included);
// - `ba707083-…` (eight hex digits, a hyphen, an ellipsis) for any UUID;
// - a UTC timestamp (`2026-11-23T16:49:31.994Z`) for any such timestamp;
// - `…` anywhere else in a line for any text within that line.

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const TIMESTAMP = '\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(?:\\.\\d+)?Z';
const STAND_INS = /([0-9a-f]{8}-…)|(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z)|(…)/g;

/** A UUID shortened as the guides write one that a run chooses: `ba707083-…`. */
export const SHORT_UUID = /\b[0-9a-f]{8}-…/g;
/** Any full UUID in printed text. */
export const FULL_UUID = new RegExp(UUID, 'g');

type Pattern = RegExp | 'any lines';

function patternOf(line: string): Pattern {
  if (line.trim() === '…') return 'any lines';
  let source = '';
  let at = 0;
  for (const match of line.matchAll(STAND_INS)) {
    source += escape(line.slice(at, match.index));
    source += match[1] ? UUID : match[2] ? TIMESTAMP : '.*?';
    at = match.index! + match[0].length;
  }
  source += escape(line.slice(at));
  return new RegExp(`^${source}$`);
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function lines(text: string): string[] {
  const all = text.split('\n').map((line) => line.trimEnd());
  while (all.length > 0 && all.at(-1) === '') all.pop();
  while (all.length > 0 && all[0] === '') all.shift();
  return all;
}

/**
 * Undefined when `printed` is what `shown` shows; otherwise what differs, for a failure
 * message: the first shown line that no printed line in its place matches.
 */
export function outputDifference(shown: string, printed: string): string | undefined {
  const patterns = lines(shown).map(patternOf);
  const actual = lines(printed);
  // furthest[i]: the furthest printed line reached while matching shown line i, for the message.
  let deepest = { pattern: 0, line: 0 };
  const memo = new Map<string, boolean>();
  const match = (p: number, a: number): boolean => {
    const key = `${p},${a}`;
    const known = memo.get(key);
    if (known !== undefined) return known;
    if (p > deepest.pattern || (p === deepest.pattern && a > deepest.line)) {
      deepest = { pattern: p, line: a };
    }
    let result: boolean;
    if (p === patterns.length) result = a === actual.length;
    else {
      const pattern = patterns[p]!;
      if (pattern === 'any lines') {
        result = false;
        for (let skip = a; skip <= actual.length && !result; skip++) result = match(p + 1, skip);
      } else {
        result = a < actual.length && pattern.test(actual[a]!) && match(p + 1, a + 1);
      }
    }
    memo.set(key, result);
    return result;
  };
  if (match(0, 0)) return undefined;
  const shownLine = lines(shown)[deepest.pattern];
  const printedLine = actual[deepest.line];
  return shownLine === undefined
    ? `it printed more than the guide shows, from: ${JSON.stringify(printedLine)}`
    : printedLine === undefined
      ? `it printed less than the guide shows: nothing for ${JSON.stringify(shownLine)}`
      : `the guide shows ${JSON.stringify(shownLine)} where it printed ${JSON.stringify(printedLine)}`;
}
