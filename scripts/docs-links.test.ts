// The Markdown files speak of the project alone and their links hold: every relative link or image in a tracked
// .md file names a tracked file or folder inside the repository (and, for a Markdown target, an anchor that one of
// its headings makes); none leaves the repository. The docs, and the comments of the code and scripts, carry no
// numbering of work passes ("stop 3", "call 5"), no issue numbers and no names of the tools that lent machines.
// README.md stays short. No GPU.

import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = new URL('../', import.meta.url).pathname;
const tracked = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' }).split('\0').filter(Boolean);
const files = new Set(tracked);
const folders = new Set(
  tracked.flatMap((f) =>
    f
      .split('/')
      .slice(0, -1)
      .map((_, i, parts) => parts.slice(0, i + 1).join('/')),
  ),
);
const markdown = tracked.filter((f) => f.endsWith('.md'));
/** Parts of another page, written with that page's links: the soak report is RELIABILITY.md's "Long runs". */
const FRAGMENTS = new Set(['bench/results/soak/soak.md']);
const read = (f: string) => readFileSync(join(ROOT, f), 'utf8');

/** The text outside fenced code blocks and inline code, where links are links. */
const prose = (md: string): string => md.replace(/^(```|~~~)[\s\S]*?^\1/gm, '').replace(/`[^`\n]*`/g, '');

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
const slug = (heading: string): string =>
  heading
    .trim()
    .toLowerCase()
    .replace(/`/g, '')
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');

function anchors(md: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of md.replace(/^(```|~~~)[\s\S]*?^\1/gm, '').matchAll(/^#{1,6} (.+)$/gm)) {
    const s = slug(m[1]);
    const n = seen.get(s) ?? 0;
    seen.set(s, n + 1);
    out.add(n ? `${s}-${n}` : s);
  }
  return out;
}

/** Every problem with the links of one Markdown file. */
function linkProblems(file: string): string[] {
  const problems: string[] = [];
  for (const m of prose(read(file)).matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
    const target = m[1];
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
    const [path, anchor] = target.split('#') as [string, string | undefined];
    const resolved = path ? normalize(join(dirname(file), decodeURIComponent(path))).replace(/\/$/, '') : file;
    if (resolved.startsWith('..') || resolved.startsWith('/')) {
      problems.push(`${file}: ${target} leaves the repository`);
      continue;
    }
    if (!files.has(resolved) && !folders.has(resolved)) {
      problems.push(`${file}: ${target} names nothing tracked (${resolved})`);
      continue;
    }
    if (anchor && resolved.endsWith('.md') && !anchors(read(resolved)).has(anchor))
      problems.push(`${file}: ${target}: no heading makes #${anchor}`);
  }
  return problems;
}

/** Words that belong to how the work was organised, not to the project. */
export const FORBIDDEN: Array<[RegExp, string]> = [
  [/\bstop[ -]\d+\b/i, 'a work pass number ("stop N")'],
  [/\bcall \d+\b|\bcalls \d+\s*(?:-|–|and|,)\s*\d+/i, 'a machine-run number ("call N")'],
  [/\bdevice (?:tool|calls?)\b/i, 'the name of the tool that lent machines'],
  [/\.\.\/shared\//, 'a path outside the repository'],
  [/\bissues? \d+\b|\(#\d+\)|#\d+'s\b/i, 'an issue number'],
];

/** The comment text of a source line ('' when none): after //, a block comment's line, or a shell # comment. */
function comment(line: string, shell: boolean): string {
  if (shell) return /^\s*#/.test(line) ? line : (/\s#\s.*$/.exec(line)?.[0] ?? '');
  const t = line.trim();
  if (t.startsWith('*') || t.startsWith('/*')) return t;
  const i = line.indexOf('//');
  return i >= 0 && !/https?:$/.test(line.slice(0, i)) ? line.slice(i) : '';
}

function wordProblems(file: string): string[] {
  const shell = file.endsWith('.sh');
  const md = file.endsWith('.md');
  const problems: string[] = [];
  read(file)
    .split('\n')
    .forEach((line, i) => {
      const text = md ? line : comment(line, shell);
      for (const [re, what] of FORBIDDEN) if (re.test(text)) problems.push(`${file}:${i + 1}: ${what}: ${text.trim().slice(0, 160)}`);
    });
  return problems;
}

const CODE_DIRS = ['src/', 'kernels/', 'bench/', 'scripts/', 'e2e/'];
const code = tracked.filter(
  (f) => CODE_DIRS.some((d) => f.startsWith(d)) && /\.(ts|tsx|mjs|sh)$/.test(f) && f !== 'scripts/docs-links.test.ts',
);

describe('documentation', () => {
  it('every relative link and image in a Markdown file names a tracked file inside the repository', () => {
    expect(markdown.filter((f) => !FRAGMENTS.has(f)).flatMap(linkProblems)).toEqual([]);
  });

  it('the Markdown files and the comments of code and scripts speak of the project alone', () => {
    expect([...markdown, ...code].flatMap(wordProblems)).toEqual([]);
  });

  it('README.md stays short and keeps the set-up', () => {
    const readme = read('README.md');
    expect(readme.split('\n').length).toBeLessThanOrEqual(250);
    for (const need of ['npm ci && npm start', 'npm ci && npm test', 'chromium', 'libvulkan1']) expect(readme).toContain(need);
  });

  it('the checks catch what they are for', () => {
    const hits = (s: string) => FORBIDDEN.filter(([re]) => re.test(s)).length;
    for (const bad of [
      'measured in stop 22',
      'stop-19 code',
      'call 3 of the run',
      'calls 1-3 and 5-8',
      'the device tool',
      'see ../shared/device/x',
      'issue 16',
      '(#15)',
    ])
      expect(hits(bad), bad).toBe(1);
    for (const good of [
      'Pause and Stop act at once',
      'it calls 3 helpers',
      'a recall of 0.4',
      'the session object',
      'stop the run after 3 iterations',
    ])
      expect(hits(good), good).toBe(0);
    expect(slug('`marft train`')).toBe('marft-train');
    expect(slug('Credit, KL and early stop: the options')).toBe('credit-kl-and-early-stop-the-options');
  });
});
