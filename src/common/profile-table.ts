// Per-kernel GPU time as a table: the rows the lab's Profile panel, `marft train --profile` and the
// benchmarks show, from the profiler's KernelTime list (profiler.ts). Rows are per kernel
// (`<program key>/<entry point>`) or summed per op (the program key's first part: matmul, lora, attention…);
// each carries its share of the profiled total and its mean time per call. Framework-free, so the UI and
// the CLI share it.

/** GPU time of one kernel over a profiled stretch, as the profiler (src/gpu/profiler.ts) reports it. */
export interface KernelTime {
  /** `<program key>/<entry point>`. */
  key: string;
  ms: number;
  calls: number;
}

export interface KernelRow {
  /** The kernel (`matmul:nt:f32:64x64/forward`), or the op when grouped (`matmul`). */
  key: string;
  calls: number;
  /** Total GPU milliseconds over all calls. */
  ms: number;
  /** ms / calls. */
  meanMs: number;
  /** Fraction of the table's total ms, in [0, 1]. */
  share: number;
}

export type KernelGrouping = 'kernel' | 'op';
export type KernelSortKey = 'key' | 'calls' | 'ms' | 'meanMs' | 'share';

/** The op of a kernel key: the program key's first field (`matmul:nt:f32:64x64/forward` -> `matmul`). */
export const opOf = (key: string): string => key.split(/[:/]/)[0] || key;

/** Rows per kernel or per op, largest total first, with shares of the total (0 when the total is 0). */
export function kernelRows(times: readonly KernelTime[], by: KernelGrouping = 'kernel'): KernelRow[] {
  const sums = new Map<string, { calls: number; ms: number }>();
  for (const t of times) {
    const key = by === 'op' ? opOf(t.key) : t.key;
    const s = sums.get(key) ?? { calls: 0, ms: 0 };
    s.calls += t.calls;
    s.ms += Number.isFinite(t.ms) ? Math.max(0, t.ms) : 0;
    sums.set(key, s);
  }
  const total = [...sums.values()].reduce((a, s) => a + s.ms, 0);
  const rows = [...sums].map(([key, s]) => ({
    key,
    calls: s.calls,
    ms: s.ms,
    meanMs: s.calls ? s.ms / s.calls : 0,
    share: total > 0 ? s.ms / total : 0,
  }));
  return sortKernelRows(rows, 'ms', 'desc');
}

/** A sorted copy; ties keep the key order, so the table does not jump between renders. */
export function sortKernelRows(rows: readonly KernelRow[], by: KernelSortKey, dir: 'asc' | 'desc'): KernelRow[] {
  const sign = dir === 'asc' ? 1 : -1;
  return [...rows].sort((a, b) => {
    const c = by === 'key' ? a.key.localeCompare(b.key) : a[by] - b[by];
    return c !== 0 ? sign * c : a.key.localeCompare(b.key);
  });
}

export const totalMs = (rows: readonly KernelRow[]): number => rows.reduce((a, r) => a + r.ms, 0);

/**
 * A plain-text table: total ms, share, calls, mean per call, kernel; the first `limit` rows and one line
 * summing the rest. For terminals (CLI, benchmarks).
 */
export function formatKernelTable(rows: readonly KernelRow[], limit = 20): string {
  const lines = [`${'GPU ms'.padStart(10)} ${'share'.padStart(6)} ${'calls'.padStart(7)} ${'ms/call'.padStart(9)}  kernel`];
  const row = (ms: number, share: number, calls: number, mean: string, key: string) =>
    `${ms.toFixed(2).padStart(10)} ${`${(share * 100).toFixed(1)}%`.padStart(6)} ${String(calls).padStart(7)} ${mean.padStart(9)}  ${key}`;
  for (const r of rows.slice(0, limit)) lines.push(row(r.ms, r.share, r.calls, r.meanMs.toFixed(3), r.key));
  const rest = rows.slice(limit);
  if (rest.length) {
    lines.push(
      row(
        totalMs(rest),
        rest.reduce((a, r) => a + r.share, 0),
        rest.reduce((a, r) => a + r.calls, 0),
        '',
        `(${rest.length} more kernels)`,
      ),
    );
  }
  lines.push(
    row(
      totalMs(rows),
      rows.length ? 1 : 0,
      rows.reduce((a, r) => a + r.calls, 0),
      '',
      'total',
    ),
  );
  return lines.join('\n');
}

export interface PhaseRow {
  phase: string;
  seconds: number;
  /** Fraction of `total` (0 when total is 0). */
  share: number;
}

/**
 * Wall time per phase of an iteration (rollout, score, advantages, update) with shares of its total, plus
 * an `other` row for the time outside them (checkpoint reads, bookkeeping) when there is any.
 */
export function phaseRows(
  seconds: Readonly<Record<string, number>>,
  phases: readonly string[] = ['rollout', 'score', 'advantages', 'update'],
): PhaseRow[] {
  const total = seconds.total ?? phases.reduce((a, p) => a + (seconds[p] ?? 0), 0);
  const share = (s: number) => (total > 0 ? s / total : 0);
  const rows = phases.map((phase) => ({ phase, seconds: seconds[phase] ?? 0, share: share(seconds[phase] ?? 0) }));
  const other = total - rows.reduce((a, r) => a + r.seconds, 0);
  if (other > 1e-3 * total) rows.push({ phase: 'other', seconds: other, share: share(other) });
  return rows;
}
