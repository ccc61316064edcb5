// A small benchmark of the matmul kernel (llm.c's dev/cuda habit): time per call and GFLOP/s for a list of
// shapes (and of variants per shape, on the same inputs), measured with gpu.sync() around a stream of
// repetitions (timing.ts: submitted STREAM_SUBMIT at a time, as many as calibrate finds for `roundMs`)
// after a warm-up; with `rounds` > 1 the median of that many rounds, and with `timestamps` also the GPU
// time per call from timestamp queries (Gpu.startProfile: each dispatch in a pass of its own, summed over
// the call's dispatches, e.g. a split-K product and its reduction).

import type { Gpu } from '../../src/gpu/gpu.ts';
import type { Tensor } from '../../src/gpu/tensor.ts';
import type { WeightDType } from '../common.ts';
import { calibrate, median, streamed } from '../timing.ts';
import { matmul } from './matmul.ts';
import type { Pick } from './picks.ts';
import type { MatmulVariant, TileConfig } from './tile.ts';

export interface MatmulBenchOpts {
  transA?: boolean;
  transB?: boolean;
  /** Storage dtype of B (default f32). */
  bDtype?: WeightDType;
  batch?: number;
  variant?: MatmulVariant | TileConfig;
  /** Several variants timed on the same inputs (a row each, in this order); overrides `variant`. */
  variants?: Array<MatmulVariant | TileConfig | undefined>;
  /** Repetitions per round; default: enough for about `roundMs` of wall time (timing.ts: calibrate). */
  reps?: number;
  warmup?: number;
  /** Timed rounds of `reps` calls; a row reports the median (default 1). */
  rounds?: number;
  /** Target length of a round in ms for the default reps (default 300). */
  roundMs?: number;
  /** Also time the rounds with GPU timestamps (gpuMs), where the device has them. */
  timestamps?: boolean;
}

export interface MatmulBenchRow {
  shape: [M: number, N: number, K: number];
  /** The program key that ran, e.g. 'matmul:nn:f32:128x128x16_8x8'. */
  variant: string;
  /** Wall time per call: the median over rounds of (record, submit and wait around `reps` calls) / reps. */
  ms: number;
  gflops: number;
  /** GPU time per call from timestamp queries (median over rounds), when asked for and available. */
  gpuMs?: number;
}

/** Deterministic values in [-1, 1) without a float64 detour (4096^2 elements upload quickly). */
function fillValues(n: number, seed: number): Float32Array {
  const out = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = s / 2147483648 - 1;
  }
  return out;
}

export async function benchMatmul(
  gpu: Gpu,
  shapes: Array<[number, number, number]>,
  opts: MatmulBenchOpts = {},
): Promise<MatmulBenchRow[]> {
  const rows: MatmulBenchRow[] = [];
  const batch = opts.batch ?? 1;
  const lead = batch > 1 ? [batch] : [];
  for (const [M, N, K] of shapes) {
    const a = gpu.upload(fillValues(batch * M * K, 1), [...lead, ...(opts.transA ? [K, M] : [M, K])], 'f32', 'bench.a');
    const b = gpu.upload(fillValues(batch * K * N, 2), [...lead, ...(opts.transB ? [N, K] : [K, N])], opts.bDtype ?? 'f32', 'bench.b');
    const c: Tensor = gpu.tensor([...lead, M, N], 'f32', 'bench.c');
    const flops = 2 * batch * M * N * K;
    for (const variant of opts.variants ?? [opts.variant]) {
      const call = () => matmul(gpu, c, a, b, { transA: opts.transA, transB: opts.transB, variant });
      for (let i = 0; i < (opts.warmup ?? 2); i++) call();
      await gpu.sync();
      const key = call();
      const reps = opts.reps ?? (await calibrate(gpu, call, opts.roundMs ?? 300));
      const wall: number[] = [];
      const gpuTimes: number[] = [];
      for (let r = 0; r < (opts.rounds ?? 1); r++) {
        wall.push(await streamed(gpu, call, reps));
        if (opts.timestamps && gpu.hasTimestamps) {
          gpu.startProfile();
          for (let i = 0; i < reps; i++) call();
          gpuTimes.push((await gpu.stopProfile()).reduce((s, k) => s + k.ms, 0) / reps);
        }
      }
      const ms = median(wall);
      const gpuMs = gpuTimes.length ? median(gpuTimes) : undefined;
      rows.push({ shape: [M, N, K], variant: key, ms, gflops: flops / (ms * 1e6), ...(gpuMs === undefined ? {} : { gpuMs }) });
    }
    gpu.release(a, b, c);
  }
  return rows;
}

