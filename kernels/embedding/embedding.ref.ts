// Float64 CPU reference for the embedding gather and its backward.

export function embeddingForwardRef(ids: ArrayLike<number>, weight: ArrayLike<number>, V: number, C: number): Float64Array {
  const out = new Float64Array(ids.length * C);
  for (let n = 0; n < ids.length; n++) {
    const v = ids[n];
    if (v < 0 || v >= V) continue;
    for (let c = 0; c < C; c++) out[n * C + c] = weight[v * C + c];
  }
  return out;
}

export function embeddingBackwardRef(ids: ArrayLike<number>, dout: ArrayLike<number>, V: number, C: number): Float64Array {
  const dw = new Float64Array(V * C);
  for (let n = 0; n < ids.length; n++) {
    const v = ids[n];
    if (v < 0 || v >= V) continue;
    for (let c = 0; c < C; c++) dw[v * C + c] += dout[n * C + c];
  }
  return dw;
}
