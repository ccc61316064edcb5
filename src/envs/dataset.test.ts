import { describe, expect, it } from 'vitest';
import { createDatasetEnv, datasetFromObjects, parseDataset, splitDataset } from './dataset.ts';
import { EnvError } from './errors.ts';

const codeOf = (f: () => unknown): string => {
  try {
    f();
  } catch (e) {
    if (e instanceof EnvError) return `${e.code}: ${e.message}`;
    throw e;
  }
  return 'no error';
};

describe('parseDataset', () => {
  it('reads JSONL with aliases', () => {
    const text = [
      '{"problem": "1+1?", "answer": "2"}',
      '',
      '{"question": "2+2?", "answer": 4}',
      '{"question": "Janet...", "answer": "She has 3+4 = 7 apples.\\n#### 7"}',
      '{"problem": "x?", "solution": "We get \\\\boxed{\\\\frac{1}{2}}."}',
    ].join('\n');
    const r = parseDataset(text, 'm.jsonl');
    expect(r.map((x) => [x.problem, x.answer, x.line])).toEqual([
      ['1+1?', '2', 1],
      ['2+2?', '4', 3],
      ['Janet...', '7', 4],
      ['x?', '\\frac{1}{2}', 5],
    ]);
  });
  it('reads a JSON array and reports bad records by line', () => {
    const text = '[\n  {"problem": "a", "answer": "1"},\n  {"problem": "b"},\n  {"answer": "3"}\n]';
    const msg = codeOf(() => parseDataset(text, 'd.json'));
    expect(msg).toMatch(/^DATASET_FIELD: d\.json: 2 bad records/);
    expect(msg).toContain('line 3: missing "answer"');
    expect(msg).toContain('line 4: missing "problem"');
    expect(parseDataset('[{"problem": "a", "answer": "1"}]')).toHaveLength(1);
  });
  it('gives line numbers for invalid JSONL lines', () => {
    const msg = codeOf(() => parseDataset('{"problem": "a", "answer": "1"}\n{oops}\n', 'x.jsonl'));
    expect(msg).toMatch(/^DATASET_PARSE: x\.jsonl: 1 line is not valid JSON/);
    expect(msg).toContain('line 2:');
  });
  it('rejects empty files and datasets', () => {
    expect(codeOf(() => parseDataset('  \n'))).toMatch(/^DATASET_EMPTY/);
    expect(codeOf(() => parseDataset('[]'))).toMatch(/^DATASET_EMPTY/);
  });
  it('rejects ambiguous or badly typed fields', () => {
    expect(codeOf(() => parseDataset('{"problem": "a", "question": "b", "answer": "1"}'))).toContain('both "problem" and "question"');
    expect(codeOf(() => parseDataset('{"problem": "a", "answer": [1]}'))).toContain('"answer" must be a string or a number');
    expect(codeOf(() => parseDataset('{"problem": "a", "solution": "no box"}'))).toContain('no \\boxed{}');
    expect(codeOf(() => parseDataset('{"problem": "a", "answer": "1", "split": "dev"}'))).toContain('"split" must be');
  });
  it('requires split fields on all records or none', () => {
    const text = '{"problem": "a", "answer": "1", "split": "test"}\n{"problem": "b", "answer": "2"}';
    expect(codeOf(() => parseDataset(text))).toMatch(/^DATASET_SPLIT.*first without: line 2/);
  });
  it('reports records given as objects by index', () => {
    expect(codeOf(() => datasetFromObjects([{ problem: 'a', answer: '1' }, { problem: 'b' }]))).toContain('record 1: missing "answer"');
  });
});

describe('splitDataset and sampling', () => {
  const many = Array.from({ length: 20 }, (_, i) => ({ problem: `p${i}`, answer: String(i) }));
  it('splits by a seeded shuffle, reproducibly and disjointly', () => {
    const recs = datasetFromObjects(many);
    const a = splitDataset(recs, { testFraction: 0.25, splitSeed: 3 });
    const b = splitDataset(recs, { testFraction: 0.25, splitSeed: 3 });
    const c = splitDataset(recs, { testFraction: 0.25, splitSeed: 4 });
    expect(a.test).toHaveLength(5);
    expect(a.train).toHaveLength(15);
    expect(a.test.map((r) => r.id)).toEqual(b.test.map((r) => r.id));
    expect(a.test.map((r) => r.id)).not.toEqual(c.test.map((r) => r.id));
    const ids = new Set([...a.train, ...a.test].map((r) => r.id));
    expect(ids.size).toBe(20);
  });
  it('uses explicit split fields', () => {
    const recs = datasetFromObjects([
      { problem: 'a', answer: '1', split: 'train' },
      { problem: 'b', answer: '2', split: 'test' },
    ]);
    const s = splitDataset(recs);
    expect(s.train.map((r) => r.problem)).toEqual(['a']);
    expect(s.test.map((r) => r.problem)).toEqual(['b']);
  });
  it('samples reproducibly by seed, from the chosen split only', () => {
    const env = createDatasetEnv({ data: many, split: 'test', testFraction: 0.25 });
    const testProblems = new Set(env.records.map((r) => r.problem));
    const seen = new Set<string>();
    for (let s = 0; s < 50; s++) {
      const t = env.reset(s).observation.task;
      expect(testProblems.has(t)).toBe(true);
      expect(env.reset(s).observation.task).toBe(t);
      seen.add(t);
    }
    expect(seen.size).toBeGreaterThan(2);
  });
  it('fails on an empty split', () => {
    expect(codeOf(() => createDatasetEnv({ data: [{ problem: 'a', answer: '1' }], split: 'test' }))).toMatch(
      /^DATASET_EMPTY.*test split is empty/,
    );
  });
});
