// Float64 CPU references for the reductions.

import type { ReduceOp } from './reduce.ts';

export function reduceRef(x: ArrayLike<number>, op: ReduceOp): number {
  let acc = op === 'max' ? -Infinity : 0;
  for (let i = 0; i < x.length; i++) {
    const v = x[i];
    if (op === 'max') acc = Math.max(acc, v);
    else if (op === 'sumsq') acc += v * v;
    else acc += v;
  }
  return op === 'mean' ? acc / x.length : acc;
}

export function reduceRowsRef(x: ArrayLike<number>, N: number, C: number, op: ReduceOp): Float64Array {
  const out = new Float64Array(N);
  for (let n = 0; n < N; n++) out[n] = reduceRef(Array.prototype.slice.call(x, n * C, (n + 1) * C) as number[], op);
  return out;
}

export function maskedMeanRef(values: ArrayLike<number>, mask: ArrayLike<number>): number {
  let s = 0;
  let w = 0;
  for (let i = 0; i < values.length; i++) {
    s += values[i] * mask[i];
    w += mask[i];
  }
  return w === 0 ? 0 : s / w;
}

export function maskedMeanRowsRef(values: ArrayLike<number>, mask: ArrayLike<number>, N: number, C: number): Float64Array {
  const out = new Float64Array(N);
  const sl = (a: ArrayLike<number>, n: number) => Array.prototype.slice.call(a, n * C, (n + 1) * C) as number[];
  for (let n = 0; n < N; n++) out[n] = maskedMeanRef(sl(values, n), sl(mask, n));
  return out;
}

/** Per slot s: op over slot s of every tensor in xs, each (S, ...) with its slots contiguous. */
export function reduceSlotsRef(xs: ReadonlyArray<ArrayLike<number>>, S: number, op: ReduceOp): Float64Array {
  const out = new Float64Array(S);
  for (let s = 0; s < S; s++) {
    const parts = xs.map((x) => {
      const n = x.length / S;
      return Array.prototype.slice.call(x, s * n, (s + 1) * n) as number[];
    });
    out[s] = reduceRef(parts.flat(), op);
  }
  return out;
}
