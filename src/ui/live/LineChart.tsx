// A canvas line chart over the store's append-only series. It does not re-render with React when points
// arrive: it subscribes to metricsVersion and redraws in the next animation frame, decimating each series
// to the canvas width (series.ts), so thousands of points stay smooth.

import { useEffect, useRef } from 'react';
import { useLab } from '../store.ts';
import { type Series, decimate, extentOf } from './series.ts';

export interface Line { key: string; label: string; color: string }

const PAD = { l: 50, r: 10, t: 10, b: 22 };

/** A tick label with as many digits as the axis span needs. */
function fmt(v: number, span: number): string {
  const a = Math.abs(v);
  if (a < span * 1e-6) return '0';
  if (a >= 10000) return `${(v / 1000).toFixed(0)}k`;
  const digits = Math.max(0, Math.min(6, 1 - Math.floor(Math.log10(span / 4 || 1))));
  if (digits > 3) return v.toExponential(1);
  return v.toFixed(digits);
}

function draw(canvas: HTMLCanvasElement, lines: readonly Line[], series: Map<string, Series>, holder: HTMLElement): void {
  const dpr = window.devicePixelRatio || 1;
  const w = canvas.clientWidth, h = canvas.clientHeight;
  if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) {
    canvas.width = Math.round(w * dpr);
    canvas.height = Math.round(h * dpr);
  }
  const ctx = canvas.getContext('2d');
  if (!ctx) return;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, w, h);
  const ss = lines.map((l) => series.get(l.key)).filter((s): s is Series => !!s);
  const points = Math.max(0, ...ss.map((s) => s.length));
  holder.dataset.points = String(points);
  const ext = extentOf(ss);
  ctx.font = '11px system-ui, sans-serif';
  ctx.fillStyle = '#8a92a3';
  if (!ext) {
    ctx.fillText('no data yet', w / 2 - 28, h / 2);
    return;
  }
  const pw = w - PAD.l - PAD.r, ph = h - PAD.t - PAD.b;
  const X = (x: number) => PAD.l + ((x - ext.x0) / (ext.x1 - ext.x0)) * pw;
  const Y = (y: number) => PAD.t + (1 - (y - ext.y0) / (ext.y1 - ext.y0)) * ph;
  // grid and axes
  ctx.strokeStyle = '#eceef2';
  ctx.lineWidth = 1;
  for (let i = 0; i <= 4; i++) {
    const y = ext.y0 + ((ext.y1 - ext.y0) * i) / 4;
    ctx.beginPath();
    ctx.moveTo(PAD.l, Y(y));
    ctx.lineTo(w - PAD.r, Y(y));
    ctx.stroke();
    ctx.fillText(fmt(y, ext.y1 - ext.y0), 4, Y(y) + 4);
  }
  const xl = (x: number) => (Number.isInteger(x) ? String(x) : '');
  ctx.fillText(xl(ext.x0), PAD.l, h - 6);
  const right = `iteration ${xl(ext.x1)}`;
  ctx.fillText(right, w - PAD.r - ctx.measureText(right).width, h - 6);
  lines.forEach((l) => {
    const s = series.get(l.key);
    if (!s || !s.length) return;
    const d = decimate(s, ext.x0, ext.x1, pw);
    ctx.strokeStyle = l.color;
    ctx.fillStyle = l.color;
    ctx.lineWidth = 1.8;
    ctx.beginPath();
    let pen = false;
    for (let i = 0; i < d.xs.length; i++) {
      if (Number.isNaN(d.ys[i])) { pen = false; continue; }
      const x = X(d.xs[i]), y = Y(d.ys[i]);
      if (pen) ctx.lineTo(x, y); else ctx.moveTo(x, y);
      pen = true;
    }
    ctx.stroke();
    if (d.xs.length < 60) {
      for (let i = 0; i < d.xs.length; i++) if (!Number.isNaN(d.ys[i])) { ctx.beginPath(); ctx.arc(X(d.xs[i]), Y(d.ys[i]), 2.5, 0, Math.PI * 2); ctx.fill(); }
    }
  });
}

export function LineChart({ title, testid, lines, note }: { title: string; testid?: string; lines: Line[]; note?: string }) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const holder = useRef<HTMLDivElement>(null);
  const linesRef = useRef(lines);
  linesRef.current = lines;
  const key = lines.map((l) => l.key).join('|');
  useEffect(() => {
    let frame = 0;
    const redraw = () => {
      cancelAnimationFrame(frame);
      frame = requestAnimationFrame(() => {
        if (canvas.current && holder.current) draw(canvas.current, linesRef.current, useLab.getState().series, holder.current);
      });
    };
    redraw();
    const unsub = useLab.subscribe((s, prev) => { if (s.metricsVersion !== prev.metricsVersion) redraw(); });
    const ro = new ResizeObserver(redraw);
    if (canvas.current) ro.observe(canvas.current);
    return () => { unsub(); ro.disconnect(); cancelAnimationFrame(frame); };
  }, [key]);
  return (
    <div className="chart" data-testid={testid} ref={holder} data-points="0">
      <div className="chart-head">
        <h3>{title}</h3>
        <ul className="legend">
          {lines.map((l) => <li key={l.key}><span className="swatch" style={{ background: l.color }} />{l.label}</li>)}
        </ul>
      </div>
      <canvas ref={canvas} />
      {note && <p className="hint small">{note}</p>}
    </div>
  );
}
