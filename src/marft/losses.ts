// The PPO objective on CPU arrays in float64, with its gradients. The policy update computes the same
// policy-loss formulas in f32 on the GPU (kernels/ppo, whose test and the update's test check it against
// these): dLogp and dEntropy are the per-token coefficients that feed the logprob kernel's backward
// (dLoss/dlogp_k and dLoss/dH_k); dValues feeds the critic head's backward. Each gradient is checked against
// finite differences in losses.test.ts.
//
// Policy loss over M units (tokens at token level, actions at action level), Z = sum of the mask unless
// a normaliser is given (e.g. the whole minibatch's count when it is split into micro-batches):
//   ratio_k = exp(logp_k - oldLogp_k)
//   L = (1/Z) sum_k m_k [ max(-ratio_k A_k, -clip(ratio_k, 1-eps, 1+eps) A_k) - c_H H_k + c_KL KL_k ]
//   KL_k (to the reference policy): k1 = logp - ref;  k3 = exp(ref - logp) - (ref - logp) - 1
//   dL/dlogp_k = (m_k/Z) [ (unclipped branch active ? -ratio_k A_k : 0) + c_KL dKL_k/dlogp_k ]
//     (the clipped branch is constant in logp; when ratio is inside the range both branches agree)
//     dk1/dlogp = 1;  dk3/dlogp = 1 - exp(ref - logp)
//   dL/dH_k = -c_H m_k / Z
// Diagnostics: approximate KL between the behaviour and the current policy for the early stop,
// mean((ratio - 1) - log ratio) (k3, never negative) and mean(oldLogp - logp) (k1); clip fraction = share
// of units with |ratio - 1| > eps.
// Action level: an action's log-prob is the sum of its tokens' log-probs, or that sum divided by its token
// count ("token") or word count ("word"); its gradient goes back to each token as dL/dlogp_action times
// 1, 1/tokens or 1/words. Entropy and KL at action level are each action's token mean, averaged over actions.
// Value loss: clipped as MAPPO/MARFT (v_clip = old + clamp(v - old, -c, c); loss = max(f(R - v), f(R - v_clip)))
// with f Huber (delta 10; f'(e) = e inside, delta*sign(e) outside — correct on both sides, where the
// reference's Huber was zero for negative errors) or MSE (f = e^2/2).

import { checkLengths, marftFail } from './errors.ts';
import type { ActionSpan } from './sequence.ts';

export type KlEstimator = 'k1' | 'k3';

/** Per-unit KL estimate to the reference and its derivative in logp. */
export function klTerm(logp: number, refLogp: number, estimator: KlEstimator): { kl: number; dLogp: number } {
  if (estimator === 'k1') return { kl: logp - refLogp, dLogp: 1 };
  const x = refLogp - logp;
  const ex = Math.exp(x);
  return { kl: ex - x - 1, dLogp: 1 - ex };
}

export interface PolicyLossInput {
  /** Current log-probs. (M) */
  logp: ArrayLike<number>;
  /** Behaviour (rollout) log-probs. (M) */
  oldLogp: ArrayLike<number>;
  /** (M) */
  advantages: ArrayLike<number>;
  /** 1 = counts. Default all. (M) */
  mask?: ArrayLike<number>;
  /** PPO's epsilon: the ratio is clipped to [1 - clip, 1 + clip]. */
  clip: number;
  /** Per-unit entropy of the current policy. (M) */
  entropy?: ArrayLike<number>;
  entropyCoef?: number;
  /** Reference-policy log-probs, for the KL penalty. (M) */
  refLogp?: ArrayLike<number>;
  klCoef?: number;
  klEstimator?: KlEstimator;
  /** Denominator of the mean; default the mask's sum. */
  normalizer?: number;
}

export interface PolicyLossResult {
  /** The whole objective (surrogate - c_H*entropy + c_KL*KL), mean over masked units. */
  loss: number;
  /** The clipped surrogate term alone. */
  surrogate: number;
  /** Mean entropy and mean KL-to-reference (0 when not given). */
  entropy: number;
  kl: number;
  /** Approximate KL(behaviour || current): k3 form and k1 form. */
  approxKl: number;
  approxKlK1: number;
  clipFraction: number;
  /** dL/dlogp per unit. (M) */
  dLogp: Float64Array;
  /** dL/dentropy per unit. (M) */
  dEntropy: Float64Array;
}

