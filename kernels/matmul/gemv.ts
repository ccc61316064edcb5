// The 'gemv' matmul variant (gemv.wgsl) for skinny products (decode, M <= GEMV.maxM): threads along K,
// coalesced rows; the launcher in matmul.ts picks it.

import type { Gpu } from '../../src/gpu/gpu.ts';
import { grid1d, programFactory } from '../../src/gpu/program.ts';
import { fillTemplate, loadFn } from '../common.ts';
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
import gemvSource from './gemv.wgsl';

/** The gemv variant's shape: KT threads along K per workgroup, NC output columns per workgroup; M <= 16. */
export const GEMV = { kt: 64, nc: 4, maxM: 16 } as const;

/** Rows held per gemv thread: the next power of two >= M (one pipeline per bucket, few wasted FMAs). */
export const gemvRows = (M: number): number => (M <= 1 ? 1 : M <= 2 ? 2 : M <= 4 ? 4 : M <= 8 ? 8 : 16);

/** Whether the gemv kernel may read A and B as vec4 along K: rows of both contiguous in K and 4-aligned. */
function gemvVec4(d: MatmulDims): boolean {
  return !d.transA && d.transB && d.K % 4 === 0 && [d.offsetA, d.offsetB, d.strideA, d.strideB].every((x) => x % 4 === 0);
}

const gemvKey = (c: ProductChoices, mr: number, vec4: boolean): string =>
  productKey(c, `gemv${GEMV.kt}x${GEMV.nc}_m${mr}${vec4 ? ':v4' : ''}`);

const gemvProgram = programFactory(gemvKey, (...choices: Parameters<typeof gemvKey>) =>
  product.program(gemvKey(...choices), () => gemvSourceOf(...choices), 'forward'),
);

/** Generates the WGSL of one gemv variant: MR x NC unrolled partial sums around gemv.wgsl's skeleton. */
export function gemvSourceOf(c: ProductChoices, mr: number, vec4: boolean): string {
  const { transA, transB, bDtype, accumulate, bias } = c;
  const NC = GEMV.nc;
  const range = (n: number) => Array.from({ length: n }, (_, i) => i);
  const ind = (n: number, lines: string[]) => lines.map((l) => ' '.repeat(n) + l).join('\n');
  let loads: string[];
  if (vec4) {
    // k counts vec4s; element index of (row, 4k) is base + row * K + 4k, a multiple of 4.
    const unpack =
      bDtype === 'f32'
        ? 'b[i]'
        : bDtype === 'bf16'
          ? 'vec4f(bitcast<f32>(w.x << 16u), bitcast<f32>(w.x & 0xffff0000u), bitcast<f32>(w.y << 16u), bitcast<f32>(w.y & 0xffff0000u))'
          : 'vec4f(unpack2x16float(w.x), unpack2x16float(w.y))';
    loads = [
      'fn ldA(m: u32, k: u32) -> vec4f { return a[(aBase + m * u.K) / 4u + k]; }',
      `fn ldB(n: u32, k: u32) -> vec4f { let i = (bBase + n * u.K) / 4u + k;${bDtype === 'f32' ? '' : ' let w = b[i];'} return ${unpack}; }`,
    ];
  } else {
    loads = [
      `fn ldA(m: u32, k: u32) -> f32 { return a[${transA ? 'aBase + k * u.M + m' : 'aBase + m * u.K + k'}]; }`,
      loadFn('ldBe', 'b', bDtype),
      `fn ldB(n: u32, k: u32) -> f32 { return ldBe(${transB ? 'bBase + n * u.K + k' : 'bBase + k * u.N + n'}); }`,
    ];
  }
  const mul = vec4
    ? (x: string, y: string, acc: string) => `${acc} += dot(${x}, ${y});`
    : (x: string, y: string, acc: string) => `${acc} = fma(${x}, ${y}, ${acc});`;
  const body = [
    ...range(NC).map((j) => `let b${j} = ldB(col${j}, k);`),
    ...range(mr).flatMap((m) => [`let a${m} = ldA(row${m}, k);`, ...range(NC).map((j) => mul(`a${m}`, `b${j}`, `acc${m}_${j}`))]),
  ];
  return fillTemplate(gemvSource, {
    HEADER: headerOf(product, vec4 ? 'vec4f' : 'f32', vec4 ? (bDtype === 'f32' ? 'vec4f' : 'vec2u') : bDtype === 'f32' ? 'f32' : 'u32'),
    KT: String(GEMV.kt),
    NC: String(NC),
    MR: String(mr),
    LOADS: loads.join('\n'),
    ROWS: ind(2, [
      `let KV = ${vec4 ? 'u.K / 4u' : 'u.K'};`,
      ...range(mr).map((m) => `let row${m} = min(${m}u, u.M - 1u);`),
      ...range(NC).map((j) => `let col${j} = min(n0 + ${j}u, u.N - 1u);`),
    ]),
    ACC_DECL: ind(
      2,
      range(mr).flatMap((m) => range(NC).map((j) => `var acc${m}_${j} = 0.0;`)),
    ),
    BODY: ind(4, body),
    STORE_RED: ind(
      4,
      range(mr).flatMap((m) => range(NC).map((j) => `red[${m * NC + j}u * RS + h] = acc${m}_${j};`)),
    ),
    ADD_RED: ind(
      4,
      range(mr).flatMap((m) => range(NC).map((j) => `red[${m * NC + j}u * RS + h] += acc${m}_${j};`)),
    ),
    EPILOGUE: ind(6, [...(bias ? ['x += bias[n];'] : []), ...(accumulate ? ['x += c[i];'] : [])]),
  });
}

/** Records a gemv dispatch (M <= 16). */
export function launchGemv(gpu: Gpu, c: MatmulCall): string {
  const program = gemvProgram(productChoices(c), gemvRows(c.d.M), gemvVec4(c.d));
  const [x, y] = grid1d(Math.ceil(c.d.N / GEMV.nc));
  return runProduct(gpu, program, c, [x, y, c.d.batch]);
}
