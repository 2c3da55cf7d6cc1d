/**
 * Every relative link of README.md and docs/*.md leads somewhere: the file or folder exists, and
 * an `#anchor` (on the same page or into another Markdown file) names a heading of that page as
 * GitHub renders it. The README is a front door into docs/, so a page renamed or a heading reworded
 * must not leave a reader at a dead link.
 *
 * GitHub's anchor of a heading (the algorithm of the `github-slugger` package): the heading's
 * rendered text (code spans and link texts as text, no Markdown), lower-cased, every character
 * that is not a letter, mark, digit, connector punctuation (`_`), hyphen or space dropped, each
 * space a hyphen; a heading whose anchor was taken on the page gets `-1`, `-2`, … appended.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');

/** GitHub's anchor for a heading's Markdown text, before the de-duplicating suffix. */
function slug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // a link or image: its text
    .replace(/<[^>]+>/g, '') // inline HTML
    .replace(/`([^`]*)`/g, '$1'); // a code span: its content
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** The Markdown lines outside fenced code blocks, with their 1-based numbers. */
function proseLines(markdown: string): { line: number; text: string }[] {
  const lines: { line: number; text: string }[] = [];
  let fence: string | undefined;
  markdown.split('\n').forEach((text, i) => {
    const marker = /^\s*(`{3,}|~{3,})/.exec(text)?.[1];
    if (fence) {
      if (marker?.startsWith(fence)) fence = undefined;
    } else if (marker) fence = marker;
    else lines.push({ line: i + 1, text });
  });
  return lines;
}

/** The anchors of a Markdown file's headings, as GitHub makes them. */
function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const { text } of proseLines(markdown)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(text)?.[1];
    if (heading === undefined) continue;
    const base = slug(heading);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

/** A link of a page: where it is and its target as written. */
interface Link {
  file: string;
  line: number;
  target: string;
}

/** The inline links and images of a Markdown file, outside code blocks and code spans. */
function linksOf(file: string): Link[] {
  const links: Link[] = [];
  for (const { line, text } of proseLines(readFileSync(join(ROOT, file), 'utf8'))) {
    const prose = text.replace(/`[^`]*`/g, '``');
    for (const m of prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g))
      links.push({ file, line, target: m[1]! });
  }
  return links;
}

/** Why a link does not resolve, or undefined when it does. External URLs are not followed. */
function problemOf(link: Link): string | undefined {
  if (/^[a-z][a-z\d+.-]*:/i.test(link.target)) return undefined;
  const [path, anchor] = link.target.split('#', 2) as [string, string | undefined];
  const target = path === '' ? join(ROOT, link.file) : resolve(ROOT, dirname(link.file), decodeURIComponent(path));
  if (relative(ROOT, target).startsWith('..')) return 'leaves the repository';
  if (!existsSync(target)) return `${relative(ROOT, target)} does not exist`;
  if (anchor === undefined) return undefined;
  if (!target.endsWith('.md') || statSync(target).isDirectory()) return undefined;
  return anchorsOf(readFileSync(target, 'utf8')).has(anchor)
    ? undefined
    : `no heading of ${relative(ROOT, target)} has the anchor #${anchor}`;
}

const PAGES = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`),
];

describe('links of README.md and docs/', () => {
  it('computes anchors as GitHub does', () => {
    expect(slug('The admin API (`/admin/v1`)')).toBe('the-admin-api-adminv1');
    expect(slug('`SIGIL_DATA_KEY` and its rotation')).toBe('sigil_data_key-and-its-rotation');
    expect(slug('DPoP: sender-constrained tokens (RFC 9449)')).toBe('dpop-sender-constrained-tokens-rfc-9449');
    expect(slug('Individual claims and `acr`')).toBe('individual-claims-and-acr');
    expect(slug('1. Create an organization and make alice a member')).toBe(
      '1-create-an-organization-and-make-alice-a-member',
    );
    expect(slug('Sigil inside your app: [`sigilPlugin`](x.md)')).toBe('sigil-inside-your-app-sigilplugin');
    expect([...anchorsOf('# A\n## Sizing\n```\n# not a heading\n```\n### Sizing\n')]).toEqual([
      'a',
      'sizing',
      'sizing-1',
    ]);
  });

  it('finds the links it checks', () => {
    const links = PAGES.flatMap(linksOf);
    expect(links.filter((l) => l.file === 'README.md' && l.target.startsWith('docs/')).length).toBeGreaterThan(20);
    expect(links.some((l) => l.target.includes('#'))).toBe(true);
  });

  it.each(PAGES)('every relative link and anchor of %s resolves', (page) => {
    const broken = linksOf(page).flatMap((link) => {
      const problem = problemOf(link);
      return problem ? [`${link.file}:${link.line} (${link.target}): ${problem}`] : [];
    });
    expect(broken).toEqual([]);
  });
});