function maskSum(M: number, mask?: ArrayLike<number>): number {
  if (!mask) return M;
  let s = 0;
  for (let i = 0; i < M; i++) s += mask[i];
  return s;
}

/** The clipped PPO objective and its gradients (see the file header). */
export function ppoPolicyLoss(input: PolicyLossInput): PolicyLossResult {
  const { logp, oldLogp, advantages, mask, clip, entropy, refLogp } = input;
  const M = logp.length;
  checkLengths('ppoPolicyLoss', M, { oldLogp, advantages, mask, entropy, refLogp });
  if (!(clip > 0)) marftFail('SHAPE', `ppoPolicyLoss: clip must be > 0, got ${clip}`);
  const cH = input.entropyCoef ?? 0;
  const cKL = input.klCoef ?? 0;
  const est = input.klEstimator ?? 'k3';
  const count = maskSum(M, mask);
  const Z = input.normalizer ?? count;
  const dLogp = new Float64Array(M);
  const dEntropy = new Float64Array(M);
  let surrogate = 0;
  let ent = 0;
  let kl = 0;
  let approx = 0;
  let approxK1 = 0;
  let clipped = 0;
  for (let k = 0; k < M; k++) {
    const m = mask ? mask[k] : 1;
    if (!m) continue;
    const w = m / (Z || 1);
    const logRatio = logp[k] - oldLogp[k];
    const ratio = Math.exp(logRatio);
    const A = advantages[k];
    const s1 = -ratio * A;
    const s2 = -Math.min(Math.max(ratio, 1 - clip), 1 + clip) * A;
    surrogate += w * Math.max(s1, s2);
    let g = s1 >= s2 ? -ratio * A : 0;
    if (Math.abs(ratio - 1) > clip) clipped += m;
    approx += m * (ratio - 1 - logRatio);
    approxK1 += m * -logRatio;
    if (entropy) {
      ent += w * entropy[k];
      dEntropy[k] = -cH * w;
    }
    if (refLogp) {
      const t = klTerm(logp[k], refLogp[k], est);
      kl += w * t.kl;
      g += cKL * t.dLogp;
    }
    dLogp[k] = w * g;
  }
  const loss = surrogate - cH * ent + cKL * kl;
  const c = count || 1;
  return { loss, surrogate, entropy: ent, kl, approxKl: approx / c, approxKlK1: approxK1 / c, clipFraction: clipped / c, dLogp, dEntropy };
}

/**
 * KL in the rewards (ppo.klIn 'reward'), as the AReaL-based MARFT's PPOActor.compute_advantages
 * (areal/trainer/ppo/actor.py, estimator from areal/utils/data.py): r_k = -c_KL * clamp(KL_k(old || ref), -10, 10)
 * per generated token, KL_k by klTerm with the behaviour log-probs as logp; added to the rewards before GAE.
 */
export function klRewards(oldLogp: ArrayLike<number>, refLogp: ArrayLike<number>, klCoef: number, estimator: KlEstimator): Float64Array {
  checkLengths('klRewards', oldLogp.length, { refLogp });
  const out = new Float64Array(oldLogp.length);
  for (let k = 0; k < out.length; k++) out[k] = -klCoef * Math.min(10, Math.max(-10, klTerm(oldLogp[k], refLogp[k], estimator).kl));
  return out;
}

/** Whether PPO should skip a minibatch's policy step: approximate KL above the target (target null/undefined = never). */
export function exceedsTargetKl(approxKl: number, targetKl: number | null | undefined): boolean {
  return targetKl !== null && targetKl !== undefined && approxKl > targetKl;
}

// ---- Action level ----

export type LogProbNorm = 'sum' | 'token' | 'word';

