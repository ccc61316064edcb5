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
// length and count are uniforms.

import type { Gpu } from '../../src/gpu/gpu.ts';
import { shapeError } from '../../src/gpu/errors.ts';
import { grid1d, programFactory } from '../../src/gpu/program.ts';
import { type Tensor, is16, numel, shapeStr } from '../../src/gpu/tensor.ts';
import { type WeightDType, fillTemplate, loadFn } from '../common.ts';
import directSource from './direct.wgsl';
import source from './matmul.wgsl';
import { type BlockShape, blockShape, launchBlock } from './block.ts';
import { GEMV, launchGemv } from './gemv.ts';
import { type MatmulDims, headerOf, product, productBindings, productUniforms, splitSum, tiled } from './kernel.ts';
import splitkSource from './splitk.wgsl';
import { type MatmulVariant, type TileConfig, TILES, tileName, tileSharedBytes, tiledVariant, warpLayout } from './tile.ts';
import { chooseVariant } from './variants.ts';

export type { MatmulDims };

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

function checkTile(t: TileConfig, sharedBytes: number): void {
  const bad = (why: string) => shapeError('matmul', `tile ${tileName(t)}: ${why}`);
  if (t.tm % 4 || t.tn % 4 || t.bm % t.tm || t.bn % t.tn) bad('TM, TN must be multiples of 4 dividing BM, BN');
  const wg = (t.bm / t.tm) * (t.bn / t.tn);
  if (wg > 256) bad(`${wg} threads per workgroup (at most 256)`);
  if (((t.bm / 4) * t.bk) % wg || ((t.bn / 4) * t.bk) % wg) bad('the shared tiles must split evenly into vec4 loads per thread');
  if (tileSharedBytes(t) > sharedBytes) bad(`needs ${tileSharedBytes(t)} bytes of workgroup memory, the device has ${sharedBytes}`);
}

/** The compile-time choices of a tiled matmul module besides its tile. */
export interface TiledChoices {
  /** A is stored (K, M), B (N, K). */
  transA: boolean;
  transB: boolean;
  bDtype: WeightDType;
  /** out += the product (else =). */
  accumulate: boolean;
  /** A bias (N) is added. */
  bias: boolean;
  /** A 16-bit B is read a u32 word (two elements) at a time (see canPairB). */
  pairB?: boolean;
  /** The partial pass of a K split (no epilogue: the reduction applies it). */
  split?: boolean;
  /** A, B read a vec4 at a time (see vec4A, vec4B). */
  vecA?: boolean;
  vecB?: boolean;
  /** The 8 x 4 threads a warp layout (see warpLayout). */
  warp?: boolean;
}

const matmulKey = (t: TileConfig, { transA, transB, bDtype, accumulate, bias, pairB, split, vecA, vecB, warp }: TiledChoices): string =>
  `matmul:${transA ? 't' : 'n'}${transB ? 't' : 'n'}:${bDtype}${pairB ? 'x2' : ''}:${tileName(t)}${vecA ? ':va' : ''}${vecB ? ':vb' : ''}${warp ? ':w' : ''}${split ? ':k' : ''}${accumulate ? ':acc' : ''}${bias ? ':bias' : ''}`;

/** Whether A can be read a vec4 at a time: its loads run along M (transA), 4-aligned, in a whole number of vec4s. */
const vec4A = (d: MatmulDims, a: Tensor): boolean =>
  d.transA && d.M % 4 === 0 && d.offsetA % 4 === 0 && d.strideA % 4 === 0 && a.buffer.size % 16 === 0;
/** Whether B can be read a vec4 at a time: f32, its loads run along N (not transB), 4-aligned. */
const vec4B = (d: MatmulDims, b: Tensor): boolean =>
  b.dtype === 'f32' && !d.transB && d.N % 4 === 0 && d.offsetB % 4 === 0 && d.strideB % 4 === 0 && b.buffer.size % 16 === 0;

