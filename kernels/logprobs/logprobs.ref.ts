// Float64 CPU reference for the fused log-softmax / target log-prob / entropy and its backward.

export interface LogprobsRef {
  logp: Float64Array;
  entropy: Float64Array;
  lse: Float64Array;
}

export function logprobsForwardRef(logits: ArrayLike<number>, targets: ArrayLike<number>, N: number, V: number, T = 1): LogprobsRef {
  const logp = new Float64Array(N);
  const entropy = new Float64Array(N);
  const lse = new Float64Array(N);
  for (let n = 0; n < N; n++) {
    let m = -Infinity;
    for (let j = 0; j < V; j++) m = Math.max(m, logits[n * V + j] / T);
    let s = 0;
    for (let j = 0; j < V; j++) s += Math.exp(logits[n * V + j] / T - m);
    const l = m + Math.log(s);
    lse[n] = l;
    const t = targets[n];
    if (t < 0) continue;
    if (t >= V) {
      logp[n] = NaN;
      continue;
    }
    let h = 0;
    for (let j = 0; j < V; j++) {
      const lp = logits[n * V + j] / T - l;
      const p = Math.exp(lp);
      if (p > 0) h -= p * lp; // a -inf logit (masked token) contributes 0
    }
    entropy[n] = h;
    logp[n] = logits[n * V + t] / T - l;
  }
  return { logp, entropy, lse };
}

/** dlogits (N, V) for dlogp (N) and dentropy (N) (null = zero). */
export function logprobsBackwardRef(
  logits: ArrayLike<number>,
  targets: ArrayLike<number>,
  dlogp: ArrayLike<number> | null,
  dentropy: ArrayLike<number> | null,
  N: number,
  V: number,
  T = 1,
): Float64Array {
  const { entropy, lse } = logprobsForwardRef(logits, targets, N, V, T);
  const d = new Float64Array(N * V);
  for (let n = 0; n < N; n++) {
    const t = targets[n];
    if (t < 0 || t >= V) continue;
    const gl = dlogp ? dlogp[n] : 0;
    const gh = dentropy ? dentropy[n] : 0;
    for (let j = 0; j < V; j++) {
      const lp = logits[n * V + j] / T - lse[n];
      const p = Math.exp(lp);
      d[n * V + j] = (gl * ((j === t ? 1 : 0) - p) - gh * (p > 0 ? p * (lp + entropy[n]) : 0)) / T;
    }
  }
  return d;
}
