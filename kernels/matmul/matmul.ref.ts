// Float64 CPU reference for the batched matmul and its backward, with the same strides and offsets as the kernel.

export interface MatmulRefDims {
  M: number;
  N: number;
  K: number;
  batch?: number;
  transA?: boolean;
  transB?: boolean;
  alpha?: number;
  strideA?: number;
  strideB?: number;
  strideC?: number;
  offsetA?: number;
  offsetB?: number;
  offsetC?: number;
}

const full = (d: MatmulRefDims) => ({
  batch: 1,
  transA: false,
  transB: false,
  alpha: 1,
  strideA: 0,
  strideB: 0,
  strideC: 0,
  offsetA: 0,
  offsetB: 0,
  offsetC: 0,
  ...d,
});

/** Index of element (m, k) of op(A) and (k, n) of op(B) for batch z. */
const ia = (d: ReturnType<typeof full>, z: number, m: number, k: number) =>
  d.offsetA + z * d.strideA + (d.transA ? k * d.M + m : m * d.K + k);
const ib = (d: ReturnType<typeof full>, z: number, k: number, n: number) =>
  d.offsetB + z * d.strideB + (d.transB ? n * d.K + k : k * d.N + n);
const ic = (d: ReturnType<typeof full>, z: number, m: number, n: number) => d.offsetC + z * d.strideC + m * d.N + n;

/**
 * c = alpha * op(a) . op(b) [+ bias] [+ c0]: returns a copy of c0 (or zeros of cSize) with the batches written.
 */
export function matmulRef(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  dims: MatmulRefDims,
  extra: { bias?: ArrayLike<number>; c0?: ArrayLike<number>; accumulate?: boolean; cSize?: number } = {},
): Float64Array {
  const d = full(dims);
  const size = extra.cSize ?? extra.c0?.length ?? d.offsetC + (d.batch - 1) * d.strideC + d.M * d.N;
  const c = extra.c0 ? Float64Array.from(extra.c0) : new Float64Array(size);
  for (let z = 0; z < d.batch; z++) {
    for (let m = 0; m < d.M; m++) {
      for (let n = 0; n < d.N; n++) {
        let s = 0;
        for (let k = 0; k < d.K; k++) s += a[ia(d, z, m, k)] * b[ib(d, z, k, n)];
        let v = d.alpha * s + (extra.bias ? extra.bias[n] : 0);
        if (extra.accumulate) v += c[ic(d, z, m, n)];
        c[ic(d, z, m, n)] = v;
      }
    }
  }
  return c;
}

/**
 * Gradients of c = alpha * op(a) . op(b) given dc: da (a.length) and db (b.length), summed over batches
 * where an operand is shared (stride 0) or its batches overlap.
 */
export function matmulBackwardRef(
  dc: ArrayLike<number>,
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  dims: MatmulRefDims,
): { da: Float64Array; db: Float64Array } {
  const d = full(dims);
  const da = new Float64Array(a.length);
  const db = new Float64Array(b.length);
  for (let z = 0; z < d.batch; z++) {
    for (let m = 0; m < d.M; m++) {
      for (let n = 0; n < d.N; n++) {
        const g = d.alpha * dc[ic(d, z, m, n)];
        for (let k = 0; k < d.K; k++) {
          da[ia(d, z, m, k)] += g * b[ib(d, z, k, n)];
          db[ib(d, z, k, n)] += g * a[ia(d, z, m, k)];
        }
      }
    }
  }
  return { da, db };
}
