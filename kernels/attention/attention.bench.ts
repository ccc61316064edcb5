// Timing of causal attention forward and backward (llm.c's dev/cuda habit: a benchmark beside the kernel).
// bench/kernels.ts calls benchAttention and prints the rows; bench/attention-sweep.ts times the backward's
// variants with the same inputs, timer and FLOP convention.

import { Rng } from '../../src/common/rng.ts';
import type { Gpu } from '../../src/gpu/gpu.ts';
import { timeCalls } from '../timing.ts';
import { attentionBackward, attentionForward } from './attention.ts';

export interface AttentionBenchCase {
  B: number;
  T: number;
  NH: number;
  NKV: number;
  HS: number;
}
export interface AttentionBenchRow {
  case: AttentionBenchCase;
  fwdMs: number;
  bwdMs: number;
  fwdGflops: number;
  bwdGflops: number;
}

/** Causal forward FLOPs: QK^T and PV over the lower triangle, 2 * 2 * B * NH * T^2 * HS / 2. */
export const attentionFwdFlops = (c: AttentionBenchCase): number => (4 * c.B * c.NH * c.T * c.T * c.HS) / 2;
/** Backward FLOPs counted as 2.5x the forward (FlashAttention-2's convention), though ours recomputes more. */
export const attentionBwdFlops = (c: AttentionBenchCase): number => 2.5 * attentionFwdFlops(c);

/** n seeded values in [-1, 1) (not testing.ts's randn: that module imports vitest). */
export function randn(n: number, seed: number): Float32Array {
  const rng = new Rng(seed);
  return Float32Array.from({ length: n }, () => rng.next() * 2 - 1);
}

/** Milliseconds a call of `fn`: the median of 5 streamed rounds lasting about `budgetMs` in all (timing.ts). */
export const timeIt = (gpu: Gpu, fn: () => void, budgetMs: number): Promise<number> => timeCalls(gpu, fn, budgetMs / 5);

/** The benchmark's tensors for one case: seeded q, k, v, dout, and out, lse, dq, dk, dv to write. */
export function benchTensors(gpu: Gpu, c: AttentionBenchCase) {
  const { B, T, NH, NKV, HS } = c;
  const qShape = [B, T, NH, HS];
  const kShape = [B, T, NKV, HS];
  return {
    q: gpu.upload(randn(B * T * NH * HS, 1), qShape, 'f32', 'bench.q'),
    k: gpu.upload(randn(B * T * NKV * HS, 2), kShape, 'f32', 'bench.k'),
    v: gpu.upload(randn(B * T * NKV * HS, 3), kShape, 'f32', 'bench.v'),
    dout: gpu.upload(randn(B * T * NH * HS, 4), qShape, 'f32', 'bench.dout'),
    out: gpu.tensor(qShape, 'f32', 'bench.out'),
    lse: gpu.tensor([B, NH, T], 'f32', 'bench.lse'),
    dq: gpu.tensor(qShape, 'f32', 'bench.dq'),
    dk: gpu.tensor(kShape, 'f32', 'bench.dk'),
    dv: gpu.tensor(kShape, 'f32', 'bench.dv'),
  };
}

export async function benchAttention(gpu: Gpu, cases: AttentionBenchCase[], budgetMs = 500): Promise<AttentionBenchRow[]> {
  const rows: AttentionBenchRow[] = [];
  for (const c of cases) {
    const { q, k, v, dout, out, lse, dq, dk, dv } = benchTensors(gpu, c);
    const fwdMs = await timeIt(gpu, () => attentionForward(gpu, out, lse, q, k, v), budgetMs);
    const bwdMs = await timeIt(gpu, () => attentionBackward(gpu, dq, dk, dv, dout, q, k, v, out, lse), budgetMs);
    rows.push({
      case: c,
      fwdMs,
      bwdMs,
      fwdGflops: attentionFwdFlops(c) / fwdMs / 1e6,
      bwdGflops: attentionBwdFlops(c) / bwdMs / 1e6,
    });
    gpu.release(q, k, v, dout, out, lse, dq, dk, dv);
  }
  return rows;
}
