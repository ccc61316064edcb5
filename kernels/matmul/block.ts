// The 'block' matmul variant (block.wgsl), the default on CPU adapters: a TM x TN block of outputs per thread
// from global memory, no workgroup memory and no barriers; the launcher in matmul.ts picks it.

import type { Gpu } from '../../src/gpu/gpu.ts';
import { programFactory } from '../../src/gpu/program.ts';
import { type WeightDType, fillTemplate, loadFn } from '../common.ts';
import {
  type MatmulCall,
  type MatmulDims,
  type ProductChoices,
  headerOf,
  product,
  productChoices,
  productKey,
  runProduct,
} from './kernel.ts';
import blockSource from './block.wgsl';

/** The 'block' variant's outputs per thread: TM rows x TN columns (TN a multiple of 4). */
export interface BlockShape {
  tm: number;
  tn: number;
}
/** Threads per workgroup of the 'block' variant (1-D, along the column blocks). */
export const BLOCK_WG = 16;
/**
 * The 'block' shape for M rows: one row per thread for decode (M = 1 or 2 wastes no rows), 4 x 8 for a few
 * rows, 8 x 8 for longer products (fewer loads per multiply-add; on SwiftShader, at M = 160 and the built-in
 * model's projections, 1.2-1.5x faster than 4 x 8 and 2-2.5x faster than 'direct').
 */
export const blockShape = (M: number): BlockShape => (M <= 2 ? { tm: 1, tn: 8 } : M < 32 ? { tm: 4, tn: 8 } : { tm: 8, tn: 8 });

/**
 * How the 'block' variant reads B: 'kpair' a 16-bit transB weight a word (elements k, k+1 of a row) at a
 * time, 'npair' a 16-bit (K, N) B a word (columns n, n+1) at a time, 'plain' element by element (f32, or a
 * layout where a word would straddle two rows: odd K or N, odd offset or stride).
 */
export type BlockMode = 'plain' | 'kpair' | 'npair';

export function blockMode(d: MatmulDims, bDtype: WeightDType): BlockMode {
  if (bDtype === 'f32' || d.offsetB % 2 || d.strideB % 2) return 'plain';
  if (d.transB) return d.K % 2 === 0 ? 'kpair' : 'plain';
  return d.N % 2 === 0 ? 'npair' : 'plain';
}

const blockKey = (c: ProductChoices, tm: number, tn: number, mode: BlockMode): string =>
  productKey(c, `block${tm}x${tn}${mode === 'plain' ? '' : `:${mode}`}`);

const blockProgram = programFactory(blockKey, (...choices: Parameters<typeof blockKey>) =>
  product.program(blockKey(...choices), () => blockSourceOf(...choices), 'forward'),
);

