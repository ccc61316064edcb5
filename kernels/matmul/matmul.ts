// Launchers for the tiled f32 matmul (matmul.wgsl) and its backward (the same kernel with other transposes).
//   C (M, N) = alpha * op(A) (M, K) . op(B) (K, N) [+ bias (N)] [+ C], batched with per-operand strides.
// The tile configuration (variant) is picked from the shape by variants.ts (the measured PICKS table in
// picks.ts, from bench/matmul-sweep.ts), else 'big:v4:w' 128x128 blocks for large products, 'mid:v4:w' 64x64,
// and small blocks for skinny shapes (decode M=8, value heads N=1); on CPU adapters (Gpu.cpu) the
// barrier-free register blocks of block.wgsl, sized by M (blockShape). A variant '<tile>:k<S>' splits K into
// S slices (splitk.wgsl sums them in a fixed order), for products with few output tiles and a long K (weight
// gradients, K = tokens); '<tile>:v4' reads an f32 operand contiguous along its load axis as vec4; '<tile>:w'
// lays the threads out 8 x 4 a warp (see warpLayout). Compile-time choices (transposes, B dtype, accumulate,
// bias, tile, split, vec4, warp layout) form the program key; shapes, strides, alpha and the split's slice
// length and count are uniforms. This file checks the operands and picks; each variant's generated WGSL
// and dispatch have their own file: tiled.ts, splitk.ts, block.ts, gemv.ts, direct.ts.

import type { Gpu } from '../../src/gpu/gpu.ts';
import { shapeError } from '../../src/gpu/errors.ts';
import { type Tensor, is16, numel, shapeStr } from '../../src/gpu/tensor.ts';
import { type BlockShape, blockShape, launchBlock } from './block.ts';
import { launchDirect } from './direct.ts';
import { GEMV, launchGemv } from './gemv.ts';
import type { MatmulCall, MatmulDims } from './kernel.ts';
import { launchSplit, splitK } from './splitk.ts';
import { type MatmulVariant, type TileConfig, TILES, tiledVariant, warpLayout } from './tile.ts';
import { type Layout, canPairB, launchTiled, vec4A, vec4B } from './tiled.ts';
import { chooseVariant } from './variants.ts';

export type { MatmulDims };
export { type TiledChoices, matmulSource } from './tiled.ts';

export interface MatmulOpts {
  /** A is stored (K, M) instead of (M, K). */
  transA?: boolean;
  /** B is stored (N, K) instead of (K, N) (a Linear weight (out, in) is transB). */
  transB?: boolean;
  alpha?: number;
  /** C += result instead of C = result. */
  accumulate?: boolean;
  /** (N) f32 added to every row. */
  bias?: Tensor;
  /** Batch count; default: the product of the leading dims of the 3-D+ operands. */
  batch?: number;
  /** Element strides between batches; default: the matrix size for batched operands, 0 (broadcast) for 2-D. */
  strideA?: number;
  strideB?: number;
  strideC?: number;
  /** Element offsets of batch 0 in each buffer (default 0). */
  offsetA?: number;
  offsetB?: number;
  offsetC?: number;
  /** Tile variant (name or explicit config); default picked from the shape. */
  variant?: MatmulVariant | TileConfig;
  /** The 'block' variant's TM x TN (default blockShape(M)). */
  block?: BlockShape;
  /**
   * Reads a 16-bit B a u32 word (two elements) at a time where the layout allows (see canPairB). Off by
   * default: on an H200 it measured slower for bf16 (nt 24.7 vs 29.9 TFLOP/s at 4096^3), faster only for f16 nt.
   */
  pairB?: boolean;
}

const isFloat = (t: Tensor) => t.dtype === 'f32' || is16(t.dtype);

/**
 * Checks that `batch` (rows, cols) matrices at offset + z*stride stay inside the tensor's buffer (views with
 * explicit strides may reach past their nominal shape, never past the buffer).
 */
