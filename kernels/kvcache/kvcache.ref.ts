// Float64 CPU reference for the KV-cache append.

export function kvAppendRef(
  cache: ArrayLike<number>,
  src: ArrayLike<number>,
  B: number,
  Tq: number,
  Tcap: number,
  W: number,
  t0: number,
): Float64Array {
  const out = Float64Array.from(cache);
  for (let b = 0; b < B; b++)
    for (let i = 0; i < Tq; i++)
      for (let w = 0; w < W; w++) {
        out[(b * Tcap + t0 + i) * W + w] = src[(b * Tq + i) * W + w];
      }
  return out;
}
