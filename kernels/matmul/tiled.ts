// The tiled kernel (matmul.wgsl): its compile-time choices besides the tile, the WGSL generated for a
// variant, where vec4 and paired loads apply, and the unsplit dispatch (splitk.ts launches the split one).

import type { Gpu } from '../../src/gpu/gpu.ts';
import { shapeError } from '../../src/gpu/errors.ts';
import { programFactory } from '../../src/gpu/program.ts';
import type { Tensor } from '../../src/gpu/tensor.ts';
import { type WeightDType, fillTemplate, loadFn } from '../common.ts';
import {
  type MatmulCall,
  type MatmulDims,
  type ProductChoices,
  headerOf,
  productBindings,
  productChoices,
  productUniforms,
  tiled,
} from './kernel.ts';
import source from './matmul.wgsl';
import { type TileConfig, tileName, tileSharedBytes, warpLayout } from './tile.ts';

function checkTile(t: TileConfig, sharedBytes: number): void {
  const bad = (why: string) => shapeError('matmul', `tile ${tileName(t)}: ${why}`);
  if (t.tm % 4 || t.tn % 4 || t.bm % t.tm || t.bn % t.tn) bad('TM, TN must be multiples of 4 dividing BM, BN');
  const wg = (t.bm / t.tm) * (t.bn / t.tn);
  if (wg > 256) bad(`${wg} threads per workgroup (at most 256)`);
  if (((t.bm / 4) * t.bk) % wg || ((t.bn / 4) * t.bk) % wg) bad('the shared tiles must split evenly into vec4 loads per thread');
  if (tileSharedBytes(t) > sharedBytes) bad(`needs ${tileSharedBytes(t)} bytes of workgroup memory, the device has ${sharedBytes}`);
}

/** The compile-time choices of a tiled matmul module besides its tile. */
export interface TiledChoices extends ProductChoices {
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
export const vec4A = (d: MatmulDims, a: Tensor): boolean =>
  d.transA && d.M % 4 === 0 && d.offsetA % 4 === 0 && d.strideA % 4 === 0 && a.buffer.size % 16 === 0;
/** Whether B can be read a vec4 at a time: f32, its loads run along N (not transB), 4-aligned. */
export const vec4B = (d: MatmulDims, b: Tensor): boolean =>
  b.dtype === 'f32' && !d.transB && d.N % 4 === 0 && d.offsetB % 4 === 0 && d.strideB % 4 === 0 && b.buffer.size % 16 === 0;

export const matmulProgram = programFactory(
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
export function canPairB(t: TileConfig, d: MatmulDims, bDtype: string): boolean {
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

/** The last compile-time choices of a tiled program: vec4 loads of A, of B, and the ':w' warp layout. */
export type Layout = Pick<TiledChoices, 'vecA' | 'vecB' | 'warp'>;

/** Records an unsplit tiled dispatch: BM x BN outputs per workgroup. Returns the program key. */
export function launchTiled(gpu: Gpu, c: MatmulCall, tile: TileConfig, pairB: boolean, layout: Layout): string {
  const { d } = c;
  const program = matmulProgram(gpu, tile, { ...productChoices(c), pairB, ...layout });
  if (d.M === 0 || d.N === 0 || d.batch === 0) return program.key;
  tiled.run(gpu, {
    program,
    bindings: productBindings(c),
    uniforms: { ...productUniforms(d), kLen: d.K, splits: 1 },
    workgroups: [Math.ceil(d.N / tile.bn), Math.ceil(d.M / tile.bm), d.batch],
  });
  return program.key;
}