const matmulProgram = programFactory(
  (_gpu: Gpu, t: TileConfig, c: TiledChoices) => matmulKey(t, c),
  (gpu: Gpu, t: TileConfig, c: TiledChoices) => {
    checkTile(t, gpu.limits.maxComputeWorkgroupStorageSize);
    return tiled.program(matmulKey(t, c), () => matmulSource(t, c), 'forward');
  },
);

/**
 * Whether a 16-bit B can be read a whole u32 word (two elements) at a time: the pair must run along B's
 * contiguous dim (K when transB, N otherwise), which must be even, as must B's offset and batch stride,
 * and the tile must split into pair loads evenly.
 */
function canPairB(t: TileConfig, d: MatmulDims, bDtype: string): boolean {
  if (bDtype === 'f32' || d.offsetB % 2 || d.strideB % 2 || (d.transB ? d.K : d.N) % 2) return false;
  const WG = (t.bm / t.tm) * (t.bn / t.tn);
  return !d.transB || ((t.bn / 4) * (t.bk / 2)) % WG === 0;
}

/** Generates the WGSL of one variant: the unrolled load, multiply and store code around matmul.wgsl's skeleton. */
export function matmulSource(t: TileConfig, c: TiledChoices): string {
  const { transA, transB, bDtype, accumulate, bias, pairB = false, split = false, vecA = false, vecB = false, warp = false } = c;
  if (split && (accumulate || bias)) throw new Error('matmul: a split-K partial pass has no epilogue (the reduction applies it)');
  if ((vecA && !transA) || (vecB && (transB || bDtype !== 'f32' || pairB)))
    throw new Error('matmul: vec4 loads need an f32 operand loaded along its contiguous dim');
  if (warp && !warpLayout(t)) throw new Error(`matmul: ':w' does not apply to tile ${tileName(t)}`);
  const { bm, bn, bk, tm, tn } = t;
  const NTX = bn / tn;
  const NTY = bm / tm;
  const WG = NTX * NTY;
  const RM = tm / 4;
  const RN = tn / 4;
  const GA = ((bm / 4) * bk) / WG;
  const GB = ((bn / 4) * bk) / WG;
  const range = (n: number) => Array.from({ length: n }, (_, i) => i);
  const ind = (n: number, lines: string[]) => lines.map((l) => ' '.repeat(n) + l).join('\n');
  const kBegin = split ? 'kb' : '0u';
  const kEnd = split ? 'kEnd' : 'u.K';
  const idxA = (m: string, k: string) => (transA ? `aBase + (${k}) * u.M + ${m}` : `aBase + (${m}) * u.K + ${k}`);
  const idxB = (k: string, n: string) => (transB ? `bBase + (${n}) * u.K + ${k}` : `bBase + (${k}) * u.N + ${n}`);

  const regs: string[] = [];
  const coords: string[] = [];
  for (const l of range(GA)) {
    regs.push(`var<private> ra${l}: vec4f;`, `var<private> aM${l}: u32;`, `var<private> aK${l}: u32;`);
    const g = `li + ${l * WG}u`;
    coords.push(
      transA
        ? `aM${l} = ((${g}) % ${bm / 4}u) * 4u; aK${l} = (${g}) / ${bm / 4}u;`
        : `aK${l} = (${g}) % ${bk}u; aM${l} = ((${g}) / ${bk}u) * 4u;`,
    );
  }
  // Paired transB loads: a thread reads 4 columns n of 2 neighbouring k (4 words) into two vec4 rows.
  const pairK = pairB && transB;
  const GBL = pairK ? GB / 2 : GB;
  for (const l of range(GBL)) {
    regs.push(`var<private> rb${l}: vec4f;`, `var<private> bN${l}: u32;`, `var<private> bK${l}: u32;`);
    if (pairK) regs.push(`var<private> rb${l}_1: vec4f;`);
    const g = `li + ${l * WG}u`;
    coords.push(
      pairK
        ? `bK${l} = ((${g}) % ${bk / 2}u) * 2u; bN${l} = ((${g}) / ${bk / 2}u) * 4u;`
        : transB
          ? `bK${l} = (${g}) % ${bk}u; bN${l} = ((${g}) / ${bk}u) * 4u;`
          : `bN${l} = ((${g}) % ${bn / 4}u) * 4u; bK${l} = (${g}) / ${bn / 4}u;`,
    );
  }
  const four = (f: (j: number) => string) => `vec4f(${range(4).map(f).join(', ')})`;
  const loadAFull = range(GA).map((l) =>
    vecA
      ? `ra${l} = a[(${idxA(`m0 + aM${l}`, `k0 + aK${l}`)}) >> 2u];`
      : `ra${l} = ${four((j) => `ldA(${idxA(`m0 + aM${l} + ${j}u`, `k0 + aK${l}`)})`)};`,
  );
  const loadAEdge = range(GA).map((l) => `ra${l} = ${four((j) => `getA(m0 + aM${l} + ${j}u, k0 + aK${l})`)};`);
  const loadB = (full: boolean) =>
    range(GBL).flatMap((l) => {
      const get = (k: string, n: string) => (full ? `ldB2(${idxB(k, n)})` : `getB2(${k}, ${n})`);
      if (pairK) {
        return [
          ...range(4).map((j) => `let w${l}_${j} = ${get(`k0 + bK${l}`, `n0 + bN${l} + ${j}u`)};`),
          `rb${l} = vec4f(${range(4)
            .map((j) => `w${l}_${j}.x`)
            .join(', ')});`,
          `rb${l}_1 = vec4f(${range(4)
            .map((j) => `w${l}_${j}.y`)
            .join(', ')});`,
        ];
      }
      if (pairB) {
        return [`rb${l} = vec4f(${get(`k0 + bK${l}`, `n0 + bN${l}`)}, ${get(`k0 + bK${l}`, `n0 + bN${l} + 2u`)});`];
      }
      if (vecB && full) return [`rb${l} = b[(${idxB(`k0 + bK${l}`, `n0 + bN${l}`)}) >> 2u];`];
      return [
        `rb${l} = ${four((j) => (full ? `ldB(${idxB(`k0 + bK${l}`, `n0 + bN${l} + ${j}u`)})` : `getB(k0 + bK${l}, n0 + bN${l} + ${j}u)`))};`,
      ];
    });
  const loadBFull = loadB(true);
  const loadBEdge = loadB(false);
  const storeTiles = [
    ...range(GA).map((l) => `As[p][aK${l}][aM${l} / 4u] = ra${l};`),
    ...range(GBL).flatMap((l) => [
      `Bs[p][bK${l}][bN${l} / 4u] = rb${l};`,
      ...(pairK ? [`Bs[p][bK${l} + 1u][bN${l} / 4u] = rb${l}_1;`] : []),
    ]),
  ];

  const acc = (row: number, j: number) => `acc${row}_${j}`;
  const accDecl = range(tm).flatMap((row) => range(RN).map((j) => `var ${acc(row, j)} = vec4f(0.0);`));
  // the multiply of one step from shared buffer p (a constant or a run-time value)
  const compute = (p: string) => {
    const out: string[] = [];
    for (const k of range(bk)) {
      const lines = [
        ...range(RM).map((i) => `let a${i} = As[${p}][${k}][ty + ${i * NTY}u];`),
        ...range(RN).map((j) => `let b${j} = Bs[${p}][${k}][tx + ${j * NTX}u];`),
      ];
      for (const i of range(RM)) {
        for (const r of range(4)) {
          for (const j of range(RN)) lines.push(`${acc(i * 4 + r, j)} = fma(vec4f(a${i}.${'xyzw'[r]}), b${j}, ${acc(i * 4 + r, j)});`);
        }
      }
      out.push('{', ...lines.map((l) => `  ${l}`), '}');
    }
    return out;
  };
  // One K step: the next step's tiles are fetched from global memory during the multiply, then stored to the
  // other buffer. Steps of up to 256 multiply-adds a thread get a copy per buffer (constant buffer indices);
  // larger ones get one copy, with the buffer a run-time value: on an H200, two copies of 'big' (8 x 8 x 16)
  // ran 4096^3 at 39.8 TFLOP/s and one at 43.6 (two outgrow the instruction cache), while the 4 x 4 x 16 'half'
  // tiles lost 3-5 % with one (bench/results/kernels/matmul-k-step/).
  const step = (p: string) => [
    'if (t >= nt) { break; }',
    ...(p === 'p' ? ['let p = t & 1u;'] : []),
    `if (t + 1u < nt) { loadTiles(${kBegin} + (t + 1u) * BK); }`,
    ...compute(p),
    `if (t + 1u < nt) { storeTiles(1u - ${p}); }`,
    'workgroupBarrier();',
    't++;',
  ];
  const steps = tm * tn * bk <= 256 ? [...step('0u'), ...step('1u')] : step('p');
  const storeC = range(RM).flatMap((i) =>
    range(4).flatMap((r) =>
      range(RN).map((j) => `storeC(m0 + ${i * 4 * NTY + r}u + ty * 4u, n0 + ${j * 4 * NTX}u + tx * 4u, ${acc(i * 4 + r, j)});`),
    ),
  );
  const epilogue = [...(bias ? ['x += bias[col + q];'] : []), ...(accumulate ? ['x += c[base + q];'] : [])];

  return fillTemplate(source, {
    HEADER: headerOf(tiled, vecA ? 'vec4f' : 'f32', vecB ? 'vec4f' : bDtype === 'f32' ? 'f32' : 'u32'),
    LOAD_A: vecA ? 'fn ldA(i: u32) -> f32 { return a[i >> 2u][i & 3u]; }' : 'fn ldA(i: u32) -> f32 { return a[i]; }',
    CONSTS: [
      `const BM = ${bm}u;`,
      `const BN = ${bn}u;`,
      `const BK = ${bk}u;`,
      `const NTX = ${NTX}u;`,
      `const NTY = ${NTY}u;`,
      `const WG = ${WG}u;`,
      `const SA4 = ${bm / 4 + 1}u;`,
      `const SB4 = ${bn / 4 + 1}u;`,
    ].join('\n'),
    REGS: regs.join('\n'),
    LOAD_B: [
      vecB ? 'fn ldB(i: u32) -> f32 { return b[i >> 2u][i & 3u]; }' : loadFn('ldB', 'b', bDtype),
      ...(pairB ? [loadPairFn(bDtype, idxB('k', 'n'), kEnd)] : []),
    ].join('\n'),
    K_BEGIN: kBegin,
    K_END: kEnd,
    K_LEN: split ? 'ke - kb' : 'u.K',
    SETUP_Z: ind(
      2,
      split
        ? [
            // kb and ke as lets of uniform values (the loop count feeds barriers); kBegin, kEnd for the loads
            'let zb = wg.z / u.splits;',
            'let kb = (wg.z - zb * u.splits) * u.kLen;',
            'let ke = min(u.K, kb + u.kLen);',
            'kBegin = kb;',
            'kEnd = ke;',
            'aBase = u.offA + zb * u.strideA;',
            'bBase = u.offB + zb * u.strideB;',
            'cBase = wg.z * u.M * u.N;',
          ]
        : ['aBase = u.offA + wg.z * u.strideA;', 'bBase = u.offB + wg.z * u.strideB;', 'cBase = u.offC + wg.z * u.strideC;'],
    ),
    A_INDEX: idxA('m', 'k'),
    B_INDEX: idxB('k', 'n'),
    LOAD_A_FULL: ind(4, loadAFull),
    LOAD_A_EDGE: ind(4, loadAEdge),
    LOAD_B_FULL: ind(4, loadBFull),
    LOAD_B_EDGE: ind(4, loadBEdge),
    STORE_TILES: ind(2, storeTiles),
    EPILOGUE: ind(6, epilogue),
    LOAD_COORDS: ind(2, coords),
    ACC_DECL: ind(2, accDecl),
    STEPS: ind(4, steps),
    STORE_C: ind(2, storeC),
    // ':w': warp w covers columns (w % (NTX/8)) * 8 + [0, 8) and rows (w / (NTX/8)) * 4 + [0, 4) of the grid
    THREAD_XY: ind(
      2,
      warp
        ? [`let tx = ((li / 32u) % ${NTX / 8}u) * 8u + li % 8u;`, `let ty = (li / ${4 * NTX}u) * 4u + (li % 32u) / 8u;`]
        : ['let tx = li % NTX;', 'let ty = li / NTX;'],
    ),
  });
}

