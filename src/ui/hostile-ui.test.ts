// Hostile text in what the lab renders: dataset records (DatasetPreview), error messages and hints
// (ErrorBox, which shows messages quoting file names and file content). Rendered with react-dom/server,
// the markup must hold the text escaped, never a live tag or attribute. A source scan keeps the UI free
// of the React escape hatches (dangerouslySetInnerHTML, innerHTML, insertAdjacentHTML, document.write).

import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { createElement } from 'react';
import { renderToString } from 'react-dom/server';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { type ReliabilityRow, Tally, recordReliability } from '../../scripts/reliability.ts';
import { DatasetPreview } from './builder/DatasetPreview.tsx';
import { ErrorBox } from './Notices.tsx';
import { safeDownloadName } from './download.ts';

const HOSTILE = [
  '<script>alert(1)</script>',
  '<img src=x onerror="alert(2)">',
  '"><svg onload=alert(3)>',
  '</td></tr></table><iframe src="javascript:alert(4)"></iframe>',
  "<a href='javascript:alert(5)'>5</a> & &amp; &lt;b&gt;",
];

const TEST = 'src/ui/hostile-ui.test.ts';
const rows: ReliabilityRow[] = [];
afterAll(() => recordReliability('hostile-ui', rows));

/** Markup fragments a hostile dataset might carry, mixed with plain text. */
const FRAGMENT = fc.oneof(
  fc.constantFrom(...HOSTILE, '<', '>', '&', '"', "'", '</', '<!--', '-->', '<![CDATA[', '&#60;', '\u0000', '\n'),
  fc.string({ maxLength: 8 }),
);
const hostileText = fc.array(FRAGMENT, { minLength: 1, maxLength: 6 }).map((p) => p.join(''));
/** The text content of rendered cells, entities decoded (what the browser shows). */
const cellTexts = (html: string): string[] =>
  [...html.matchAll(/<td class="(?:problem|answer)">([^<]*)<\/td>/g)].map((m) =>
    m[1]
      .replace(/&lt;/g, '<')
      .replace(/&gt;/g, '>')
      .replace(/&quot;/g, '"')
      .replace(/&#x27;/g, "'")
      .replace(/&amp;/g, '&'),
  );

/** No live markup from `text` in `html`: no tag it opened, no event attribute. */
function expectEscaped(html: string, text: string): void {
  expect(html).not.toMatch(/<(script|img|svg|iframe|a)[\s>]/i);
  expect(html).not.toMatch(/<[^>]*\son\w+=/i); // an event attribute inside a tag (as text it is harmless)
  // the text is there, as entities: the browser shows the original characters
  const escaped = text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#x27;');
  expect(html).toContain(escaped);
}

describe('hostile text in the UI', () => {
  it('dataset records render as text', () => {
    for (const h of HOSTILE) {
      const html = renderToString(
        createElement(DatasetPreview, {
          dataset: {
            name: `${h}.jsonl`,
            records: 2,
            sample: [
              { problem: h, answer: h },
              { problem: `What is ${h}?`, answer: '5' },
            ],
            error: null,
          },
        }),
      );
      expectEscaped(html, h);
      expect(html.match(/data-testid="dataset-record"/g)).toHaveLength(2);
    }
  });

  it('fuzz: generated hostile records render as exactly their text, in their own cells', () => {
    const t = new Tally();
    fc.assert(
      fc.property(hostileText, hostileText, (problem, answer) => {
        const html = renderToString(
          createElement(DatasetPreview, { dataset: { name: problem, records: 1, sample: [{ problem, answer }], error: null } }),
        );
        expect(html).not.toMatch(/<(script|img|svg|iframe|a)[\s>]/i);
        expect(html).not.toMatch(/<[^>]*\son\w+=/i);
        expect(cellTexts(html)).toEqual([problem, answer]);
        t.add('ok');
      }),
      { numRuns: 1000, seed: 183 },
    );
    rows.push({
      area: 'dataset preview (UI)',
      fault:
        'generated records mixing <script>, <img onerror>, <svg onload>, closing tags, quotes, entities and comments, rendered with react-dom/server',
      cases: t.cases,
      outcome: `${t.summary('rendered as text')} (no tag or event attribute; each cell decodes to exactly its record field)`,
      verdict: 'pass',
      test: TEST,
    });
  });

  it('a huge record is cut, not rendered whole', () => {
    const html = renderToString(
      createElement(DatasetPreview, {
        dataset: { name: 'big.json', records: 1, sample: [{ problem: 'x'.repeat(100_000), answer: '1' }], error: null },
      }),
    );
    expect(html.length).toBeLessThan(2_000);
    expect(html).toContain(`${'x'.repeat(400)}…`);
  });

  it('error messages and hints render as text', () => {
    for (const h of HOSTILE) {
      const html = renderToString(
        createElement(ErrorBox, { error: { code: 'DATASET_PARSE', message: `${h}: line 1 is not valid JSON`, hint: h }, context: h }),
      );
      expectEscaped(html, h);
    }
  });

  it('download names keep only safe characters', () => {
    expect(safeDownloadName('marft-checkpoint-run-20261126-abcd.zip')).toBe('marft-checkpoint-run-20261126-abcd.zip');
    expect(safeDownloadName('../../<script>x</script>.zip')).toBe('script_x_script_.zip');
    expect(safeDownloadName('/etc/passwd')).toBe('etc_passwd');
    expect(safeDownloadName('...')).toBe('download');
  });

  it('no UI or worker source uses an HTML-injecting API', () => {
    const files: string[] = [];
    const walk = (d: string): void => {
      for (const e of readdirSync(d, { withFileTypes: true })) {
        if (e.isDirectory()) walk(join(d, e.name));
        else if (/\.tsx?$/.test(e.name) && !/\.test\.tsx?$/.test(e.name)) files.push(join(d, e.name));
      }
    };
    for (const d of ['src/ui', 'src/worker']) walk(d);
    expect(files.length).toBeGreaterThan(10);
    const hits = files.filter((f) =>
      /dangerouslySetInnerHTML|\.innerHTML|\.outerHTML|insertAdjacentHTML|document\.write/.test(readFileSync(f, 'utf8')),
    );
    expect(hits).toEqual([]);
  });
});
