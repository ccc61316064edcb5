// Append-only numeric series for the live charts (TF Playground's charts: append and reset only), and
// the min/max decimation that keeps a chart of thousands of points as cheap as one of a few hundred:
// each pixel column draws the first, min, max and last point that fall in it.

export class Series {
  xs = new Float64Array(64);
  ys = new Float64Array(64);
  length = 0;

  append(x: number, y: number): void {
    if (this.length === this.xs.length) {
      const grow = (a: Float64Array) => { const b = new Float64Array(a.length * 2); b.set(a); return b; };
      this.xs = grow(this.xs);
      this.ys = grow(this.ys);
    }
    this.xs[this.length] = x;
    this.ys[this.length] = y;
    this.length++;
  }

  reset(): void {
    this.length = 0;
  }
}

export interface Extent { x0: number; x1: number; y0: number; y1: number }

/** The extent of the finite points of several series (null when there is none); y padded when flat. */
export function extentOf(series: readonly Series[]): Extent | null {
  let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
  for (const s of series) {
    for (let i = 0; i < s.length; i++) {
      const x = s.xs[i], y = s.ys[i];
      if (!Number.isFinite(y)) continue;
      if (x < x0) x0 = x;
      if (x > x1) x1 = x;
      if (y < y0) y0 = y;
      if (y > y1) y1 = y;
    }
  }
  if (x0 === Infinity) return null;
  if (x1 === x0) { x0 -= 0.5; x1 += 0.5; }
  if (y1 === y0) { const d = Math.abs(y0) * 0.1 || 0.5; y0 -= d; y1 += d; }
  return { x0, x1, y0, y1 };
}

/**
 * The points to draw for a series on `width` pixel columns over [x0, x1]: every point when they fit,
 * else per column its first, min, max and last (in x order), so spikes survive. Non-finite values
 * become NaN (a gap).
 */
export function decimate(s: Series, x0: number, x1: number, width: number): { xs: number[]; ys: number[] } {
  const xs: number[] = [];
  const ys: number[] = [];
  const w = Math.max(1, Math.floor(width));
  if (s.length <= w * 2) {
    for (let i = 0; i < s.length; i++) { xs.push(s.xs[i]); ys.push(Number.isFinite(s.ys[i]) ? s.ys[i] : NaN); }
    return { xs, ys };
  }
  const span = x1 - x0 || 1;
  let col = -1;
  let idx: number[] = [];
  const flush = () => {
    if (!idx.length) return;
    let mn = idx[0], mx = idx[0];
    for (const i of idx) { if (s.ys[i] < s.ys[mn]) mn = i; if (s.ys[i] > s.ys[mx]) mx = i; }
    const keep = [...new Set([idx[0], mn, mx, idx[idx.length - 1]])].sort((a, b) => a - b);
    for (const i of keep) { xs.push(s.xs[i]); ys.push(s.ys[i]); }
    idx = [];
  };
  for (let i = 0; i < s.length; i++) {
    const y = s.ys[i];
    if (!Number.isFinite(y)) { flush(); xs.push(s.xs[i]); ys.push(NaN); continue; }
    const c = Math.min(w - 1, Math.floor(((s.xs[i] - x0) / span) * w));
    if (c !== col) { flush(); col = c; }
    idx.push(i);
  }
  flush();
  return { xs, ys };
}
