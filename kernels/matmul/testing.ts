// Shared cases of the matmul tests: shapes, transposes, tolerances, and one case run against the float64
// reference on the stored (rounded) inputs.

import type { Gpu } from '../../src/gpu/gpu.ts';
import { round16 } from '../../src/gpu/half.ts';
import type { WeightDType } from '../common.ts';
import { expectClose, randn } from '../testing.ts';
import { type MatmulOpts, matmul } from './matmul.ts';
import type { MatmulVariant, TileConfig } from './tile.ts';
import type { BlockShape } from './block.ts';
import { type MatmulRefDims, matmulRef } from './matmul.ref.ts';

export type Shape = [M: number, N: number, K: number];
export const SHAPES: Shape[] = [
  [1, 1, 1],
  [7, 7, 7],
  [64, 64, 64],
  [65, 65, 65],
  [130, 130, 130],
  [7, 130, 65],
  [130, 5, 64],
];
export const TRANS = [
  [false, false],
  [false, true],
  [true, false],
  [true, true],
] as const;
export const tname = (ta: boolean, tb: boolean) => `${ta ? 't' : 'n'}${tb ? 't' : 'n'}`;

/** f32 accumulation over K terms of products of O(1) values: error grows like sqrt(K) * eps * |terms|. */
export const tolFor = (K: number) => ({ atol: 1e-4 * Math.max(1, Math.sqrt(K) / 4), rtol: 1e-4 });

/** The values the GPU holds for an upload of x with this dtype, in float64. */
export const stored = (x: Float64Array, dtype: WeightDType): Float64Array =>
  dtype === 'f32' ? Float64Array.from(Float32Array.from(x)) : round16(x, dtype);

export interface Case {
  shape: Shape;
  ta: boolean;
  tb: boolean;
  dtype: WeightDType;
  seed: number;
  batch?: number;
  broadcastA?: boolean;
  broadcastB?: boolean;
  alpha?: number;
  accumulate?: boolean;
  bias?: boolean;
  variant?: MatmulVariant | TileConfig;
  pairB?: boolean;
  block?: BlockShape;
}

/**
 * Runs one case on the GPU and checks it against the float64 reference on the stored (rounded) inputs;
 * returns what the GPU wrote (to compare two variants on the same case).
 */
export async function check(gpu: Gpu, c: Case): Promise<Float32Array> {
  const [M, N, K] = c.shape;
  const batch = c.batch ?? 1;
  const bA = c.broadcastA || batch === 1 ? 1 : batch;
  const bB = c.broadcastB || batch === 1 ? 1 : batch;
  const aMat = c.ta ? [K, M] : [M, K];
  const bMat = c.tb ? [N, K] : [K, N];
  const a = stored(randn(bA * M * K, c.seed), 'f32');
  const b = stored(randn(bB * K * N, c.seed + 1), c.dtype);
  const bias = c.bias ? stored(randn(N, c.seed + 2), 'f32') : undefined;
  const c0 = stored(randn(batch * M * N, c.seed + 3), 'f32');
  const tA = gpu.upload(a, bA > 1 ? [bA, ...aMat] : aMat, 'f32', 'a');
  const tB = gpu.upload(b, bB > 1 ? [bB, ...bMat] : bMat, c.dtype, 'b');
  const tBias = bias ? gpu.upload(bias, [N], 'f32', 'bias') : undefined;
  const tC = c.accumulate
    ? gpu.upload(c0, batch > 1 ? [batch, M, N] : [M, N], 'f32', 'c')
    : gpu.tensor(batch > 1 ? [batch, M, N] : [M, N], 'f32', 'c');
  const opts: MatmulOpts = {
    transA: c.ta,
    transB: c.tb,
    alpha: c.alpha,
    accumulate: c.accumulate,
    bias: tBias,
    variant: c.variant,
    pairB: c.pairB,
    block: c.block,
  };
  const key = matmul(gpu, tC, tA, tB, opts);
  const dims: MatmulRefDims = {
    M,
    N,
    K,
    batch,
    transA: c.ta,
    transB: c.tb,
    alpha: c.alpha ?? 1,
    strideA: bA > 1 ? M * K : 0,
    strideB: bB > 1 ? K * N : 0,
    strideC: M * N,
  };
  const ref = matmulRef(a, b, dims, { bias, c0: c.accumulate ? c0 : undefined, accumulate: c.accumulate });
  const got = (await gpu.read(tC)) as Float32Array;
  expectClose(`c ${tname(c.ta, c.tb)} ${c.dtype} ${c.shape.join('x')} ${key}`, got, ref, tolFor(K));
  gpu.release(tA, tB, tBias, tC);
  return got;
}

/**
 * A batch of 2 (5, K) A matrices strideA apart after an offset of 3, one shared (K, 4) B, C rows 24 apart after
 * an offset of 2, all inside larger buffers: against the float64 reference over the whole C buffer.
 */
export async function checkStrided(gpu: Gpu, K: number, strideA: number, seed: number, variant?: MatmulVariant): Promise<void> {
  const [M, N, batch] = [5, 4, 2];
  const a = stored(randn(3 + strideA + M * K, seed), 'f32');
  const b = stored(randn(K * N, seed + 1), 'f32');
  const tA = gpu.upload(a, [a.length, 1], 'f32', 'a');
  const tB = gpu.upload(b, [K, N], 'f32', 'b');
  const tC = gpu.zeros([2 + 24 + M * N, 1], 'f32', 'c');
  const dims = { M, N, K, batch, strideA, strideB: 0, strideC: 24, offsetA: 3, offsetB: 0, offsetC: 2 };
  matmul(gpu, { ...tC, shape: [M, N] }, { ...tA, shape: [M, K] }, tB, { ...dims, ...(variant ? { variant } : {}) });
  expectClose(`c strided${variant ? ` ${variant}` : ''}`, await gpu.read(tC), matmulRef(a, b, dims, { cSize: 2 + 24 + M * N }), tolFor(K));
  gpu.release(tA, tB, tC);
}