/** Generates the WGSL of one 'block' variant: TM x TN unrolled accumulators around block.wgsl's skeleton. */
export function blockSourceOf(c: ProductChoices, tm: number, tn: number, mode: BlockMode): string {
  const { transA, transB, bDtype, accumulate, bias } = c;
  if (tn % 4 || tn < 4 || tm < 1 || (mode !== 'plain' && bDtype === 'f32'))
    throw new Error(`matmul block: bad choice tm ${tm}, tn ${tn}, ${mode} ${bDtype}`);
  const range = (n: number) => Array.from({ length: n }, (_, i) => i);
  const ind = (n: number, lines: string[]) => lines.map((l) => ' '.repeat(n) + l).join('\n');
  const TJ = tn / 4;
  const unpack = bDtype === 'bf16' ? 'vec2f(bitcast<f32>(w << 16u), bitcast<f32>(w & 0xffff0000u))' : 'unpack2x16float(w)';
  const loads = [
    'fn ldA(i: u32) -> f32 { return a[i]; }',
    mode === 'plain' ? loadFn('ldB', 'b', bDtype) : `fn ldW(i: u32) -> vec2f { let w = b[i]; return ${unpack}; }`,
  ];
  // Rows: r_i (clamped), and for !transA the start of its row of A.
  const setup = range(tm).flatMap((i) => [
    `let r${i} = min(m0 + ${i}u, u.M - 1u);`,
    ...(transA ? [] : [`let ra${i} = aBase + r${i} * u.K;`]),
  ]);
  const A = (i: number, k: string) => (transA ? `ldA(ak${k === 'k' ? '' : '1'} + r${i})` : `ldA(ra${i} + ${k})`);
  // Columns: c_j (clamped) and, when B's rows run along K, the start of column j's row of B (in words for kpair).
  if (mode === 'npair') {
    setup.push(...range(tn / 2).map((p) => `let q${p} = min(n0 + ${2 * p}u, u.N - 2u) >> 1u;`));
  } else {
    setup.push(...range(tn).map((j) => `let c${j} = min(n0 + ${j}u, u.N - 1u);`));
    if (transB)
      setup.push(
        ...range(tn).map((j) => (mode === 'kpair' ? `let rb${j} = (bBase + c${j} * u.K) >> 1u;` : `let rb${j} = bBase + c${j} * u.K;`)),
      );
  }
  const accDecl = range(tm).flatMap((i) => range(TJ).map((j) => `var acc${i}_${j} = vec4f(0.0);`));
  const vec4 = (f: (q: number) => string) => `vec4f(${range(4).map(f).join(', ')})`;
  const body: string[] = [];
  let head: string;
  if (mode === 'kpair') {
    head = 'for (var kw = 0u; kw < u.K / 2u; kw++) {';
    body.push('let k = 2u * kw;');
    if (transA) body.push('let ak = aBase + k * u.M;', 'let ak1 = ak + u.M;');
    body.push(...range(tm).map((i) => `let a${i} = vec2f(${A(i, 'k')}, ${A(i, 'k + 1u')});`));
    body.push(...range(tn).map((j) => `let w${j} = ldW(rb${j} + kw);`));
    body.push(
      ...range(TJ).flatMap((j) => [`let bx${j} = ${vec4((q) => `w${4 * j + q}.x`)};`, `let by${j} = ${vec4((q) => `w${4 * j + q}.y`)};`]),
    );
    body.push(
      ...range(tm).flatMap((i) =>
        range(TJ).map((j) => `acc${i}_${j} = fma(vec4f(a${i}.y), by${j}, fma(vec4f(a${i}.x), bx${j}, acc${i}_${j}));`),
      ),
    );
  } else {
    head = 'for (var k = 0u; k < u.K; k++) {';
    if (transA) body.push('let ak = aBase + k * u.M;');
    body.push(...range(tm).map((i) => `let a${i} = ${A(i, 'k')};`));
    if (mode === 'npair') {
      body.push('let bk = (bBase + k * u.N) >> 1u;');
      body.push(...range(tn / 2).map((p) => `let w${p} = ldW(bk + q${p});`));
      body.push(...range(TJ).map((j) => `let b${j} = vec4f(w${2 * j}, w${2 * j + 1});`));
    } else if (transB) {
      body.push(...range(TJ).map((j) => `let b${j} = ${vec4((q) => `ldB(rb${4 * j + q} + k)`)};`));
    } else {
      body.push('let bk = bBase + k * u.N;');
      body.push(...range(TJ).map((j) => `let b${j} = ${vec4((q) => `ldB(bk + c${4 * j + q})`)};`));
    }
    body.push(...range(tm).flatMap((i) => range(TJ).map((j) => `acc${i}_${j} = fma(vec4f(a${i}), b${j}, acc${i}_${j});`)));
  }
  const store = range(tm).flatMap((i) => [
    `if (m0 + ${i}u < u.M) {`,
    `  let ci${i} = cBase + (m0 + ${i}u) * u.N + n0;`,
    ...range(tn).map((j) => `  if (n0 + ${j}u < u.N) { storeC(ci${i} + ${j}u, n0 + ${j}u, acc${i}_${j >> 2}.${'xyzw'[j & 3]}); }`),
    '}',
  ]);
  return fillTemplate(blockSource, {
    HEADER: headerOf(product, 'f32', bDtype === 'f32' ? 'f32' : 'u32'),
    LOADS: loads.join('\n'),
    EPILOGUE: ind(2, [...(bias ? ['x += bias[col];'] : []), ...(accumulate ? ['x += c[i];'] : [])]),
    WG: String(BLOCK_WG),
    TM: String(tm),
    TN: String(tn),
    SETUP: ind(2, setup),
    ACC_DECL: ind(2, accDecl),
    LOOP: ind(2, [head, ...body.map((l) => `  ${l}`), '}']),
    STORE: ind(2, store),
  });
}

/** Records a 'block' dispatch: TM x TN outputs per thread, BLOCK_WG threads per workgroup along N. */
export function launchBlock(gpu: Gpu, c: MatmulCall, shape: BlockShape): string {
  const { d } = c;
  const program = blockProgram(productChoices(c), shape.tm, shape.tn, blockMode(d, c.b.dtype as WeightDType));
  const rows = Math.ceil(d.M / shape.tm); // <= 65535 (launch() takes 'direct' past that)
  return runProduct(gpu, program, c, [Math.ceil(Math.ceil(d.N / shape.tn) / BLOCK_WG), rows, d.batch]);
}