/** One product of a sweep (bench/matmul-sweep.ts): its default variant and its fastest, in TFLOP/s. */
export interface SweepResult {
  name: string;
  trans: 'nn' | 'nt' | 'tn' | 'tt';
  M: number;
  N: number;
  K: number;
  /** The dim that is the token count (M for forward and dX, K for dW); its pick covers a bucket of counts. */
  tokenDim?: 'M' | 'K';
  default: { variant: MatmulVariant; tflops: number };
  best: { variant: MatmulVariant; tflops: number };
}

/**
 * The PICKS rows a sweep supports: for each product whose best variant beats the default by `minGain`
 * (0.05: 5 %), exact dims except the token dim, which covers its bucket of token counts (from half the
 * smallest measured count, split at the geometric means between counts, the largest open-ended); a
 * product's neighbouring buckets with the same pick merge into one row. Each row's provenance is `origin`
 * (the GPU, the date, where the sweep's output went) and its measured gains.
 */
export function sweepPicks(results: SweepResult[], tokens: number[], minGain = 0.05, origin = 'bench/matmul-sweep.ts'): Pick[] {
  const sorted = [...new Set(tokens)].sort((a, b) => a - b);
  const bucket = (T: number): [number, number] => {
    const i = sorted.indexOf(T);
    if (i < 0) return [T, T];
    const lo = i === 0 ? Math.ceil(T / 2) : Math.floor(Math.sqrt(sorted[i - 1] * T)) + 1;
    const hi = i === sorted.length - 1 ? Infinity : Math.floor(Math.sqrt(T * sorted[i + 1]));
    return [lo, hi];
  };
  // a product's token buckets side by side: order by (trans, token dim, the other dims, the token count)
  const order = (r: SweepResult) => [
    r.trans,
    r.tokenDim ?? '',
    r.tokenDim === 'M' ? r.N : r.M,
    r.tokenDim === 'M' ? r.K : r.N,
    r.tokenDim === 'M' ? r.M : r.K,
  ];
  const byProduct = [...results].sort((x, y) => {
    const [a, b] = [order(x), order(y)];
    for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
    return 0;
  });
  const out: Array<{ pick: Omit<Pick, 'provenance'>; why: string }> = [];
  const dims = ['M', 'N', 'K'] as const;
  for (const r of byProduct) {
    if (r.best.variant === r.default.variant || r.best.tflops < (1 + minGain) * r.default.tflops) continue;
    const range = (d: 'M' | 'N' | 'K'): [number, number] => (r.tokenDim === d ? bucket(r[d]) : [r[d], r[d]]);
    const pick: Omit<Pick, 'provenance'> = { trans: r.trans, M: range('M'), N: range('N'), K: range('K'), variant: r.best.variant };
    const why = `${r.name} ${r.default.variant} ${r.default.tflops.toFixed(1)} -> ${r.best.tflops.toFixed(1)}`;
    const prev = out[out.length - 1];
    const td = r.tokenDim;
    if (
      td &&
      prev &&
      prev.pick.variant === pick.variant &&
      prev.pick.trans === pick.trans &&
      dims.every((k) => k === td || prev.pick[k]![0] === pick[k]![0]) &&
      prev.pick[td]![1] + 1 === pick[td]![0]
    ) {
      prev.pick = { ...prev.pick, [td]: [prev.pick[td]![0], pick[td]![1]] };
      prev.why += `, ${why}`;
    } else {
      out.push({ pick, why });
    }
  }
  return out.map(({ pick, why }) => ({ ...pick, provenance: `${origin}: ${why} (TFLOP/s)` }));
}

/** A PICKS row as TypeScript source, a row of picks.ts's table. */
export function pickLine(pick: Pick): string {
  const r = (x?: readonly [number, number]) => (x ? `[${x[0]}, ${x[1] === Infinity ? 'Infinity' : x[1]}]` : 'undefined');
  const str = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
  return `{ trans: '${pick.trans}', M: ${r(pick.M)}, N: ${r(pick.N)}, K: ${r(pick.K)}, variant: '${pick.variant}', provenance: ${str(pick.provenance)} },`;
}