/**
 * `ldB2(i)`: elements i and i+1 (i even) of a packed 16-bit B from one u32 word, and `getB2(k, n)`: the pair
 * along B's contiguous dim at (k, n), zero outside the matrix (the dim is even, so a pair is all in or all out).
 */
function loadPairFn(dtype: WeightDType, index: string, kEnd: string): string {
  const unpack = dtype === 'bf16' ? 'vec2f(bitcast<f32>(w << 16u), bitcast<f32>(w & 0xffff0000u))' : 'unpack2x16float(w)';
  return [
    `fn ldB2(i: u32) -> vec2f { let w = b[i >> 1u]; return ${unpack}; }`,
    `fn getB2(k: u32, n: u32) -> vec2f { if (k < ${kEnd} && n < u.N) { return ldB2(${index}); } return vec2f(0.0); }`,
  ].join('\n');
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

/** The last compile-time choices of a tiled program: vec4 loads of A, of B, and the ':w' warp layout. */
type Layout = Pick<TiledChoices, 'vecA' | 'vecB' | 'warp'>;

/** Records the dispatch of a validated problem. */
function launch(
  gpu: Gpu,
  out: Tensor,
  a: Tensor,
  b: Tensor,
  bias: Tensor | undefined,
  d: MatmulDims,
  variant?: MatmulVariant | TileConfig,
  pairB = false,
  block?: BlockShape,
): string {
  const v = variant ?? (gpu.cpu ? 'block' : chooseVariant(d, gpu.limits.maxComputeWorkgroupStorageSize));
  if (v === 'block') {
    const shape = block ?? blockShape(d.M);
    return Math.ceil(d.M / shape.tm) > 65535 ? launchDirect(gpu, out, a, b, bias, d) : launchBlock(gpu, out, a, b, bias, d, shape);
  }
  if (v === 'direct') return launchDirect(gpu, out, a, b, bias, d);
  if (v === 'gemv' && d.M <= GEMV.maxM) return launchGemv(gpu, out, a, b, bias, d);
  const { tile, splits, vec4, warp } = v === 'gemv' ? { tile: TILES.rows, splits: 1, vec4: false, warp: false } : tiledVariant(v)!;
  const pair = pairB && canPairB(tile, d, b.dtype);
  // vec4 loads of A and B, and the warp layout, where they apply
  const layout: Layout = { vecA: vec4 && vec4A(d, a), vecB: vec4 && !pair && vec4B(d, b), warp: warp && warpLayout(tile) };
  const split = splitK(gpu, tile, d, splits);
  if (split) return launchSplit(gpu, out, a, b, bias, d, tile, pair, layout, split);
  const program = matmulProgram(gpu, tile, {
    transA: d.transA,
    transB: d.transB,
    bDtype: b.dtype as WeightDType,
    accumulate: d.accumulate,
    bias: Boolean(bias),
    pairB: pair,
    ...layout,
  });
  if (d.M === 0 || d.N === 0 || d.batch === 0) return program.key;
  tiled.run(gpu, {
    program,
    bindings: productBindings(a, b, out, bias),
    uniforms: { ...productUniforms(d), kLen: d.K, splits: 1 },
    workgroups: [Math.ceil(d.N / tile.bn), Math.ceil(d.M / tile.bm), d.batch],
  });
  return program.key;
}

/** A K split as launched: `splits` slices of `kLen` (a multiple of BK; the last slice may be shorter). */
interface Split {
  splits: number;
  kLen: number;
}

/**
 * The split of K into (at most) `want` slices, or null to run unsplit: one slice, an empty product, or a
 * workspace (batch * splits partial (M, N) products) or z grid (batch * splits) beyond the device's limits.
 */
function splitK(gpu: Gpu, t: TileConfig, d: MatmulDims, want: number): Split | null {
  if (want <= 1 || d.M === 0 || d.N === 0 || d.batch === 0) return null;
  const kLen = Math.ceil(Math.ceil(d.K / want) / t.bk) * t.bk;
  const splits = Math.ceil(d.K / kLen);
  if (splits <= 1) return null;
  const words = d.batch * splits * d.M * d.N;
  if (d.batch * splits > 65535 || words * 4 > gpu.limits.maxStorageBufferBindingSize || words > 0xffffffff) return null;
  return { splits, kLen };
}

const workspaces = new WeakMap<Gpu, Tensor>();

/**
 * The split-K workspace of at least `words` f32, grown by doubling; kept per device and never returned to
 * the pool (as reduce's scratch), so a later upload cannot overwrite it before the passes run. Split
 * products recorded one after the other share it: dispatches run in order.
 */
function workspace(gpu: Gpu, words: number): Tensor {
  const t = workspaces.get(gpu);
  if (t && numel(t.shape) >= words) return t;
  const cap = Math.floor(gpu.limits.maxStorageBufferBindingSize / 4);
  const fresh = gpu.tensor([Math.max(words, Math.min(cap, 2 * (t ? numel(t.shape) : 0)))], 'f32', 'matmul.splitk');
  const w = { ...fresh, pooled: false };
  workspaces.set(gpu, w);
  return w;
}

const splitkKey = (accumulate: boolean, bias: boolean): string => `matmul:splitk${accumulate ? ':acc' : ''}${bias ? ':bias' : ''}`;

const splitkProgram = programFactory(splitkKey, (accumulate: boolean, bias: boolean) =>
  splitSum.program(
    splitkKey(accumulate, bias),
    () =>
      fillTemplate(splitkSource, {
        BIAS_DECL: bias ? '@group(0) @binding(3) var<storage, read> bias: array<f32>;' : '',
        EPILOGUE: [...(bias ? ['x += bias[e % u.N];'] : []), ...(accumulate ? ['x += c[ci];'] : [])].map((l) => `  ${l}`).join('\n'),
      }),
    'reduce',
  ),
);

/**
 * Records a split-K product: the partial products of the K slices into the workspace (batch * splits
 * workgroup layers), then their sum in slice order with alpha, bias and accumulate into out. Returns the
 * partial pass's key (it ends in ':k').
 */
function launchSplit(
  gpu: Gpu,
  out: Tensor,
  a: Tensor,
  b: Tensor,
  bias: Tensor | undefined,
  d: MatmulDims,
  tile: TileConfig,
  pairB: boolean,
  layout: Layout,
  sp: Split,
): string {
  const program = matmulProgram(gpu, tile, {
    transA: d.transA,
    transB: d.transB,
    bDtype: b.dtype as WeightDType,
    accumulate: false,
    bias: false,
    pairB,
    split: true,
    ...layout,
  });
  const MN = d.M * d.N;
  const w = workspace(gpu, d.batch * sp.splits * MN);
  tiled.run(gpu, {
    program,
    bindings: { a, b, c: w },
    uniforms: { ...productUniforms(d), strideC: MN, alpha: 1, offC: 0, kLen: sp.kLen, splits: sp.splits },
    workgroups: [Math.ceil(d.N / tile.bn), Math.ceil(d.M / tile.bm), d.batch * sp.splits],
  });
  splitSum.run(gpu, {
    program: splitkProgram(d.accumulate, Boolean(bias)),
    bindings: { w, c: out, bias },
    uniforms: { MN, N: d.N, splits: sp.splits, batch: d.batch, strideC: d.strideC, offC: d.offsetC, alpha: d.alpha },
    workgroups: grid1d(Math.ceil((d.batch * MN) / 256)),
  });
  return program.key;
}

const directKey = (transA: boolean, transB: boolean, bDtype: WeightDType, accumulate: boolean, bias: boolean): string =>
  `matmul:${transA ? 't' : 'n'}${transB ? 't' : 'n'}:${bDtype}:direct${accumulate ? ':acc' : ''}${bias ? ':bias' : ''}`;

const directProgram = programFactory(
  directKey,
  (transA: boolean, transB: boolean, bDtype: WeightDType, accumulate: boolean, bias: boolean) =>
    product.program(
      directKey(transA, transB, bDtype, accumulate, bias),
      () =>
        fillTemplate(directSource, {
          HEADER: headerOf(product, 'f32', bDtype === 'f32' ? 'f32' : 'u32'),
          LOAD_B: loadFn('ldB', 'b', bDtype),
          A_INDEX: transA ? 'aBase + k * u.M + m' : 'aBase + m * u.K + k',
          B_INDEX: transB ? 'bBase + n * u.K + k' : 'bBase + k * u.N + n',
          EPILOGUE: [...(bias ? ['x += bias[col + q];'] : []), ...(accumulate ? ['x += c[i];'] : [])].map((l) => `      ${l}`).join('\n'),
        }),
      'forward',
    ),
);

/** Records a direct dispatch: 8 x 8 threads of 4 x 4 outputs per workgroup. */
function launchDirect(gpu: Gpu, out: Tensor, a: Tensor, b: Tensor, bias: Tensor | undefined, d: MatmulDims): string {
  const program = directProgram(d.transA, d.transB, b.dtype as WeightDType, d.accumulate, Boolean(bias));
  if (d.M === 0 || d.N === 0 || d.batch === 0) return program.key;
  product.run(gpu, {
    program,
    bindings: productBindings(a, b, out, bias),
    uniforms: productUniforms(d),
    workgroups: [Math.ceil(d.N / 32), Math.ceil(d.M / 32), d.batch],
  });
  return program.key;
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
  return launch(gpu, out, a, b, opts.bias, d, opts.variant, opts.pairB, opts.block);
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
    launch(gpu, out, x, y, undefined, d, variant, pairB);
    return;
  }
  // sum_z op(X_z) . op(Y_z): the inner dim K runs over the batch when X is (K, M)-stored (transA) and Y is
  // (K, N)-stored (not transB), with batches laid end to end (stride = K*M, K*N).
  if (d.transA && !d.transB && d.strideA === d.K * d.M && d.strideB === d.K * d.N) {
    launch(gpu, out, x, y, undefined, { ...d, K: d.K * d.batch, batch: 1, strideA: 0, strideB: 0 }, variant, pairB);
    return;
  }
  for (let z = 0; z < d.batch; z++) {
    launch(
      gpu,
      out,
      x,
      y,
      undefined,
      {
        ...d,
        batch: 1,
        offsetA: d.offsetA + z * d.strideA,
        offsetB: d.offsetB + z * d.strideB,
        strideA: 0,
        strideB: 0,
        accumulate: d.accumulate || z > 0,
      },
      variant,
      pairB,
    );
  }
}
