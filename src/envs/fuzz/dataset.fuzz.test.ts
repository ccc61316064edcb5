// Fuzzes parseDataset (JSON arrays and JSONL of {problem, answer}): generated records with hostile fields,
// byte-wise mutations of valid files, arbitrary text. Every case ends in records that satisfy the
// documented contract (non-empty problem and answer strings, line numbers inside the file) or an EnvError
// DATASET_*; a large file parses in linear time.

import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { applyByteOps, byteOps, measure } from '../../../scripts/fuzz.ts';
import { type ReliabilityRow, Tally, outcomeOf, recordReliability } from '../../../scripts/reliability.ts';
import { type DatasetRecord, parseDataset } from '../dataset.ts';
import { EnvError } from '../errors.ts';

const TEST = 'src/envs/fuzz/dataset.fuzz.test.ts';
const rows: ReliabilityRow[] = [];
afterAll(() => recordReliability('dataset', rows));

function check(text: string, recs: DatasetRecord[]): void {
  const lines = text.split('\n').length;
  for (const r of recs) {
    expect(typeof r.problem === 'string' && r.problem.trim() !== '').toBe(true);
    expect(typeof r.answer === 'string' && r.answer !== '').toBe(true);
    expect(r.line >= 1 && r.line <= lines).toBe(true);
  }
}
const use = (text: string) => () => check(text, parseDataset(text, 'fuzz.jsonl'));

const field = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.integer(),
  fc.constantFrom(null, true, [], {}, '', ' ', '#### 7', '\\boxed{3}', 'x #### ', 1e400 as number, NaN),
  fc.jsonValue({ maxDepth: 1 }),
);
const record = fc.record(
  {
    problem: field,
    question: field,
    answer: field,
    solution: field,
    split: fc.oneof(fc.constantFrom('train', 'test', 'dev'), field),
    id: field,
  },
  { requiredKeys: [] },
);

describe('dataset fuzz', () => {
  it('generated records as JSON arrays and JSONL', () => {
    const t = new Tally();
    fc.assert(
      fc.property(
        fc.array(record, { maxLength: 6 }),
        fc.boolean(),
        fc.constantFrom('\n', '\r\n'),
        fc.boolean(),
        (recs, jsonl, eol, bom) => {
          const text =
            (bom ? '\uFEFF' : '') +
            (jsonl ? recs.map((r) => JSON.stringify(r)).join(eol) : JSON.stringify(recs, null, 1).replace(/\n/g, eol));
          t.add(outcomeOf(use(text), [EnvError]));
        },
      ),
      { numRuns: 2500, seed: 51 },
    );
    rows.push({
      area: 'dataset (JSON/JSONL)',
      fault:
        'generated records with hostile fields (wrong types, empty, both problem and question, GSM8K ####, MATH \\boxed{}, bad split, BOM, CRLF)',
      cases: t.cases,
      outcome: t.summary('parsed'),
      verdict: 'pass',
      test: TEST,
    });
  });

  it('byte-wise mutations of valid files and arbitrary text', () => {
    const t = new Tally();
    const good = [
      { problem: 'What is 2+3?', answer: '5' },
      { question: 'What is 7*6?', answer: 42 },
      { problem: 'Find x.', solution: 'so \\boxed{4}.' },
    ];
    const files = [JSON.stringify(good, null, 2), good.map((g) => JSON.stringify(g)).join('\n')].map((s) => new TextEncoder().encode(s));
    fc.assert(
      fc.property(fc.constantFrom(...files), byteOps, (f, ops) => {
        t.add(outcomeOf(use(new TextDecoder().decode(applyByteOps(f, ops))), [EnvError]));
      }),
      { numRuns: 2000, seed: 52 },
    );
    fc.assert(
      fc.property(fc.string({ maxLength: 60 }), (s) => {
        t.add(outcomeOf(use(s), [EnvError]));
      }),
      { numRuns: 500, seed: 53 },
    );
    rows.push({
      area: 'dataset (JSON/JSONL)',
      fault: 'byte-wise mutations of valid JSON and JSONL files; arbitrary text',
      cases: t.cases,
      outcome: t.summary('parsed'),
      verdict: 'pass',
      test: TEST,
    });
  });

  it('a large dataset parses in linear time', () => {
    const t = new Tally();
    const recs = Array.from({ length: 20_000 }, (_, i) => ({ problem: `What is ${i} + ${i}? `.repeat(10), answer: String(2 * i) }));
    for (const text of [JSON.stringify(recs, null, 2), recs.map((r) => JSON.stringify(r)).join('\n')]) {
      const m = measure(() => parseDataset(text));
      if (m.error !== undefined) throw m.error as Error;
      expect(m.result!.length).toBe(20_000);
      expect(m.result![19_999].line).toBeGreaterThan(19_999);
      expect(m.ms, `${(text.length / 1e6).toFixed(1)} MB`).toBeLessThan(3000);
      t.add('ok');
    }
    rows.push({
      area: 'dataset (JSON/JSONL)',
      fault: 'large files: 20 000 records (about 5 MB) as a JSON array and as JSONL',
      cases: t.cases,
      outcome: `${t.cases} parsed, each < 3 s (line numbers computed in one pass)`,
      verdict: 'pass',
      test: TEST,
    });
  });
});
