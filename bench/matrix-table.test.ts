// docs/MATRIX.md's arithmetic on hand-made results: every standard error and reading below is worked by hand
// in the comments beside it.
import { describe, expect, it } from 'vitest';
import type { MatrixRow } from './matrix-rows.ts';
import type { EvalResult, IterationLine, SeedRun } from './matrix-results.ts';
import { difference, estimate, markdownTable, tableRow } from './matrix-table.ts';

const ev = (accuracy: number, episodes = 100): EvalResult => ({ accuracy, episodes });
const line = (planner: number, solver: number, seconds: number): IterationLine => ({
  teamReward: 0.5,
  seconds: { total: seconds },
  agents: { planner: { reward: 0, tokens: planner }, solver: { reward: 0.5, tokens: solver } },
});
const row = (name: string, reference: string | null): MatrixRow => ({
  name,
  family: 'f',
  reference,
  what: '',
  from: 'duo-action',
  set: {},
});
const seed = (s: number, log: IterationLine[], after: SeedRun['after']): SeedRun => ({ seed: s, log, after, job: null });

describe('matrix statistics', () => {
  it('one seed: the binomial s.e. of its accuracy', () => {
    // sqrt(0.6 * 0.4 / 100) = sqrt(0.0024) = 0.048990
    expect(estimate([ev(0.6)])!.se).toBeCloseTo(0.04899, 5);
    expect(estimate([])).toBeNull();
  });

  it('several seeds: the larger of the seeds’ spread and the pooled binomial s.e.', () => {
    // 0.5 and 0.6: sd = 0.070711, sd/sqrt(2) = 0.05 > pooled sqrt(0.55 * 0.45 / 200) = 0.035178
    const e = estimate([ev(0.5), ev(0.6)])!;
    expect(e.mean).toBeCloseTo(0.55, 12);
    expect(e.se).toBeCloseTo(0.05, 12);
    // equal seeds: no spread, the pooled binomial sqrt(0.25 / 200) = 0.035355 remains
    expect(estimate([ev(0.5), ev(0.5)])!.se).toBeCloseTo(0.035355, 6);
  });

  it('a difference within 2 s.e. is no difference, beyond it one', () => {
    // 0.6 ± 0.04899 against 0.55 ± 0.05: se sqrt(0.0024 + 0.0025) = 0.07, 0.05 < 0.14
    const d = difference({ mean: 0.6, se: Math.sqrt(0.0024) }, { mean: 0.55, se: 0.05 });
    expect(d.diff).toBeCloseTo(0.05, 12);
    expect(d.se).toBeCloseTo(0.07, 12);
    expect(d.significant).toBe(false);
    // exactly 2 s.e. (binary-exact: se sqrt(3/16² + 4/16²) = 5/16, diff 0.625 = 2 se) is still within
    expect(difference({ mean: 0.875, se: 3 / 16 }, { mean: 0.25, se: 4 / 16 }).significant).toBe(false);
    expect(difference({ mean: 0.876, se: 3 / 16 }, { mean: 0.25, se: 4 / 16 }).significant).toBe(true);
    expect(difference({ mean: 0.7, se: 0.01 }, { mean: 0.6, se: 0.01 }).significant).toBe(true);
  });
});

describe('matrix table', () => {
  const runs = new Map<string, SeedRun[]>([
    // seed 1: 1000+1400 + 1200+1400 = 5000 tokens in 1.5 + 2.25 s; seed 2: 2000 tokens in 1 s, one iteration
    [
      'a',
      [
        seed(1, [line(1000, 1400, 1.5), line(1200, 1400, 2.25)], { greedy: ev(0.72), sampled: ev(0.5) }),
        seed(2, [line(1000, 1000, 1)], { greedy: ev(0.7), sampled: ev(0.6) }),
      ],
    ],
    ['b', [seed(1, [line(1000, 1000, 1), line(1000, 1000, 1)], { greedy: ev(0.75), sampled: ev(0.6) })]],
    ['c', [seed(1, [line(500, 500, 1), line(500, 500, 1)], { sampled: ev(0.1) })]],
  ]);
  const base = { greedy: ev(0.7), sampled: ev(0.25) };

  it('two seeds: per-seed figures, estimates, and the reading', () => {
    const t = tableRow(row('a', null), runs, base, 2)!;
    // greedy: mean 0.71, sd/sqrt(2) = 0.01 < pooled sqrt(0.71 * 0.29 / 200) = 0.032086
    // sampled: mean 0.55, se 0.05 (above)
    expect(t.cells).toEqual(['`a`', '2 / 1', '5 / 2', '4 / 1', '70.0 → 72.0 / 70.0', '25.0 → 50.0 / 60.0', '71.0 (3.2)', '55.0 (5.0)']);
    // greedy vs base 0.7 (s.e. sqrt(0.21/100) = 0.045826): +0.01, 2 sqrt(0.0010295 + 0.0021) = 0.1119
    // sampled vs base 0.25 (s.e. sqrt(0.1875/100) = 0.043301): +0.30, 2 sqrt(0.0025 + 0.001875) = 0.1323
    expect(t.reading).toBe('2 seeds; stopped at 1 of 2 iterations; vs base: greedy no difference (+1.0 ± 11.2), sampled up +30.0 ± 13.2');
  });

  it('one seed, compared with its reference row', () => {
    const t = tableRow(row('b', 'a'), runs, base, 2)!;
    // greedy 0.75 (s.e. 0.043301) vs 0.7: +0.05 ± 2 sqrt(0.001875 + 0.0021) = 0.1261
    // sampled 0.6 (s.e. 0.04899) vs 0.25: +0.35 ± 2 sqrt(0.0024 + 0.001875) = 0.1308; vs a's 0.55 ± 0.05: +0.05 ± 0.14
    expect(t.reading).toBe(
      'one seed; vs base: greedy no difference (+5.0 ± 12.6), sampled up +35.0 ± 13.1; vs a: sampled no difference (+5.0 ± 14.0)',
    );
    expect(t.cells[6]).toBe('75.0 (4.3)');
  });

  it('a drop, a missing evaluation, and a row without runs', () => {
    const t = tableRow(row('c', null), runs, base, 2)!; // 2 × (500 + 500) tokens: "2" k, in 2 s
    // 0.1 (s.e. 0.03) vs 0.25: −0.15 ± 2 sqrt(0.0009 + 0.001875) = 0.1054
    expect(t.reading).toBe('one seed; vs base: sampled down −15.0 ± 10.5');
    expect(t.cells.slice(4)).toEqual(['70.0 → –', '25.0 → 10.0', '–', '10.0 (3.0)']);
    expect(tableRow(row('missing', 'a'), runs, base, 2)).toBeNull();
    const md = markdownTable([t]).split('\n');
    expect(md).toHaveLength(3);
    expect(md[2]).toBe('| `c` | 2 | 2 | 2 | 70.0 → – | 25.0 → 10.0 | – | 10.0 (3.0) | one seed; vs base: sampled down −15.0 ± 10.5 |');
  });
});
