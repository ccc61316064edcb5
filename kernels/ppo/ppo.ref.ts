// Float64 CPU reference for the PPO policy loss kernel, in the kernel's layouts (ppo.wgsl's header). The
// formulas are src/marft/losses.ts's (ppoPolicyLoss, actionLevelPolicyLoss); a kernel may not import the
// algorithm, so ppo.test.ts checks this reference against those functions on every case it runs.

import type { PpoLossOptions } from './ppo.ts';

export interface PpoLossRef {
  dlogp: Float64Array;
  dentropy: Float64Array;
  /** PPO_SUMS of this call alone. */
  sums: Float64Array;
}

function klTerm(lp: number, ref: number, est: 'k1' | 'k3'): [number, number] {
  if (est === 'k1') return [lp - ref, 1];
  const x = ref - lp;
  return [Math.exp(x) - x - 1, 1 - Math.exp(x)];
}

function surrogate(logRatio: number, adv: number, clip: number): { s: number; g: number; approx: number; clipped: number } {
  const ratio = Math.exp(logRatio);
  const s1 = -ratio * adv;
  const s2 = -Math.min(Math.max(ratio, 1 - clip), 1 + clip) * adv;
  return { s: Math.max(s1, s2), g: s1 >= s2 ? s1 : 0, approx: ratio - 1 - logRatio, clipped: Math.abs(ratio - 1) > clip ? 1 : 0 };
}

const finish = (sums: Float64Array, o: PpoLossOptions): Float64Array => {
  sums[0] = sums[1] - o.entropyCoef * sums[2] + o.klCoef * sums[3];
  return sums;
};

/** tok (N*4) = (old, ref, adv, mask) per row; a unit per row. */
export function ppoTokenLossRef(
  logp: ArrayLike<number>,
  entropy: ArrayLike<number>,
  tok: ArrayLike<number>,
  o: PpoLossOptions,
): PpoLossRef {
  const N = logp.length;
  const dlogp = new Float64Array(N);
  const dentropy = new Float64Array(N);
  const sums = new Float64Array(8);
  for (let n = 0; n < N; n++) {
    const [old, ref, adv, m] = [tok[4 * n], tok[4 * n + 1], tok[4 * n + 2], tok[4 * n + 3]];
    if (!m) continue;
    const w = m / o.normalizer;
    const lr = logp[n] - old;
    const s = surrogate(lr, adv, o.clip);
    let g = s.g;
    const [kl, dkl] = o.withRef ? klTerm(logp[n], ref, o.klEstimator) : [0, 0];
    g += o.klCoef * dkl;
    const add = [0, w * s.s, w * entropy[n], w * kl, m * s.approx, -m * lr, m * s.clipped, m];
    add.forEach((v, i) => {
      sums[i] += v;
    });
    dlogp[n] = w * g;
    dentropy[n] = -o.entropyCoef * w;
  }
  return { dlogp, dentropy, sums: finish(sums, o) };
}

/** spans (A*2) = (first row, count); acts (A*4) = (adv, scale, mask, -); a unit per action. */
export function ppoActionLossRef(
  logp: ArrayLike<number>,
  entropy: ArrayLike<number>,
  tok: ArrayLike<number>,
  spans: ArrayLike<number>,
  acts: ArrayLike<number>,
  o: PpoLossOptions,
): PpoLossRef {
  const N = logp.length;
  const dlogp = new Float64Array(N);
  const dentropy = new Float64Array(N);
  const sums = new Float64Array(8);
  for (let a = 0; a < spans.length / 2; a++) {
    const [start, count] = [spans[2 * a], spans[2 * a + 1]];
    const [adv, scale, m] = [acts[4 * a], acts[4 * a + 1], acts[4 * a + 2]];
    if (!m) continue;
    let d = 0;
    for (let n = start; n < start + count; n++) d += logp[n] - tok[4 * n];
    const lr = scale * d;
    const s = surrogate(lr, adv, o.clip);
    const w = m / o.normalizer;
    const wt = w / count;
    let ent = 0;
    let kl = 0;
    for (let n = start; n < start + count; n++) {
      const [k, dk] = o.withRef ? klTerm(logp[n], tok[4 * n + 1], o.klEstimator) : [0, 0];
      ent += entropy[n];
      kl += k;
      dlogp[n] = w * scale * s.g + o.klCoef * wt * dk;
      dentropy[n] = -o.entropyCoef * wt;
    }
    const add = [0, w * s.s, wt * ent, wt * kl, m * s.approx, -m * lr, m * s.clipped, m];
    add.forEach((v, i) => {
      sums[i] += v;
    });
  }
  return { dlogp, dentropy, sums: finish(sums, o) };
}