function checkExtent(op: string, name: string, t: Tensor, rows: number, cols: number, batch: number, stride: number, offset: number): void {
  if (!Number.isInteger(stride) || stride < 0 || !Number.isInteger(offset) || offset < 0) {
    shapeError(op, `${name}: stride ${stride} and offset ${offset} must be non-negative integers`);
  }
  if (batch === 0 || rows * cols === 0) return;
  const need = offset + (batch - 1) * stride + rows * cols;
  const holds = is16(t.dtype) ? (t.buffer.size / 4) * 2 : t.buffer.size / 4;
  if (need > holds) {
    shapeError(
      op,
      `${name} ${shapeStr(t)}: ${batch} batch(es) of (${rows}, ${cols}) at offset ${offset}, stride ${stride} need ${need} elements, its buffer holds ${holds}`,
    );
  }
}

/** Validates a resolved problem against the buffers (no dispatch). */
function checkDims(op: string, out: Tensor, a: Tensor, b: Tensor, bias: Tensor | undefined, d: MatmulDims, sumOut = false): void {
  const { M, N, K, batch } = d;
  for (const [n, v] of Object.entries({ M, N, K, batch })) {
    if (!Number.isInteger(v) || v < 0 || v > 0x7fffffff) shapeError(op, `${n} = ${v} is not a valid size`);
  }
  if (a.dtype !== 'f32') shapeError(op, `a must be f32, got ${shapeStr(a)}`);
  if (!isFloat(b)) shapeError(op, `b must be f32, bf16 or f16, got ${shapeStr(b)}`);
  if (out.dtype !== 'f32') shapeError(op, `out must be f32, got ${shapeStr(out)}`);
  if (out.buffer === a.buffer || out.buffer === b.buffer || (bias && out.buffer === bias.buffer)) {
    shapeError(op, `out ${shapeStr(out)} must not share a buffer with an input`);
  }
  if (bias && (bias.dtype !== 'f32' || numel(bias.shape) !== N)) shapeError(op, `bias must be (${N}) f32, got ${shapeStr(bias)}`);
  if (batch > 1 && d.strideC === 0 && !sumOut)
    shapeError(op, `out: stride 0 over ${batch} batches would race (sum a broadcast gradient with accumulate instead)`);
  checkExtent(op, 'a', a, M, K, batch, d.strideA, d.offsetA);
  checkExtent(op, 'b', b, K, N, batch, d.strideB, d.offsetB);
  checkExtent(op, 'out', out, M, N, sumOut ? 1 : batch, d.strideC, d.offsetC);
  if (batch > 65535) shapeError(op, `batch ${batch} exceeds 65535 workgroups per dimension`);
  if (is16(b.dtype) && d.offsetB + (batch - 1) * d.strideB + K * N > 0x7fffffff) shapeError(op, 'b is too large to index');
}

/** Records the dispatch of a validated product with the variant asked for, or the one chosen for its shape. */
function launch(gpu: Gpu, c: MatmulCall, variant?: MatmulVariant | TileConfig, pairB = false, block?: BlockShape): string {
  const { a, b, d } = c;
  const v = variant ?? (gpu.cpu ? 'block' : chooseVariant(d, gpu.limits.maxComputeWorkgroupStorageSize));
  if (v === 'block') {
    const shape = block ?? blockShape(d.M);
    return Math.ceil(d.M / shape.tm) > 65535 ? launchDirect(gpu, c) : launchBlock(gpu, c, shape);
  }
  if (v === 'direct') return launchDirect(gpu, c);
  if (v === 'gemv' && d.M <= GEMV.maxM) return launchGemv(gpu, c);
  const { tile, splits, vec4, warp } = v === 'gemv' ? { tile: TILES.rows, splits: 1, vec4: false, warp: false } : tiledVariant(v)!;
  const pair = pairB && canPairB(tile, d, b.dtype);
  // vec4 loads of A and B, and the warp layout, where they apply
  const layout: Layout = { vecA: vec4 && vec4A(d, a), vecB: vec4 && !pair && vec4B(d, b), warp: warp && warpLayout(tile) };
  const split = splitK(gpu, tile, d, splits);
  if (split) return launchSplit(gpu, c, tile, pair, layout, split);
  return launchTiled(gpu, c, tile, pair, layout);
}

/**
 * Resolves M, N, K, batch and strides from the tensors' shapes: the last two dims of each operand are its
 * matrix, leading dims are the batch (2-D operands broadcast). out is (..., M, N); a is (..., M, K), or
 * (..., K, M) with transA; b is (..., K, N), or (..., N, K) with transB.
 */
