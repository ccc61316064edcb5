// Float64 CPU reference for causal attention with GQA, a key padding mask and a KV cache capacity:
// the plain softmax(Q K^T * scale + causal/padding mask) V, materialising every score row.
// Layouts as in attention.wgsl: q, out (B, Tq, NH, HS); k, v (B, Tcap, NKV, HS); mask (B, Tm) with Tm >= Tk;
// lse (B, NH, Tq). Query i sits at position Tk - Tq + i and sees key j iff j <= Tk - Tq + i, j < Tk and
// mask[b, j] != 0. A row that sees no key gets out = 0, lse = LSE_MASKED and zero gradients.

/** The lse of a query row that sees no key (a finite stand-in for -inf, so no NaN can follow). */
export const LSE_MASKED = -1e30;

export interface AttnDims {
  B: number;
  Tq: number;
  /** Keys in use (<= Tcap). */
  Tk: number;
  /** Time dim of k and v (the KV cache capacity); default Tk. */
  Tcap?: number;
  NH: number;
  NKV: number;
  HS: number;
  /** Default 1 / sqrt(HS). */
  scale?: number;
}

interface Geometry {
  Tcap: number;
  G: number;
  scale: number;
  Tm: number;
}

function geometry(d: AttnDims, mask: ArrayLike<number> | null): Geometry {
  return { Tcap: d.Tcap ?? d.Tk, G: d.NH / d.NKV, scale: d.scale ?? 1 / Math.sqrt(d.HS), Tm: mask ? mask.length / d.B : 0 };
}

/** Calls f(b, h, i, p, lse) for every query row with its probabilities (length Tk, 0 where unseen; null: sees no key). */
function rows(
  q: ArrayLike<number>,
  k: ArrayLike<number>,
  mask: ArrayLike<number> | null,
  d: AttnDims,
  f: (b: number, h: number, i: number, p: Float64Array | null, logZ: number) => void,
): void {
  const { Tcap, G, scale, Tm } = geometry(d, mask);
  const { B, Tq, Tk, NH, NKV, HS } = d;
  const s = new Float64Array(Tk);
  for (let b = 0; b < B; b++) {
    for (let h = 0; h < NH; h++) {
      const kh = Math.floor(h / G);
      for (let i = 0; i < Tq; i++) {
        const lim = Tk - Tq + i;
        const qo = ((b * Tq + i) * NH + h) * HS;
        let mx = -Infinity;
        for (let j = 0; j < Tk; j++) {
          s[j] = -Infinity;
          if (j > lim || (mask && mask[b * Tm + j] === 0)) continue;
          const ko = ((b * Tcap + j) * NKV + kh) * HS;
          let acc = 0;
          for (let c = 0; c < HS; c++) acc += q[qo + c] * k[ko + c];
          s[j] = acc * scale;
          mx = Math.max(mx, s[j]);
        }
        if (mx === -Infinity) {
          f(b, h, i, null, LSE_MASKED);
          continue;
        }
        let z = 0;
        for (let j = 0; j < Tk; j++) z += s[j] === -Infinity ? 0 : Math.exp(s[j] - mx);
        const p = new Float64Array(Tk);
        for (let j = 0; j < Tk; j++) p[j] = s[j] === -Infinity ? 0 : Math.exp(s[j] - mx) / z;
        f(b, h, i, p, mx + Math.log(z));
      }
    }
  }
}

export function attentionForwardRef(
  q: ArrayLike<number>,
  k: ArrayLike<number>,
  v: ArrayLike<number>,
  mask: ArrayLike<number> | null,
  d: AttnDims,
): { out: Float64Array; lse: Float64Array } {
  const { Tcap, G } = geometry(d, mask);
  const { B, Tq, Tk, NH, NKV, HS } = d;
  const out = new Float64Array(B * Tq * NH * HS);
  const lse = new Float64Array(B * NH * Tq);
  rows(q, k, mask, d, (b, h, i, p, logZ) => {
    lse[(b * NH + h) * Tq + i] = logZ;
    if (!p) return;
    const oo = ((b * Tq + i) * NH + h) * HS;
    for (let j = 0; j < Tk; j++) {
      if (p[j] === 0) continue;
      const vo = ((b * Tcap + j) * NKV + Math.floor(h / G)) * HS;
      for (let c = 0; c < HS; c++) out[oo + c] += p[j] * v[vo + c];
    }
  });
  return { out, lse };
}

/** Gradients of sum(out * dout) with respect to q, k and v (dk, dv rows >= Tk are 0). */
export function attentionBackwardRef(
  dout: ArrayLike<number>,
  q: ArrayLike<number>,
  k: ArrayLike<number>,
  v: ArrayLike<number>,
  mask: ArrayLike<number> | null,
  d: AttnDims,
): { dq: Float64Array; dk: Float64Array; dv: Float64Array } {
  const { Tcap, G, scale } = geometry(d, mask);
  const { B, Tq, Tk, NH, NKV, HS } = d;
  const dq = new Float64Array(B * Tq * NH * HS);
  const dk = new Float64Array(B * Tcap * NKV * HS);
  const dv = new Float64Array(B * Tcap * NKV * HS);
  const dp = new Float64Array(Tk);
  rows(q, k, mask, d, (b, h, i, p) => {
    if (!p) return;
    const kh = Math.floor(h / G);
    const qo = ((b * Tq + i) * NH + h) * HS;
    // dP = dout . v_j; dS = P (dP - sum_j P dP); dq = dS K scale; dk_j += dS_j q scale; dv_j += P_j dout
    let D = 0;
    for (let j = 0; j < Tk; j++) {
      dp[j] = 0;
      if (p[j] === 0) continue;
      const vo = ((b * Tcap + j) * NKV + kh) * HS;
      for (let c = 0; c < HS; c++) dp[j] += dout[qo + c] * v[vo + c];
      D += p[j] * dp[j];
    }
    for (let j = 0; j < Tk; j++) {
      if (p[j] === 0) continue;
      const ko = ((b * Tcap + j) * NKV + kh) * HS;
      const ds = p[j] * (dp[j] - D) * scale;
      for (let c = 0; c < HS; c++) {
        dq[qo + c] += ds * k[ko + c];
        dk[ko + c] += ds * q[qo + c];
        dv[ko + c] += p[j] * dout[qo + c];
      }
    }
  });
  return { dq, dk, dv };
}
