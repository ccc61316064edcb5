// A training chart on uPlot: the live run's series (the store's append-only Series) plus the saved runs
// picked as overlays in Runs (dashed), EMA smoothing, an optional log scale, hover values in the legend,
// CSV and PNG export, and a summary table for screen readers. It redraws on metricsVersion without a
// React render per point; uPlot is rebuilt only when the set of curves or the scale changes.

import { useEffect, useMemo, useRef, useState } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { useShallow } from 'zustand/react/shallow';
import { saveDownload, safeDownloadName } from '../download.ts';
import { type RunOverlay, selectOverlays, useLab } from '../store.ts';
import { alignCurves, emaSmooth, flatRange, tickLabels, toCsv, type XY } from './chart-data.ts';
import { metricValues } from './metric-keys.ts';

/** A curve to draw; `width` in CSS pixels (a wide one is a band under the others, e.g. the team's). */
export interface Line {
  key: string;
  label: string;
  color: string;
  width?: number;
}

interface Curve extends XY {
  label: string;
  color: string;
  dash: boolean;
  width: number;
}

const LINE_WIDTH = 1.8;

/** The live run's curve of each line, then each overlay run's. */
function curvesOf(lines: readonly Line[], overlays: readonly RunOverlay[]): Curve[] {
  const series = useLab.getState().series;
  const live = lines.map((l) => {
    const s = series.get(l.key);
    return {
      label: l.label,
      color: l.color,
      dash: false,
      width: l.width ?? LINE_WIDTH,
      xs: s ? s.xs.subarray(0, s.length) : [],
      ys: s ? s.ys.subarray(0, s.length) : [],
    };
  });
  const saved = overlays.flatMap((o) => {
    const values = o.history.map(metricValues);
    return lines.map((l) => ({
      label: `${l.label} (${o.runId})`,
      color: l.color,
      dash: true,
      width: l.width ?? LINE_WIDTH,
      xs: o.history.map((m) => m.iteration + 1),
      ys: values.map((v) => v[l.key] ?? NaN),
    }));
  });
  return [...live, ...saved].filter((c) => c.dash === false || c.ys.length > 0);
}

const fmtValue = (v: number | null | undefined): string =>
  v === null || v === undefined || !Number.isFinite(v) ? '–' : Number(v.toPrecision(4)).toString();

