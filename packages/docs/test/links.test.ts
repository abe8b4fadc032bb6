// Every link of the repository's Markdown resolves: relative links to files, folders and
// headings (GitHub's anchors), line anchors of source files, paths written as code, and
// well-formed http(s) links (never fetched).
import { expect } from 'chai';
import { LinkChecker } from '../src/links.js';
import { REPO, markdownFiles } from '../src/repo.js';

describe('links in the Markdown of the repository', () => {
  const checker = new LinkChecker(REPO);

  for (const path of markdownFiles()) {
    it(`${path}: every link resolves`, () => {
      expect(checker.problems(path)).to.deep.equal([]);
    });
  }
});
