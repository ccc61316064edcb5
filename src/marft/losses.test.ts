import { describe, expect, it } from 'vitest';
import {
  actionGradToTokens,
  actionLevelPolicyLoss,
  actionLogProbs,
  countWords,
  exceedsTargetKl,
  klRewards,
  klTerm,
  ppoPolicyLoss,
  valueErrorTerm,
  valueLoss,
  type KlEstimator,
} from './losses.ts';
import type { ActionSpan } from './sequence.ts';

const H = 1e-6;

/** Central finite difference of f at x[i]. */
function fd(f: (x: Float64Array) => number, x: Float64Array, i: number): number {
  const p = x.slice();
  const m = x.slice();
  p[i] += H;
  m[i] -= H;
  return (f(p) - f(m)) / (2 * H);
}

function expectGrad(analytic: ArrayLike<number>, f: (x: Float64Array) => number, x: Float64Array, label: string) {
  for (let i = 0; i < x.length; i++) {
    const num = fd(f, x, i);
    expect(Math.abs(analytic[i] - num), `${label}[${i}]: analytic ${analytic[i]} vs numeric ${num}`).toBeLessThan(
      1e-6 + 1e-5 * Math.abs(num),
    );
  }
}

// Log-ratios chosen away from the clip kinks (|ratio - 1| != 0.2): exp(-0.5) = 0.61, exp(-0.1) = 0.90,
// exp(0.05) = 1.05, exp(0.3) = 1.35, exp(0.25) = 1.28, exp(-0.3) = 0.74; advantages of both signs, so both
// the clipped (gradient 0) and the unclipped branches are exercised.
const oldLogp = Float64Array.from([-1, -2, -0.5, -1.5, -3, -0.2]);
const logp = Float64Array.from([-1.5, -2.1, -0.45, -1.2, -2.75, -0.5]);
const adv = Float64Array.from([1, -0.5, 2, 1.5, -1, -2]);
const mask = Float64Array.from([1, 1, 1, 1, 0, 1]);
const entropy = Float64Array.from([0.3, 1.2, 0.8, 0.5, 2, 0.9]);
const ref = Float64Array.from([-1.2, -1.9, -0.6, -1.0, -2.0, -0.4]);

describe('ppoPolicyLoss', () => {
  for (const est of ['k1', 'k3'] as KlEstimator[]) {
    it(`gradients match finite differences (KL ${est})`, () => {
      const base = { oldLogp, advantages: adv, mask, clip: 0.2, entropyCoef: 0.01, refLogp: ref, klCoef: 0.1, klEstimator: est };
      const r = ppoPolicyLoss({ ...base, logp, entropy });
      expectGrad(r.dLogp, (x) => ppoPolicyLoss({ ...base, logp: x, entropy }).loss, logp, 'dLogp');
      expectGrad(r.dEntropy, (x) => ppoPolicyLoss({ ...base, logp, entropy: x }).loss, entropy, 'dEntropy');
      expect(r.dLogp[4]).toBe(0); // masked out
    });
  }
  it('computes the clipped surrogate by hand', () => {
    // One token, A = 1, ratio = exp(0.3) = 1.3498588: max(-1.3498588, -1.2) = -1.2 (clipped, gradient 0).
    const up = ppoPolicyLoss({ logp: [0.3], oldLogp: [0], advantages: [1], clip: 0.2 });
    expect(up.loss).toBeCloseTo(-1.2, 12);
    expect(up.dLogp[0]).toBe(0);
    expect(up.clipFraction).toBe(1);
    // A = -1, same ratio: max(1.3498588, 1.2) = 1.3498588, gradient -ratio*A = 1.3498588.
    const down = ppoPolicyLoss({ logp: [0.3], oldLogp: [0], advantages: [-1], clip: 0.2 });
    expect(down.loss).toBeCloseTo(Math.exp(0.3), 12);
    expect(down.dLogp[0]).toBeCloseTo(Math.exp(0.3), 12);
    // Approximate KL (k3) = (r - 1) - log r = 0.3498588 - 0.3 = 0.0498588; k1 = old - new = -0.3.
    expect(up.approxKl).toBeCloseTo(Math.exp(0.3) - 1 - 0.3, 12);
    expect(up.approxKlK1).toBeCloseTo(-0.3, 12);
    expect(exceedsTargetKl(up.approxKl, 0.01)).toBe(true);
    expect(exceedsTargetKl(up.approxKl, null)).toBe(false);
  });
  it('has the k1 and k3 estimators right', () => {
    // logp = -1, ref = -1.5: k1 = 0.5; k3 = exp(-0.5) - (-0.5) - 1 = 0.1065307.
    expect(klTerm(-1, -1.5, 'k1').kl).toBeCloseTo(0.5, 12);
    expect(klTerm(-1, -1.5, 'k3').kl).toBeCloseTo(Math.exp(-0.5) + 0.5 - 1, 12);
    expect(klTerm(-1, -1, 'k3')).toEqual({ kl: 0, dLogp: 0 });
  });
});

describe('klRewards (AReaL: KL in the rewards)', () => {
  it('is -kl_ctl * clamp(KL(old || ref), -10, 10) per token, k1 or k3', () => {
    // AReaL-based MARFT areal/trainer/ppo/actor.py: rewards = -self.kl_ctl * self.kl_estimator(old_logp, ref_logp);
    // areal/utils/data.py KLEstimator: k1 = old - ref, k3 = exp(ref - old) - (ref - old) - 1, clamped to [-10, 10].
    const old = [-1, -0.5, -30, -1];
    const ref = [-1.5, -0.5, -1, -40];
    // k1: 0.5, 0, -29 -> -10, 39 -> 10
    expect(Array.from(klRewards(old, ref, 0.1, 'k1')).map((x) => +x.toFixed(12))).toEqual([-0.05, 0, 1, -1]);
    // k3: x = ref - old = -0.5, 0, 29, -39: e^-0.5 + 0.5 - 1 = 0.10653065971, 0, e^29 - 30 -> 10, e^-39 + 38 -> 10
    const k3 = klRewards(old, ref, 0.1, 'k3');
    expect(k3[0]).toBeCloseTo(-0.010653065971, 12);
    expect(Array.from(k3.subarray(1))).toEqual([-0, -1, -1]);
    expect(() => klRewards([-1], [], 0.1, 'k1')).toThrow(/refLogp has length 0/);
  });
});