export function matmulDims(out: Tensor, a: Tensor, b: Tensor, opts: MatmulOpts = {}): MatmulDims {
  const op = 'matmul';
  const transA = Boolean(opts.transA);
  const transB = Boolean(opts.transB);
  const desc = () => `out ${shapeStr(out)}, a ${shapeStr(a)}${transA ? ' (transA)' : ''}, b ${shapeStr(b)}${transB ? ' (transB)' : ''}`;
  for (const [n, t] of [
    ['out', out],
    ['a', a],
    ['b', b],
  ] as const) {
    if (t.shape.length < 2) shapeError(op, `${n} must have at least 2 dims (rows, cols): ${desc()}`);
  }
  const mat = (t: Tensor) => [t.shape[t.shape.length - 2], t.shape[t.shape.length - 1]];
  const lead = (t: Tensor) => numel(t.shape.slice(0, -2));
  const [aR, aC] = mat(a);
  const [bR, bC] = mat(b);
  const [M, K] = transA ? [aC, aR] : [aR, aC];
  const [K2, N] = transB ? [bC, bR] : [bR, bC];
  if (K !== K2) shapeError(op, `inner dims differ (K = ${K} from a, ${K2} from b): ${desc()}`);
  if (mat(out)[0] !== M || mat(out)[1] !== N) shapeError(op, `out must be (..., ${M}, ${N}): ${desc()}`);
  const batch = opts.batch ?? Math.max(lead(out), lead(a), lead(b));
  for (const [n, t] of [
    ['out', out],
    ['a', a],
    ['b', b],
  ] as const) {
    const l = lead(t);
    if (opts.batch === undefined && l !== 1 && l !== batch) shapeError(op, `${n} has batch ${l}, expected ${batch} or 1: ${desc()}`);
  }
  const stride = (t: Tensor, explicit: number | undefined, size: number) => explicit ?? (lead(t) > 1 ? size : 0);
  return {
    M,
    N,
    K,
    batch,
    transA,
    transB,
    strideA: stride(a, opts.strideA, M * K),
    strideB: stride(b, opts.strideB, K * N),
    strideC: stride(out, opts.strideC, M * N),
    offsetA: opts.offsetA ?? 0,
    offsetB: opts.offsetB ?? 0,
    offsetC: opts.offsetC ?? 0,
    alpha: opts.alpha ?? 1,
    accumulate: Boolean(opts.accumulate),
  };
}

/** out = alpha * op(a) . op(b) [+ bias] [+ out]. Returns the program key used (for benchmarks and logs). */
export function matmul(gpu: Gpu, out: Tensor, a: Tensor, b: Tensor, opts: MatmulOpts = {}): string {
  const d = matmulDims(out, a, b, opts);
  checkDims('matmul', out, a, b, opts.bias, d);
  return launch(gpu, { out, a, b, bias: opts.bias, d }, opts.variant, opts.pairB, opts.block);
}

export interface MatmulBackwardOpts extends MatmulOpts {
  /** dA += instead of dA = (default false). */
  accumulateDA?: boolean;
  /** dB += instead of dB = (default false). Parameter gradients usually accumulate. */
  accumulateDB?: boolean;
}

/**
 * Gradients of out = alpha * op(a) . op(b) [+ bias] given dout: da (shaped like a) and db (shaped like b),
 * either may be null. A 16-bit b is a frozen weight: asking for its db throws. An operand broadcast over
 * the batch (stride 0) gets the sum over the batch. The bias gradient (column sums of dout) is not computed here.
 */
