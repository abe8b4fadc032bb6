// The shape of the docs: a README that stays a front door, a guide list that names every guide,
// guides that open by saying whom they are for, and a settings table that lists every setting
// the server has, as the server names it.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { SETTINGS } from '@shameless/server';
import { parseMarkdown } from '../src/markdown.js';
import { REPO } from '../src/repo.js';

const read = (path: string) => readFileSync(join(REPO, path), 'utf8');
const guideFiles = readdirSync(join(REPO, 'docs'))
  .filter((name) => name.endsWith('.md'))
  .map((name) => `docs/${name}`);

describe('the README and the guides', () => {
  it('the README stays a front door: at most 300 lines', () => {
    expect(read('README.md').split('\n').length).to.be.at.most(300);
  });

  it('the README links every guide in docs/', () => {
    const linked = new Set(
      parseMarkdown(read('README.md')).links.map((link) => link.target.split('#')[0]),
    );
    expect(guideFiles.filter((guide) => !linked.has(guide))).to.deep.equal([]);
  });

  for (const guide of guideFiles) {
    it(`${guide} opens with its title and a paragraph saying whom it is for`, () => {
      const [title, blank, first] = read(guide).split('\n');
      expect(title, 'a title').to.match(/^# \S/);
      expect(blank).to.equal('');
      expect(first, 'a paragraph').to.match(/^[A-Z`[]/);
    });
  }

  it('the settings table of docs/configuration.md lists every setting, as the server names it', () => {
    const rows = read('docs/configuration.md')
      .split('\n')
      .filter((line) => line.startsWith('| `--'))
      .map((line) => {
        const [flag = '', key = '', env = ''] = line
          .split('|')
          .slice(1)
          .map((cell) => cell.trim());
        return `${flag} ${key} ${env.split(' ')[0]}`;
      });
    const settings = Object.entries(SETTINGS).map(
      ([key, setting]) => `\`${setting.flag}\` \`${key}\` \`${setting.env}\``,
    );
    expect(rows).to.deep.equal(settings);
  });
});
