// What the checker reads in a Markdown file: its fenced blocks (each with the sample marker
// before it, if any), its headings and its links. A small reader of the CommonMark the guides
// use, not a full parser: fences of ``` or ~~~ (indented, in a list item, too), ATX headings,
// inline links and reference definitions, with code spans and fenced blocks never read as
// links.

/** A fenced block, its lines without the fence's indentation. */
export interface Fence {
  /** 1-based line of the opening fence. */
  readonly line: number;
  /** The first word of the info string (`ts`, `sh`, `json`, …), lowercased; '' for none. */
  readonly language: string;
  readonly text: string;
  /**
   * The marker right before the fence (`<!-- sample: output -->` gives `output`), with blank
   * lines at most between them; undefined when there is none.
   */
  readonly marker?: { readonly line: number; readonly text: string };
}

export interface Heading {
  readonly line: number;
  readonly level: number;
  /** The heading's text as written (inline code, emphasis and links still in it). */
  readonly text: string;
}

export interface Link {
  readonly line: number;
  readonly target: string;
}

export interface MarkdownFile {
  readonly fences: readonly Fence[];
  readonly headings: readonly Heading[];
  readonly links: readonly Link[];
  /** The content of every inline code span outside fences, with its line. */
  readonly codeSpans: readonly { readonly line: number; readonly text: string }[];
  /** `<!-- sample: … -->` markers that no fence follows. */
  readonly orphanMarkers: readonly { readonly line: number; readonly text: string }[];
  /** `id`s and `name`s of HTML anchors (`<a id="…">`), which links may target as headings. */
  readonly htmlAnchors: readonly string[];
}

const FENCE = /^(\s*)(`{3,}|~{3,})(.*)$/;
const MARKER = /^\s*<!--\s*sample:\s*([\s\S]*?)\s*-->\s*$/;
const HEADING = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const REFERENCE = /^ {0,3}\[[^\]]+\]:\s*(\S+)/;

export function parseMarkdown(source: string): MarkdownFile {
  const lines = source.split('\n');
  const fences: Fence[] = [];
  const headings: Heading[] = [];
  const links: Link[] = [];
  const codeSpans: { line: number; text: string }[] = [];
  const orphanMarkers: { line: number; text: string }[] = [];
  const htmlAnchors: string[] = [];
  let marker: { line: number; text: string } | undefined;

  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const open = FENCE.exec(line);
    if (open) {
      const [, indent = '', ticks = '', info = ''] = open;
      const body: string[] = [];
      let j = i + 1;
      for (; j < lines.length; j++) {
        const close = /^\s*(`{3,}|~{3,})\s*$/.exec(lines[j]!);
        if (close && close[1]![0] === ticks[0] && close[1]!.length >= ticks.length) break;
        const content = lines[j]!;
        body.push(content.startsWith(indent) ? content.slice(indent.length) : content.trimStart());
      }
      fences.push({
        line: i + 1,
        language: (info.trim().split(/\s+/)[0] ?? '').toLowerCase(),
        text: body.join('\n'),
        ...(marker ? { marker } : {}),
      });
      marker = undefined;
      i = j;
      continue;
    }
    const markerMatch = MARKER.exec(line);
    if (markerMatch) {
      if (marker) orphanMarkers.push(marker);
      marker = { line: i + 1, text: markerMatch[1]! };
      continue;
    }
    if (line.trim() !== '' && marker) {
      orphanMarkers.push(marker);
      marker = undefined;
    }
    const heading = HEADING.exec(line);
    if (heading) headings.push({ line: i + 1, level: heading[1]!.length, text: heading[2]! });
    for (const anchor of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) htmlAnchors.push(anchor[1]!);
    const reference = REFERENCE.exec(line);
    if (reference) links.push({ line: i + 1, target: reference[1]! });
    // Code spans are not links; what is left of the line is read for links.
    let rest = '';
    let at = 0;
    for (const span of line.matchAll(/(`+)(.+?)\1/g)) {
      codeSpans.push({ line: i + 1, text: span[2]!.trim() });
      rest += line.slice(at, span.index) + ' ';
      at = span.index! + span[0].length;
    }
    rest += line.slice(at);
    for (const link of rest.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      links.push({ line: i + 1, target: link[1]! });
    }
    for (const link of rest.matchAll(/<(https?:\/\/[^>\s]+)>/g)) {
      links.push({ line: i + 1, target: link[1]! });
    }
  }
  if (marker) orphanMarkers.push(marker);
  return { fences, headings, links, codeSpans, orphanMarkers, htmlAnchors };
}

/**
 * GitHub's anchor for a heading (github-slugger): the text as rendered (code spans, emphasis
 * and links reduced to their text), lowercased, every character that is not a letter, a
 * digit, a mark, `_`, `-` or a space dropped, and spaces made hyphens. Repeats of an anchor
 * in one file get `-1`, `-2`, … (see {@link anchorsOf}).
 */
export function slug(headingText: string): string {
  // Code spans are kept as written; only the text between them has markup to drop.
  const rendered = headingText
    .split(/(`[^`]*`)/)
    .map((part) =>
      part.startsWith('`')
        ? part.slice(1, -1)
        : part
            .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
            .replace(/<[^>]+>/g, '')
            .replace(/(\*\*|__)(.*?)\1/g, '$2')
            .replace(/(^|\W)[*_](\S.*?)[*_](?=\W|$)/g, '$1$2'),
    )
    .join('');
  return rendered
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** Every anchor a file's headings (and HTML anchors) give, as GitHub numbers repeats. */
export function anchorsOf(file: MarkdownFile): Set<string> {
  const anchors = new Set<string>(file.htmlAnchors);
  const seen = new Map<string, number>();
  for (const heading of file.headings) {
    const base = slug(heading.text);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}