describe('action level', () => {
  // Tokens 0..8: action 0 = [0, 3), action 1 = [4, 6), action 2 = [6, 9); token 3 is a prompt token.
  const spans: ActionSpan[] = [
    { agent: 0, start: 0, end: 3 },
    { agent: 1, start: 4, end: 6 },
    { agent: 0, start: 6, end: 9 },
  ];
  const tl = Float64Array.from([-0.5, -1, -0.2, 0, -0.7, -0.1, -0.3, -0.4, -0.9]);
  const oldTl = Float64Array.from([-0.45, -1.1, -0.25, 0, -0.6, -0.15, -0.35, -0.3, -0.95]);
  const refTl = Float64Array.from([-0.6, -0.9, -0.3, 0, -0.8, -0.2, -0.2, -0.5, -1]);
  const tH = Float64Array.from([0.5, 0.4, 0.3, 0, 1, 1.1, 0.2, 0.7, 0.6]);
  it('normalises action log-probs', () => {
    const sum = actionLogProbs(tl, spans, 'sum');
    // Sums: -0.5 - 1 - 0.2 = -1.7; -0.7 - 0.1 = -0.8; -0.3 - 0.4 - 0.9 = -1.6.
    [-1.7, -0.8, -1.6].forEach((w, a) => expect(sum[a]).toBeCloseTo(w, 12));
    expect(actionLogProbs(tl, spans, 'token')[1]).toBeCloseTo(-0.8 / 2, 12);
    expect(actionLogProbs(tl, spans, 'word', [2, 1, 4])[2]).toBeCloseTo(-1.6 / 4, 12);
    expect(Array.from(actionGradToTokens([1, 2, 3], spans, 9, 'token'))).toEqual([1 / 3, 1 / 3, 1 / 3, 0, 1, 1, 1, 1, 1]);
    expect(countWords('  two words ')).toBe(2);
    expect(() => actionLogProbs(tl, spans, 'word')).toThrow(/word count/);
  });
  for (const norm of ['sum', 'token', 'word'] as const) {
    it(`gradients match finite differences (${norm})`, () => {
      const base = {
        oldTokenLogp: oldTl,
        spans,
        advantages: [1, -1, 0.5],
        norm,
        wordCounts: [2, 1, 3],
        clip: 0.2,
        entropyCoef: 0.01,
        refTokenLogp: refTl,
        klCoef: 0.1,
        klEstimator: 'k3' as const,
      };
      const r = actionLevelPolicyLoss({ ...base, tokenLogp: tl, tokenEntropy: tH });
      expectGrad(r.dTokenLogp, (x) => actionLevelPolicyLoss({ ...base, tokenLogp: x, tokenEntropy: tH }).loss, tl, 'dTokenLogp');
      expectGrad(r.dTokenEntropy, (x) => actionLevelPolicyLoss({ ...base, tokenLogp: tl, tokenEntropy: x }).loss, tH, 'dTokenEntropy');
      expect(r.dTokenLogp[3]).toBe(0);
    });
  }
});

describe('valueLoss', () => {
  it('Huber is correct on both sides', () => {
    // e = -20 with delta 10: 10 * (20 - 5) = 150, slope -10 (the reference returned 0 here).
    expect(valueErrorTerm(-20, 'huber')).toEqual({ f: 150, df: -10 });
    expect(valueErrorTerm(20, 'huber')).toEqual({ f: 150, df: 10 });
    expect(valueErrorTerm(-3, 'huber')).toEqual({ f: 4.5, df: -3 });
    expect(valueErrorTerm(-3, 'mse')).toEqual({ f: 4.5, df: -3 });
  });
  it('computes the clipped loss by hand', () => {
    // v = 1.0, old = 0.5, R = 2, clip 0.2: v_clip = 0.7; errors 1.0 and 1.3; f = 0.5 and 0.845;
    // max -> the clipped term 0.845, and v_clip does not move with v (v - old = 0.5 > 0.2) -> gradient 0.
    const r = valueLoss({ values: [1], oldValues: [0.5], returns: [2], clip: 0.2, kind: 'mse' });
    expect(r.loss).toBeCloseTo(0.845, 12);
    expect(r.dValues[0]).toBe(0);
    expect(r.clipFraction).toBe(1);
  });
  for (const kind of ['huber', 'mse'] as const) {
    for (const clip of [0, 0.2]) {
      it(`gradients match finite differences (${kind}, clip ${clip})`, () => {
        // Errors on both sides of 0 and beyond the Huber delta (|R - v| up to 25); v - old inside and
        // outside the clip range.
        const values = Float64Array.from([1, -2, 0.5, 3, 0.1, -0.4]);
        const oldValues = Float64Array.from([0.9, -1.5, 0.55, 2.5, 0.2, -0.3]);
        const returns = Float64Array.from([26, -20, 0.2, -12, 4, 1.5]);
        const base = { oldValues, returns, mask, clip, kind };
        const r = valueLoss({ ...base, values });
        expectGrad(r.dValues, (x) => valueLoss({ ...base, values: x }).loss, values, 'dValues');
      });
    }
  }
});