export function Chart({
  title,
  testid,
  lines,
  note,
  smoothing,
}: {
  title: string;
  testid: string;
  lines: Line[];
  note?: string;
  smoothing: number;
}) {
  const plotEl = useRef<HTMLDivElement>(null);
  const holder = useRef<HTMLDivElement>(null);
  const table = useRef<HTMLTableSectionElement>(null);
  const plot = useRef<uPlot | null>(null);
  const overlays = useLab(useShallow(selectOverlays));
  const [log, setLog] = useState(false);
  // rebuilt when the curves (not their points), the smoothing or the scale change
  const key = `${lines.map((l) => `${l.key}:${l.label}`).join('|')}#${overlays.map((o) => o.runId).join('|')}`;
  // eslint-disable-next-line react-hooks/exhaustive-deps -- keyed by the curves, not the arrays (new every update)
  const state = useMemo(() => ({ lines, overlays, smoothing, log }), [key, smoothing, log]);

  useEffect(() => {
    let frame = 0;
    const data = () => {
      const curves = curvesOf(state.lines, state.overlays);
      const { xs, ys } = alignCurves(curves);
      const smooth =
        state.smoothing > 0
          ? ys.map((r) =>
              emaSmooth(
                r.map((v) => v ?? NaN),
                state.smoothing,
              ).map((v) => (Number.isFinite(v) ? v : null)),
            )
          : ys;
      return { curves, xs, ys: smooth };
    };
    const build = () => {
      plot.current?.destroy();
      plot.current = null;
      const el = plotEl.current;
      if (!el) return;
      const { curves, xs, ys } = data();
      const finite = ys.flat().filter((v): v is number => v !== null);
      const positive = finite.length > 0 && finite.every((v) => v > 0);
      const tiny = Math.min(1, ...finite.filter((v) => v !== 0).map(Math.abs));
      const opts: uPlot.Options = {
        width: Math.max(200, el.clientWidth),
        height: 170,
        scales: {
          x: { time: false },
          y: state.log
            ? positive
              ? { distr: 3, log: 10 }
              : { distr: 4, asinh: tiny }
            : { range: (_u, min, max) => flatRange(min, max) ?? uPlot.rangeNum(min, max, 0.1, true) },
        },
        axes: [
          {
            values: (_u, splits) => splits.map((v) => (Number.isInteger(v) ? String(v) : '')),
            label: 'iteration',
            labelSize: 14,
            size: 36,
            font: '11px system-ui',
            labelFont: '11px system-ui',
          },
          { values: (_u, splits) => tickLabels(splits), size: 56, font: '11px system-ui' },
        ],
        series: [
          { label: 'iteration', value: (_u, v) => fmtValue(v) },
          ...curves.map((c) => ({
            label: c.label,
            stroke: c.color,
            width: c.width,
            dash: c.dash ? [6, 4] : undefined,
            value: (_u: uPlot, v: number | null) => fmtValue(v),
            // a band's points are filled discs as wide as it, so a lone point shows under an agent's too
            points:
              c.width > LINE_WIDTH ? { show: xs.length < 60, size: c.width + 4, fill: c.color, stroke: c.color } : { show: xs.length < 60 },
          })),
        ],
        // the legend's marker as wide as its line (up to 6 px), so a band reads as one there too
        legend: {
          live: true,
          markers: { width: (_u: uPlot, i: number) => Math.min(6, Math.max(2, Math.round(curves[i - 1]?.width ?? 2))) },
        },
        cursor: { drag: { x: true, y: false } },
      };
      plot.current = new uPlot(opts, [xs, ...ys] as uPlot.AlignedData, el);
      fill(curves, ys);
    };
    // the screen-reader summary and the e2e's point count, written directly: no React render per point
    const fill = (curves: Curve[], ys: Array<Array<number | null>>) => {
      if (holder.current) holder.current.dataset.points = String(Math.max(0, ...curves.filter((c) => !c.dash).map((c) => c.ys.length)));
      const body = table.current;
      if (!body) return;
      body.replaceChildren(
        ...curves.map((c, i) => {
          const vals = ys[i].filter((v): v is number => v !== null);
          const tr = document.createElement('tr');
          for (const text of [
            c.label,
            fmtValue(vals[vals.length - 1]),
            fmtValue(vals.length ? Math.min(...vals) : null),
            fmtValue(vals.length ? Math.max(...vals) : null),
            String(vals.length),
          ]) {
            const td = document.createElement('td');
            td.textContent = text;
            tr.appendChild(td);
          }
          return tr;
        }),
      );
    };
    const redraw = () => {
      cancelAnimationFrame(frame);
      frame = requestAnimationFrame(() => {
        if (!plot.current) return build();
        const { curves, xs, ys } = data();
        if (curves.length + 1 !== plot.current.series.length) return build();
        plot.current.setData([xs, ...ys] as uPlot.AlignedData);
        fill(curves, ys);
      });
    };
    build();
    const unsub = useLab.subscribe((s, prev) => {
      if (s.metricsVersion !== prev.metricsVersion) redraw();
    });
    const ro = new ResizeObserver(() => {
      if (plot.current && plotEl.current) plot.current.setSize({ width: Math.max(200, plotEl.current.clientWidth), height: 170 });
    });
    if (plotEl.current) ro.observe(plotEl.current);
    return () => {
      unsub();
      ro.disconnect();
      cancelAnimationFrame(frame);
      plot.current?.destroy();
      plot.current = null;
    };
  }, [state]);

  const exportCsv = () => {
    const curves = curvesOf(lines, overlays);
    const { xs, ys } = alignCurves(curves);
    saveDownload({
      name: safeDownloadName(`${title}.csv`),
      bytes: new TextEncoder().encode(
        toCsv(
          'iteration',
          curves.map((c) => c.label),
          xs,
          ys,
        ),
      ),
    });
  };
  const exportPng = () => {
    const canvas = plot.current?.ctx.canvas;
    canvas?.toBlob((b) => {
      if (b) void b.arrayBuffer().then((a) => saveDownload({ name: safeDownloadName(`${title}.png`), bytes: new Uint8Array(a) }));
    }, 'image/png');
  };
  const id = `chart-${testid}`;
  return (
    <figure className="chart" data-testid={testid} ref={holder} data-points="0" aria-labelledby={`${id}-title`}>
      <div className="chart-head">
        <h3 id={`${id}-title`}>{title}</h3>
        <div className="chart-tools">
          <label title="log scale (asinh when values reach 0 or below)">
            <input type="checkbox" checked={log} onChange={(e) => setLog(e.target.checked)} data-testid={`${testid}-log`} /> log
          </label>
          <button type="button" className="link" onClick={exportCsv} aria-label={`download ${title} as CSV`}>
            CSV
          </button>
          <button type="button" className="link" onClick={exportPng} aria-label={`download ${title} as PNG`}>
            PNG
          </button>
        </div>
      </div>
      <div ref={plotEl} className="chart-plot" aria-hidden="true" />
      <table className="sr-only">
        <caption>
          {title}
          {smoothing > 0 ? ` (smoothed, EMA weight ${smoothing})` : ''}: per curve
        </caption>
        <thead>
          <tr>
            <th scope="col">curve</th>
            <th scope="col">last</th>
            <th scope="col">min</th>
            <th scope="col">max</th>
            <th scope="col">points</th>
          </tr>
        </thead>
        <tbody ref={table} />
      </table>
      {note && <figcaption className="hint small">{note}</figcaption>}
    </figure>
  );
}
