// The numbers of docs/MATRIX.md (pure: bench/matrix-results.ts reads the files, bench/matrix-report.ts writes
// the page and the plots, bench/matrix-table.test.ts checks the arithmetic by hand).
// Statistics: an accuracy p on n held-out episodes has the binomial standard error sqrt(p(1-p)/n). A row's
// estimate is the mean of its seeds' accuracies; its s.e. is the binomial one of that mean with one seed, and
// with k >= 2 seeds the larger of the seeds' spread (sd/sqrt(k)) and the pooled binomial s.e. The untuned base
// is one evaluation (a fixed seed), so its s.e. is binomial. Two estimates differ only when
// |difference| > 2·sqrt(se1² + se2²); otherwise the reading says "no difference". With one seed the s.e.
// leaves out the run-to-run spread, so the reading starts with "one seed".

import type { MatrixRow } from './matrix-rows.ts';
import type { EvalResult, IterationLine, Mode, SeedRun } from './matrix-results.ts';

export interface Estimate {
  mean: number;
  se: number;
}

export const binomialSe = (p: number, n: number): number => Math.sqrt((p * (1 - p)) / n);

/** The mean of accuracies, one per seed, and its standard error (see the header); null for none. */
export function estimate(results: readonly EvalResult[]): Estimate | null {
  const k = results.length;
  if (!k) return null;
  const mean = results.reduce((a, r) => a + r.accuracy, 0) / k;
  const pooled = binomialSe(
    mean,
    results.reduce((a, r) => a + r.episodes, 0),
  );
  if (k < 2) return { mean, se: pooled };
  const sd = Math.sqrt(results.reduce((a, r) => a + (r.accuracy - mean) ** 2, 0) / (k - 1));
  return { mean, se: Math.max(sd / Math.sqrt(k), pooled) };
}

export interface Difference {
  diff: number;
  se: number;
  significant: boolean;
}

/** a − b, its s.e., and whether it is beyond 2 s.e. */
export function difference(a: Estimate, b: Estimate): Difference {
  const se = Math.sqrt(a.se ** 2 + b.se ** 2);
  const diff = a.mean - b.mean;
  return { diff, se, significant: Math.abs(diff) > 2 * se };
}

export const tokensOf = (log: readonly IterationLine[]): number =>
  log.reduce((a, l) => a + Object.values(l.agents).reduce((b, x) => b + x.tokens, 0), 0);
/** The iterations' own times (rollout to update), without the process start and the evaluations. */
export const secondsOf = (log: readonly IterationLine[]): number => log.reduce((a, l) => a + l.seconds.total, 0);

const pts = (x: number): string => (x * 100).toFixed(1);
const signed = (x: number): string => `${x < 0 ? '−' : '+'}${pts(Math.abs(x))}`;
/** "+21.3 ± 4.1", in points, the ± being 2 s.e. */
export const pm = (d: Difference): string => `${signed(d.diff)} ± ${pts(2 * d.se)}`;
const verdict = (d: Difference, up: string, down: string): string =>
  d.significant ? `${d.diff > 0 ? up : down} ${pm(d)}` : `no difference (${pm(d)})`;

export type Bases = ReadonlyMap<string, Partial<Record<Mode, EvalResult>>>;

export interface TableRow {
  row: MatrixRow;
  cells: string[];
  reading: string;
}

export const TABLE_HEAD = [
  'row',
  'iterations',
  'k tokens',
  'train s',
  'greedy %, before → after',
  'sampled %, before → after',
  'greedy after, mean (s.e.)',
  'sampled after, mean (s.e.)',
  'reading',
];

const afterOf = (seeds: readonly SeedRun[], mode: Mode): EvalResult[] => seeds.flatMap((s) => (s.after[mode] ? [s.after[mode]] : []));

/**
 * One table row per matrix row that has a trained seed: per-seed figures joined by " / " (seed order), the
 * estimates over seeds, and the reading: how many seeds, iterations cut short of `planned`, the change over the
 * untuned base (greedy and sampled) and the sampled difference from the row it is compared with.
 */
export function tableRow(
  row: MatrixRow,
  runs: ReadonlyMap<string, readonly SeedRun[]>,
  base: Partial<Record<Mode, EvalResult>>,
  planned: number,
): TableRow | null {
  const seeds = runs.get(row.name) ?? [];
  if (!seeds.length) return null;
  const per = (f: (s: SeedRun) => string): string => seeds.map(f).join(' / ');
  const acc = (r: EvalResult | undefined): string => (r ? pts(r.accuracy) : '–');
  const est = (mode: Mode): Estimate | null => estimate(afterOf(seeds, mode));
  const cell = (e: Estimate | null): string => (e ? `${pts(e.mean)} (${pts(e.se)})` : '–');
  const asEstimate = (r: EvalResult): Estimate => ({ mean: r.accuracy, se: binomialSe(r.accuracy, r.episodes) });

  const words: string[] = [seeds.length === 1 ? 'one seed' : `${seeds.length} seeds`];
  const short = seeds.filter((s) => s.log.length < planned);
  if (short.length) words.push(`stopped at ${short.map((s) => s.log.length).join(' / ')} of ${planned} iterations`);
  const vsBase = (['greedy', 'sampled'] as const).flatMap((m) => {
    const e = est(m);
    return e && base[m] ? [`${m} ${verdict(difference(e, asEstimate(base[m])), 'up', 'down')}`] : [];
  });
  if (vsBase.length) words.push(`vs base: ${vsBase.join(', ')}`);
  const mine = est('sampled');
  const theirs = row.reference ? estimate(afterOf(runs.get(row.reference) ?? [], 'sampled')) : null;
  if (mine && theirs) words.push(`vs ${row.reference}: sampled ${verdict(difference(mine, theirs), 'above by', 'below by')}`);

  return {
    row,
    reading: words.join('; '),
    cells: [
      `\`${row.name}\``,
      per((s) => `${s.log.length}`),
      per((s) => (tokensOf(s.log) / 1000).toFixed(0)),
      per((s) => secondsOf(s.log).toFixed(0)),
      `${acc(base.greedy)} → ${per((s) => acc(s.after.greedy))}`,
      `${acc(base.sampled)} → ${per((s) => acc(s.after.sampled))}`,
      cell(est('greedy')),
      cell(est('sampled')),
    ],
  };
}

export function markdownTable(rows: readonly TableRow[]): string {
  const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;
  return [line(TABLE_HEAD), line(TABLE_HEAD.map(() => '---')), ...rows.map((r) => line([...r.cells, r.reading]))].join('\n');
}