/** What each action's token log-prob sum is multiplied by: 1, 1/tokens or 1/words (at least one word). (A) */
export function actionScales(spans: readonly ActionSpan[], norm: LogProbNorm, wordCounts?: ArrayLike<number>): Float64Array {
  if (norm === 'word') {
    if (!wordCounts) marftFail('SHAPE', 'action log-prob normalisation "word" needs the word count of each action');
    checkLengths('action log-prob (word)', spans.length, { wordCounts });
  }
  return Float64Array.from(spans, (s, a) => {
    if (norm === 'sum') return 1;
    if (norm === 'token') return 1 / (s.end - s.start);
    const w = wordCounts![a];
    return 1 / Math.max(1, w); // an action of no words counts as one word
  });
}

/** Each action's log-prob from its tokens': sum, or sum/tokens, or sum/words. (A) */
export function actionLogProbs(
  tokenLogp: ArrayLike<number>,
  spans: readonly ActionSpan[],
  norm: LogProbNorm,
  wordCounts?: ArrayLike<number>,
): Float64Array {
  const scale = actionScales(spans, norm, wordCounts);
  return Float64Array.from(spans, (s, a) => {
    let sum = 0;
    for (let t = s.start; t < s.end; t++) sum += tokenLogp[t];
    return sum * scale[a];
  });
}

/** Spreads per-action gradients dL/dlogp_action back to the tokens. (T) */
export function actionGradToTokens(
  dActionLogp: ArrayLike<number>,
  spans: readonly ActionSpan[],
  T: number,
  norm: LogProbNorm,
  wordCounts?: ArrayLike<number>,
): Float64Array {
  checkLengths('actionGradToTokens', spans.length, { dActionLogp });
  const scale = actionScales(spans, norm, wordCounts);
  const out = new Float64Array(T);
  spans.forEach((s, a) => {
    for (let t = s.start; t < s.end; t++) out[t] += dActionLogp[a] * scale[a];
  });
  return out;
}

/** Word count of a text (whitespace-separated), for the "word" normalisation. */
export const countWords = (text: string): number => (text.trim() === '' ? 0 : text.trim().split(/\s+/).length);

export interface ActionPolicyLossInput {
  /** Current and behaviour log-prob of every token of the sequence(s). (T) */
  tokenLogp: ArrayLike<number>;
  oldTokenLogp: ArrayLike<number>;
  /** The actions (sequence.ts actionSpans). */
  spans: readonly ActionSpan[];
  /** One advantage per action. (A) */
  advantages: ArrayLike<number>;
  /** 1 = the action counts (e.g. its agent trains this iteration). (A) */
  actionMask?: ArrayLike<number>;
  norm: LogProbNorm;
  wordCounts?: ArrayLike<number>;
  clip: number;
  tokenEntropy?: ArrayLike<number>;
  entropyCoef?: number;
  refTokenLogp?: ArrayLike<number>;
  klCoef?: number;
  klEstimator?: KlEstimator;
  normalizer?: number;
}

export interface ActionPolicyLossResult extends Omit<PolicyLossResult, 'dLogp' | 'dEntropy'> {
  /** dL/dlogp per token. (T) */
  dTokenLogp: Float64Array;
  /** dL/dH per token. (T) */
  dTokenEntropy: Float64Array;
}