export function matmulBackward(
  gpu: Gpu,
  da: Tensor | null,
  db: Tensor | null,
  dout: Tensor,
  a: Tensor,
  b: Tensor,
  opts: MatmulBackwardOpts = {},
): void {
  const op = 'matmulBackward';
  const d = matmulDims(dout, a, b, opts);
  checkDims(op, dout, a, b, undefined, { ...d, accumulate: false });
  const { M, N, K, transA, transB } = d;
  const jobs: Array<() => void> = [];
  if (da) {
    if (da.dtype !== 'f32' || numel(da.shape) !== numel(a.shape))
      shapeError(op, `da must be f32 shaped like a ${shapeStr(a)}, got ${shapeStr(da)}`);
    if (transA && is16(b.dtype)) shapeError(op, `da with transA needs b in the kernel's A slot, which is f32 only; b is ${shapeStr(b)}`);
    // not transA: da (M,K) = alpha * dC (M,N) . op(B)^T ;  transA: da (K,M) = alpha * op(B) (K,N) . dC^T
    const dd: MatmulDims = transA
      ? {
          ...d,
          M: K,
          N: M,
          K: N,
          transA: transB,
          transB: true,
          strideA: d.strideB,
          strideB: d.strideC,
          strideC: d.strideA,
          offsetA: d.offsetB,
          offsetB: d.offsetC,
          offsetC: d.offsetA,
          accumulate: Boolean(opts.accumulateDA),
        }
      : {
          ...d,
          M,
          N: K,
          K: N,
          transA: false,
          transB: !transB,
          strideA: d.strideC,
          strideB: d.strideB,
          strideC: d.strideA,
          offsetA: d.offsetC,
          offsetB: d.offsetB,
          offsetC: d.offsetA,
          accumulate: Boolean(opts.accumulateDA),
        };
    const [x, y] = transA ? [b, dout] : [dout, b];
    checkDims(op, da, x, y, undefined, dd, true);
    jobs.push(() => launchGrad(gpu, da, x, y, dd, opts.variant, opts.pairB));
  }
  if (db) {
    if (is16(b.dtype)) shapeError(op, `b ${shapeStr(b)} is a frozen 16-bit weight: no db`);
    if (db.dtype !== 'f32' || numel(db.shape) !== numel(b.shape))
      shapeError(op, `db must be f32 shaped like b ${shapeStr(b)}, got ${shapeStr(db)}`);
    // not transB: db (K,N) = alpha * op(A)^T (K,M) . dC (M,N) ;  transB: db (N,K) = alpha * dC^T (N,M) . op(A) (M,K)
    const dd: MatmulDims = transB
      ? {
          ...d,
          M: N,
          N: K,
          K: M,
          transA: true,
          transB: transA,
          strideA: d.strideC,
          strideB: d.strideA,
          strideC: d.strideB,
          offsetA: d.offsetC,
          offsetB: d.offsetA,
          offsetC: d.offsetB,
          accumulate: Boolean(opts.accumulateDB),
        }
      : {
          ...d,
          M: K,
          N,
          K: M,
          transA: !transA,
          transB: false,
          strideA: d.strideA,
          strideB: d.strideC,
          strideC: d.strideB,
          offsetA: d.offsetA,
          offsetB: d.offsetC,
          offsetC: d.offsetB,
          accumulate: Boolean(opts.accumulateDB),
        };
    const [x, y] = transB ? [dout, a] : [a, dout];
    checkDims(op, db, x, y, undefined, dd, true);
    jobs.push(() => launchGrad(gpu, db, x, y, dd, opts.variant));
  }
  for (const j of jobs) j();
}

/**
 * One gradient product. When the gradient's operand is broadcast (strideC 0) over several batches, the
 * batches are summed: in one product over the stacked rows when both inputs are contiguous batches that
 * stack along the summed dim, else by one accumulating dispatch per batch.
 */
function launchGrad(gpu: Gpu, out: Tensor, x: Tensor, y: Tensor, d: MatmulDims, variant?: MatmulVariant | TileConfig, pairB = false): void {
  if (d.batch <= 1 || d.strideC !== 0) {
    launch(gpu, { out, a: x, b: y, d }, variant, pairB);
    return;
  }
  // sum_z op(X_z) . op(Y_z): the inner dim K runs over the batch when X is (K, M)-stored (transA) and Y is
  // (K, N)-stored (not transB), with batches laid end to end (stride = K*M, K*N).
  if (d.transA && !d.transB && d.strideA === d.K * d.M && d.strideB === d.K * d.N) {
    launch(gpu, { out, a: x, b: y, d: { ...d, K: d.K * d.batch, batch: 1, strideA: 0, strideB: 0 } }, variant, pairB);
    return;
  }
  for (let z = 0; z < d.batch; z++) {
    const dz: MatmulDims = {
      ...d,
      batch: 1,
      offsetA: d.offsetA + z * d.strideA,
      offsetB: d.offsetB + z * d.strideB,
      strideA: 0,
      strideB: 0,
      accumulate: d.accumulate || z > 0,
    };
    launch(gpu, { out, a: x, b: y, d: dz }, variant, pairB);
  }
}
