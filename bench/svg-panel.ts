// Hand-rolled SVG line plots for the bench reports (docs/soak.svg, docs/matrix-*.svg): one panel of lines
// on a zero-based y axis, no plotting dependency. A series is plotted against its index, or against `at`
// (e.g. generated tokens) when given.

export const W = 720,
  H = 200,
  PAD = 48;

export interface Series {
  values: number[];
  color: string;
  label: string;
  at?: number[];
  dash?: string;
}

/** A panel at height y0; legend entries in rows of `legendPerRow`; x labels from `xUnit` when series have `at`. */
export function panel(
  y0: number,
  title: string,
  series: Series[],
  unit: (v: number) => string,
  o: { legendPerRow?: number; legendStep?: number; xUnit?: (v: number) => string } = {},
): string {
  const all = series.flatMap((s) => s.values);
  const hi = Math.max(...all) * 1.1 || 1;
  const n = Math.max(...series.map((s) => s.values.length));
  const xHi = Math.max(...series.map((s) => s.at?.at(-1) ?? 0)) || 1;
  const x = (i: number, s: Series) => PAD + (s.at ? s.at[i] / xHi : i / Math.max(1, n - 1)) * (W - 2 * PAD);
  const y = (v: number) => y0 + H - 20 - (v / hi) * (H - 40);
  const paths = series.map(
    (s) =>
      `<polyline fill="none" stroke="${s.color}" stroke-width="1.5"${s.dash ? ` stroke-dasharray="${s.dash}"` : ''} points="${s.values.map((v, i) => `${x(i, s).toFixed(1)},${y(v).toFixed(1)}`).join(' ')}"/>`,
  );
  const per = o.legendPerRow ?? series.length,
    step = o.legendStep ?? 200;
  // a series with an empty label shares another's legend entry (e.g. a second seed of one row)
  const legend = series
    .filter((s) => s.label)
    .map(
      (s, i) =>
        `<text x="${PAD + 10 + (i % per) * step}" y="${y0 + 14 + Math.floor(i / per) * 13}" fill="${s.color}" font-size="12">${s.label}</text>`,
    );
  const ticks = [0, 0.5, 1].map(
    (f) => `<text x="4" y="${(y((hi * f) / 1.1) + 4).toFixed(1)}" font-size="10">${unit((hi * f) / 1.1)}</text>`,
  );
  const xTicks = o.xUnit
    ? [0.5, 1].map(
        (f) =>
          `<text x="${(PAD + f * (W - 2 * PAD)).toFixed(1)}" y="${y(0) + 12}" font-size="10" text-anchor="middle">${o.xUnit!(xHi * f)}</text>`,
      )
    : [];
  return [
    `<text x="${W / 2}" y="${y0 + H - 4}" font-size="11" text-anchor="middle">${title}</text>`,
    `<line x1="${PAD}" y1="${y(0)}" x2="${W - PAD}" y2="${y(0)}" stroke="#999"/>`,
    ...paths,
    ...legend,
    ...ticks,
    ...xTicks,
  ].join('\n');
}
