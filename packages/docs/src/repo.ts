// Where the checkout is, and which Markdown files the checker reads.
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The checkout's root (this file is packages/docs/dist/src/repo.js once built). */
export const REPO = join(dirname(fileURLToPath(import.meta.url)), '../../../..');

/**
 * The README and the guides, in the order a reader meets them on one store: the README, then
 * docs/*.md by name (docs/bench/ holds the bench's reports, not guides). Paths are relative to
 * the checkout.
 */
export function guides(): string[] {
  const docs = readdirSync(join(REPO, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`);
  return ['README.md', ...docs];
}

/** Every Markdown file git tracks (or would: untracked but not ignored), for the link check. */
export function markdownFiles(): string[] {
  const listed = execFileSync(
    'git',
    ['ls-files', '--cached', '--others', '--exclude-standard', '--', '*.md'],
    { cwd: REPO, encoding: 'utf8' },
  );
  return [...new Set(listed.split('\n').filter((path) => path !== ''))].sort();
}
