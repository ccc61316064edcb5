// What every matmul kernel shares: the resolved problem (MatmulDims) and the names of its bindings and
// uniforms. matmul.wgsl (tiled), direct.wgsl, block.wgsl and gemv.wgsl read A, B and write C (plus an
// optional bias) under one Params layout, the tiled kernel's with its K split added; splitk.wgsl sums the
// split's partial products. Each module's compile-time choices start with the same five (ProductChoices).

import type { Gpu } from '../../src/gpu/gpu.ts';
import type { Tensor } from '../../src/gpu/tensor.ts';
import type { WeightDType } from '../common.ts';
import { type KernelProgram, defineKernel } from '../program.ts';

/** Everything the kernel needs besides the buffers: the resolved problem. */
export interface MatmulDims {
  M: number;
  N: number;
  K: number;
  batch: number;
  strideA: number;
  strideB: number;
  strideC: number;
  offsetA: number;
  offsetB: number;
  offsetC: number;
  transA: boolean;
  transB: boolean;
  alpha: number;
  accumulate: boolean;
}

const PRODUCT = {
  M: 'u32',
  N: 'u32',
  K: 'u32',
  batch: 'u32',
  strideA: 'u32',
  strideB: 'u32',
  strideC: 'u32',
  alpha: 'f32',
  offA: 'u32',
  offB: 'u32',
  offC: 'u32',
} as const;

const BINDINGS = ['a', 'b', 'c', 'bias'] as const;

const TYPES = { a: 'read array<f32>', b: 'read array<f32>', c: 'read_write array<f32>', bias: 'read array<f32>' } as const;

/** direct.wgsl, block.wgsl, gemv.wgsl: C (+)= alpha A B (+ bias). */
export const product = defineKernel({
  name: 'matmul',
  bindings: BINDINGS,
  uniforms: PRODUCT,
  types: TYPES,
  entries: { forward: ['a', 'b', 'c', 'bias?'] },
});

/** matmul.wgsl: the same, over K slices [kLen * s, kLen * (s + 1)) of `splits` when split. */
export const tiled = defineKernel({
  name: 'matmul.tiled',
  bindings: BINDINGS,
  uniforms: { ...PRODUCT, kLen: 'u32', splits: 'u32' },
  types: TYPES,
  entries: { forward: ['a', 'b', 'c', 'bias?'] },
});

/** splitk.wgsl: out (+)= alpha * the sum of the splits' partial products w (+ bias), in split order. */
export const splitSum = defineKernel({
  name: 'matmul.splitk',
  bindings: ['w', 'c', 'bias'],
  uniforms: { MN: 'u32', N: 'u32', splits: 'u32', batch: 'u32', strideC: 'u32', offC: 'u32', alpha: 'f32' },
  entries: { reduce: ['w', 'c', 'bias?'] },
});

/** A module's header: A's and B's elements as it reads them (f32, vec4f, or u32 words of a 16-bit B). */
export const headerOf = (kernel: typeof product | typeof tiled, aElem: string, bElem: string): string =>
  kernel.header({ a: `read array<${aElem}>`, b: `read array<${bElem}>` });

/** The uniforms of a product's dispatch. */
export const productUniforms = (d: MatmulDims) => ({
  M: d.M,
  N: d.N,
  K: d.K,
  batch: d.batch,
  strideA: d.strideA,
  strideB: d.strideB,
  strideC: d.strideC,
  alpha: d.alpha,
  offA: d.offsetA,
  offB: d.offsetB,
  offC: d.offsetC,
});

/** One product to record: out = alpha * op(a) . op(b) [+ bias] [+ out], its dims resolved and checked. */
export interface MatmulCall {
  out: Tensor;
  a: Tensor;
  b: Tensor;
  bias?: Tensor;
  d: MatmulDims;
}

/** The bindings of a product: A, B, out as C, and the bias when there is one. */
export const productBindings = (c: MatmulCall) => ({ a: c.a, b: c.b, c: c.out, bias: c.bias });

/** The compile-time choices every matmul module makes: the operands' layouts, B's dtype, the epilogue. */
export interface ProductChoices {
  /** A is stored (K, M), B (N, K). */
  transA: boolean;
  transB: boolean;
  bDtype: WeightDType;
  /** out += the product (else =). */
  accumulate: boolean;
  /** A bias (N) is added. */
  bias: boolean;
}

/** The choices of a call: its transposes and accumulate, B's dtype, whether it adds a bias. */
export const productChoices = ({ d, b, bias }: MatmulCall): ProductChoices => ({
  transA: d.transA,
  transB: d.transB,
  bDtype: b.dtype as WeightDType,
  accumulate: d.accumulate,
  bias: Boolean(bias),
});

/** The program key of a direct.wgsl, block.wgsl or gemv.wgsl module: 'matmul:<nn|nt|tn|tt>:<B dtype>:<variant>[:acc][:bias]'. */
export const productKey = (c: ProductChoices, variant: string): string =>
  `matmul:${c.transA ? 't' : 'n'}${c.transB ? 't' : 'n'}:${c.bDtype}:${variant}${c.accumulate ? ':acc' : ''}${c.bias ? ':bias' : ''}`;

/** Records the dispatch of a product program (none for an empty product); returns the program key. */
export function runProduct(gpu: Gpu, program: KernelProgram<'forward'>, c: MatmulCall, workgroups: [number, number, number]): string {
  const { d } = c;
  if (d.M === 0 || d.N === 0 || d.batch === 0) return program.key;
  product.run(gpu, { program, bindings: productBindings(c), uniforms: productUniforms(d), workgroups });
  return program.key;
}
