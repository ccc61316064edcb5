// A small benchmark of the matmul kernel (llm.c's dev/cuda habit): time per call and GFLOP/s for a list of
// shapes, measured with gpu.sync() around a batch of repetitions after a warm-up.

import type { Gpu } from '../../src/gpu/gpu.ts';
import type { Tensor } from '../../src/gpu/tensor.ts';
import type { WeightDType } from '../common.ts';
import { type MatmulVariant, type TileConfig, matmul } from './matmul.ts';

export interface MatmulBenchOpts {
  transA?: boolean;
  transB?: boolean;
  /** Storage dtype of B (default f32). */
  bDtype?: WeightDType;
  batch?: number;
  variant?: MatmulVariant | TileConfig;
  /** Repetitions per shape; default: enough for about 0.3 s of GPU time (3 to 200). */
  reps?: number;
  warmup?: number;
}

export interface MatmulBenchRow {
  shape: [M: number, N: number, K: number];
  /** The program key that ran, e.g. 'matmul:nn:f32:128x128x16_8x8'. */
  variant: string;
  ms: number;
  gflops: number;
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

export async function benchMatmul(gpu: Gpu, shapes: Array<[number, number, number]>, opts: MatmulBenchOpts = {}): Promise<MatmulBenchRow[]> {
  const rows: MatmulBenchRow[] = [];
  const batch = opts.batch ?? 1;
  const lead = batch > 1 ? [batch] : [];
  for (const [M, N, K] of shapes) {
    const a = gpu.upload(fillValues(batch * M * K, 1), [...lead, ...(opts.transA ? [K, M] : [M, K])], 'f32', 'bench.a');
    const b = gpu.upload(fillValues(batch * K * N, 2), [...lead, ...(opts.transB ? [N, K] : [K, N])], opts.bDtype ?? 'f32', 'bench.b');
    const c: Tensor = gpu.tensor([...lead, M, N], 'f32', 'bench.c');
    const call = () => matmul(gpu, c, a, b, { transA: opts.transA, transB: opts.transB, variant: opts.variant });
    for (let i = 0; i < (opts.warmup ?? 2); i++) call();
    await gpu.sync();
    let t0 = performance.now();
    const key = call();
    await gpu.sync();
    const once = performance.now() - t0;
    const reps = opts.reps ?? Math.min(200, Math.max(3, Math.ceil(300 / Math.max(once, 1e-3))));
    t0 = performance.now();
    for (let i = 0; i < reps; i++) call();
    await gpu.sync();
    const ms = (performance.now() - t0) / reps;
    rows.push({ shape: [M, N, K], variant: key, ms, gflops: (2 * batch * M * N * K) / (ms * 1e6) });
    gpu.release(a, b, c);
  }
  return rows;
}