/** PPO at action level: the ratio of whole actions, entropy and KL as token means per action. */
export function actionLevelPolicyLoss(input: ActionPolicyLossInput): ActionPolicyLossResult {
  const { tokenLogp, oldTokenLogp, spans, norm, wordCounts, actionMask, tokenEntropy, refTokenLogp } = input;
  const T = tokenLogp.length;
  checkLengths('actionLevelPolicyLoss', T, { oldTokenLogp, tokenEntropy, refTokenLogp });
  checkLengths('actionLevelPolicyLoss (per action)', spans.length, { advantages: input.advantages, actionMask });
  const A = spans.length;
  const surr = ppoPolicyLoss({
    logp: actionLogProbs(tokenLogp, spans, norm, wordCounts),
    oldLogp: actionLogProbs(oldTokenLogp, spans, norm, wordCounts),
    advantages: input.advantages,
    mask: actionMask,
    clip: input.clip,
    normalizer: input.normalizer,
  });
  const dTokenLogp = actionGradToTokens(surr.dLogp, spans, T, norm, wordCounts);
  const dTokenEntropy = new Float64Array(T);
  const Z = input.normalizer ?? maskSum(A, actionMask);
  const cH = input.entropyCoef ?? 0;
  const cKL = input.klCoef ?? 0;
  const est = input.klEstimator ?? 'k3';
  let ent = 0;
  let kl = 0;
  spans.forEach((s, a) => {
    const m = actionMask ? actionMask[a] : 1;
    if (!m) return;
    const w = m / (Z || 1) / (s.end - s.start); // the action's weight, shared by its tokens (token mean)
    for (let t = s.start; t < s.end; t++) {
      if (tokenEntropy) {
        ent += w * tokenEntropy[t];
        dTokenEntropy[t] = -cH * w;
      }
      if (refTokenLogp) {
        const k = klTerm(tokenLogp[t], refTokenLogp[t], est);
        kl += w * k.kl;
        dTokenLogp[t] += cKL * w * k.dLogp;
      }
    }
  });
  return {
    loss: surr.surrogate - cH * ent + cKL * kl,
    surrogate: surr.surrogate,
    entropy: ent,
    kl,
    approxKl: surr.approxKl,
    approxKlK1: surr.approxKlK1,
    clipFraction: surr.clipFraction,
    dTokenLogp,
    dTokenEntropy,
  };
}

// ---- Value loss ----

export type ValueLossKind = 'huber' | 'mse';

/** f(e) and f'(e) for the value error e = return - value. */
export function valueErrorTerm(e: number, kind: ValueLossKind, huberDelta = 10): { f: number; df: number } {
  if (kind === 'mse') return { f: 0.5 * e * e, df: e };
  const a = Math.abs(e);
  return a <= huberDelta ? { f: 0.5 * e * e, df: e } : { f: huberDelta * (a - 0.5 * huberDelta), df: huberDelta * Math.sign(e) };
}

export interface ValueLossInput {
  /** Current critic values. (M) */
  values: ArrayLike<number>;
  /** Critic values at rollout time (for clipping). (M) */
  oldValues?: ArrayLike<number>;
  /** GAE returns (targets). (M) */
  returns: ArrayLike<number>;
  mask?: ArrayLike<number>;
  /** Value clip c (> 0 enables clipping; needs oldValues). */
  clip?: number | null;
  kind: ValueLossKind;
  huberDelta?: number;
  normalizer?: number;
}

/** The (clipped) value loss, mean over the mask, and dL/dvalue per unit. */
export function valueLoss(input: ValueLossInput): { loss: number; dValues: Float64Array; clipFraction: number } {
  const { values, oldValues, returns, mask, kind } = input;
  const M = values.length;
  checkLengths('valueLoss', M, { oldValues, returns, mask });
  const c = input.clip ?? 0;
  if (c > 0 && !oldValues) marftFail('SHAPE', 'valueLoss: value clipping needs oldValues');
  const delta = input.huberDelta ?? 10;
  const count = maskSum(M, mask);
  const Z = input.normalizer ?? count;
  const dValues = new Float64Array(M);
  let loss = 0;
  let clipped = 0;
  for (let k = 0; k < M; k++) {
    const m = mask ? mask[k] : 1;
    if (!m) continue;
    const w = m / (Z || 1);
    const v = values[k];
    const orig = valueErrorTerm(returns[k] - v, kind, delta);
    if (c > 0) {
      const dv = v - oldValues![k];
      const inside = Math.abs(dv) <= c;
      const vClip = oldValues![k] + Math.min(Math.max(dv, -c), c);
      const clip = valueErrorTerm(returns[k] - vClip, kind, delta);
      if (!inside) clipped += m;
      if (orig.f >= clip.f) {
        loss += w * orig.f;
        dValues[k] = -w * orig.df;
      } else {
        loss += w * clip.f;
        dValues[k] = inside ? -w * clip.df : 0; // v_clip does not move with v outside the clip range
      }
    } else {
      loss += w * orig.f;
      dValues[k] = -w * orig.df;
    }
  }
  return { loss, dValues, clipFraction: clipped / (count || 1) };
}
