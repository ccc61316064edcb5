// Float64 CPU references for the elementwise ops.

export const addRef = (y: ArrayLike<number>, x: ArrayLike<number>, alpha: number): Float64Array =>
  Float64Array.from(y, (v, i) => v + alpha * x[i]);
export const reluRef = (x: ArrayLike<number>): Float64Array => Float64Array.from(x, (v) => Math.max(v, 0));
export const reluBackwardRef = (dy: ArrayLike<number>, x: ArrayLike<number>): Float64Array =>
  Float64Array.from(dy, (g, i) => (x[i] > 0 ? g : 0));
export const addBiasRef = (y: ArrayLike<number>, bias: ArrayLike<number>): Float64Array =>
  Float64Array.from(y, (v, i) => v + bias[i % bias.length]);
