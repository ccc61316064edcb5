// Terminal output of a run: a progress bar on a TTY (stderr), one summary line per iteration (stdout),
// or JSON lines with --json.

import type { IterationMetrics } from '../config/metrics.ts';

const f = (x: number, d = 3): string => (Number.isFinite(x) ? (Math.abs(x) >= 1000 ? x.toFixed(0) : x.toPrecision(d)) : String(x));

export function iterationLine(m: IterationMetrics): string {
  const agents = Object.entries(m.agents)
    .map(([r, a]) => `${r} r=${f(a.reward)}${Number.isNaN(a.accuracy) ? '' : ` acc=${f(a.accuracy)}`}`)
    .join(' | ');
  return `iter ${m.iteration} | team acc=${f(m.accuracy)} | ${agents} | pol=${f(m.policyLoss)} val=${f(m.valueLoss)} ent=${f(m.entropy)} kl=${f(m.approxKl)} clip=${f(m.clipFraction)} | ${f(m.tokensPerSecond)} tok/s | ${f(m.seconds.total)} s${m.skipped.length ? ` | skipped: ${m.skipped.join('; ')}` : ''}`;
}

export class ProgressBar {
  private readonly tty = Boolean(process.stderr.isTTY);
  private readonly t0 = Date.now();
  constructor(
    private readonly total: number,
    private readonly first: number,
  ) {}

  update(done: number, phase: string): void {
    if (!this.tty) return;
    const frac = Math.min(1, (done - this.first) / Math.max(1, this.total - this.first));
    const width = 24;
    const bar = '#'.repeat(Math.round(frac * width)).padEnd(width, '.');
    const elapsed = (Date.now() - this.t0) / 1000;
    const eta = frac > 0 ? (elapsed / frac) * (1 - frac) : NaN;
    process.stderr.write(
      `\r[${bar}] ${done}/${this.total} ${phase.slice(0, 40).padEnd(40)} eta ${Number.isFinite(eta) ? `${eta.toFixed(0)} s` : '?'}   `,
    );
  }

  clear(): void {
    if (this.tty) process.stderr.write('\r\x1b[K');
  }
}
