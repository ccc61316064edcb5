// The pure parts of the training charts (Chart.tsx draws them with uPlot): EMA smoothing, the overlay of
// several runs on one shared x axis, CSV export and tick labels. Kept free of the DOM so they are unit-tested.

/**
 * TensorBoard's debiased EMA (tensorboard/components/vz_line_chart2/line-chart.ts, "smoothing"):
 * last = last * w + (1 - w) * y, shown as last / (1 - w^n) so the curve does not start at 0.
 * Non-finite points stay gaps (NaN) and do not move the average; w = 0 returns the values unchanged.
 */
export function emaSmooth(ys: ArrayLike<number>, weight: number): number[] {
  if (!(weight >= 0 && weight < 1)) throw new RangeError(`smoothing weight must be in [0, 1), got ${weight}`);
  const out: number[] = [];
  let last = 0;
  let n = 0;
  for (let i = 0; i < ys.length; i++) {
    const y = ys[i];
    if (!Number.isFinite(y)) {
      out.push(NaN);
      continue;
    }
    last = last * weight + (1 - weight) * y;
    n++;
    out.push(weight === 0 ? y : last / (1 - weight ** n));
  }
  return out;
}

export interface XY {
  xs: ArrayLike<number>;
  ys: ArrayLike<number>;
}

/**
 * Several curves on one sorted x axis (uPlot's data layout): the union of their x values; a curve has
 * null where it has no point (uPlot leaves a gap there unless spanGaps) and NaN stays a gap too.
 * Where a curve repeats an x, its last value wins (a resumed run re-logs an iteration).
 */
export function alignCurves(curves: readonly XY[]): { xs: number[]; ys: Array<Array<number | null>> } {
  const all = new Set<number>();
  for (const c of curves) for (let i = 0; i < c.xs.length; i++) all.add(c.xs[i]);
  const xs = [...all].sort((a, b) => a - b);
  const at = new Map(xs.map((x, i) => [x, i]));
  const ys = curves.map((c) => {
    const row: Array<number | null> = new Array<number | null>(xs.length).fill(null);
    for (let i = 0; i < c.xs.length; i++) row[at.get(c.xs[i])!] = Number.isFinite(c.ys[i]) ? c.ys[i] : null;
    return row;
  });
  return { xs, ys };
}

const csvCell = (s: string): string => (/[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s);

/** A CSV with a header row: x then one column per curve; a missing value is an empty cell. */
export function toCsv(
  xLabel: string,
  labels: readonly string[],
  xs: readonly number[],
  ys: ReadonlyArray<ReadonlyArray<number | null>>,
): string {
  const rows = [[xLabel, ...labels].map(csvCell).join(',')];
  for (let i = 0; i < xs.length; i++)
    rows.push([String(xs[i]), ...ys.map((r) => (r[i] === null || !Number.isFinite(r[i]!) ? '' : String(r[i])))].join(','));
  return `${rows.join('\n')}\n`;
}

/**
 * Labels for an axis' ticks: the fewest significant digits (up to 6) that show every tick exactly, plain
 * decimals from 1e-4 to 1e6 and exponent notation outside, so 0.075, 0.080, 0.085 never all read "7.5e-2"
 * (they read as one value). A null tick (uPlot's log axes leave some unlabelled) gets an empty label.
 */
export function tickLabels(ticks: ReadonlyArray<number | null>): string[] {
  // uPlot's log axes pass null for the ticks they leave unlabelled
  const shown = ticks.filter((v): v is number => v !== null && Number.isFinite(v));
  const labels = labelsOf(shown);
  let k = 0;
  return ticks.map((v) => (v !== null && Number.isFinite(v) ? labels[k++] : ''));
}

function labelsOf(ticks: readonly number[]): string[] {
  const big = Math.max(0, ...ticks.map(Math.abs));
  const expo = big !== 0 && (big < 1e-4 || big >= 1e6);
  const one = (v: number, p: number): string => {
    if (v === 0) return '0';
    if (expo) return v.toExponential(p - 1);
    // digits after the point so the largest tick keeps p significant digits
    const decimals = Math.max(0, p - 1 - Math.floor(Math.log10(big)));
    return v.toFixed(Math.min(20, decimals)).replace(/^-0(\.0*)?$/, '0');
  };
  for (let p = 1; p <= 6; p++) {
    const labels = ticks.map((v) => one(v, p));
    const exact = labels.every((l, i) => Math.abs(Number(l) - ticks[i]) <= big * 1e-6);
    if (exact && new Set(labels).size === new Set(ticks).size) return labels;
  }
  return ticks.map((v) => one(v, 6));
}

/** The y range of a flat curve (min = max, e.g. one iteration): ±10% of the value, ±0.5 around 0; null otherwise (uPlot's own). */
export function flatRange(min: number | null, max: number | null): [number, number] | null {
  if (min === null || max === null || min !== max) return null;
  const d = Math.abs(min) * 0.1 || 0.5;
  return [min - d, max + d];
}
