// Float64 CPU reference for the SwiGLU activation and its backward.

const sigmoid = (g: number) => 1 / (1 + Math.exp(-g));

export function swigluForwardRef(gate: ArrayLike<number>, up: ArrayLike<number>): Float64Array {
  return Float64Array.from({ length: gate.length }, (_, i) => gate[i] * sigmoid(gate[i]) * up[i]);
}

export function swigluBackwardRef(
  dout: ArrayLike<number>,
  gate: ArrayLike<number>,
  up: ArrayLike<number>,
): { dgate: Float64Array; dup: Float64Array } {
  const n = gate.length;
  const dgate = new Float64Array(n);
  const dup = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const g = gate[i];
    const s = sigmoid(g);
    dgate[i] = dout[i] * up[i] * s * (1 + g * (1 - s));
    dup[i] = dout[i] * g * s;
  }
  return { dgate, dup };
}
