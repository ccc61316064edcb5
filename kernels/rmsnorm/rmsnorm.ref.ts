// Float64 CPU reference for RMSNorm and its backward.

export function rmsnormForwardRef(
  x: ArrayLike<number>,
  w: ArrayLike<number>,
  N: number,
  C: number,
  eps: number,
): { out: Float64Array; rstd: Float64Array } {
  const out = new Float64Array(N * C);
  const rstd = new Float64Array(N);
  for (let n = 0; n < N; n++) {
    let ss = 0;
    for (let c = 0; c < C; c++) ss += x[n * C + c] ** 2;
    const r = 1 / Math.sqrt(ss / C + eps);
    rstd[n] = r;
    for (let c = 0; c < C; c++) out[n * C + c] = x[n * C + c] * r * w[c];
  }
  return { out, rstd };
}

/** dx (assigned) and dw (this call's contribution) from dy, recomputing rstd from x. */
export function rmsnormBackwardRef(
  dy: ArrayLike<number>,
  x: ArrayLike<number>,
  w: ArrayLike<number>,
  N: number,
  C: number,
  eps: number,
): { dx: Float64Array; dw: Float64Array } {
  const { rstd } = rmsnormForwardRef(x, w, N, C, eps);
  const dx = new Float64Array(N * C);
  const dw = new Float64Array(C);
  for (let n = 0; n < N; n++) {
    const r = rstd[n];
    let s = 0;
    for (let c = 0; c < C; c++) s += dy[n * C + c] * w[c] * x[n * C + c];
    const k = (s * r * r) / C;
    for (let c = 0; c < C; c++) {
      dx[n * C + c] = r * (w[c] * dy[n * C + c] - x[n * C + c] * k);
      dw[c] += dy[n * C + c] * x[n * C + c] * r;
    }
  }
  return { dx, dw };
}
