// The PPO policy loss kernel against its float64 reference (ppo.ref.ts), and that reference against the
// algorithm's own (src/marft/losses.ts: ppoPolicyLoss, actionLevelPolicyLoss) on the same hand-made cases:
// the clip active on both sides, negative advantages, k1 and k3, an entropy bonus, masked and padded rows
// (holding NaN, which must stay out), a normaliser Z above the unit count (a micro-batch of a larger
// minibatch), and at action level the sum / token / word normalisations.

import { describe, expect, it } from 'vitest';
import { actionLevelPolicyLoss, ppoPolicyLoss } from '../../src/marft/losses.ts';
import type { Gpu } from '../../src/gpu/gpu.ts';
import type { Tensor } from '../../src/gpu/tensor.ts';
import { expectClose, testGpu } from '../testing.ts';
import { PPO_SUMS, type PpoLossOptions, ppoActionLoss, ppoTokenLoss } from './ppo.ts';
import { type PpoLossRef, ppoActionLossRef, ppoTokenLossRef } from './ppo.ref.ts';

const f32 = (a: ArrayLike<number>) => Array.from(Float32Array.from(a));
const TOL = { atol: 1e-6, rtol: 1e-5 };

// Ten rows: 0 prompt (mask 0, NaN log-prob), 1..8 generated, 9 padding (NaN). Log-ratios away from the clip
// kinks: e^0.3 = 1.35 and e^0.25 = 1.28 above 1.2, e^-0.3 = 0.74 and e^-0.5 = 0.61 below 0.8, the rest inside.
const NaN_ = Number.NaN;
const logp = f32([NaN_, -1.5, -2.1, -0.45, -1.2, -2.75, -0.5, -0.9, -1.7, NaN_]);
const old = f32([0, -1, -2, -0.5, -1.5, -3, -0.2, -1.0, -1.4, 0]);
const ref = f32([0, -1.2, -1.9, -0.6, -1.0, -2.0, -0.4, -1.1, -1.5, 0]);
const adv = f32([0, 1, -0.5, 2, 1.5, -1, -2, -0.7, 0.4, 0]);
const ent = f32([0.7, 0.3, 1.2, 0.8, 0.5, 2, 0.9, 1.1, 0.4, 0.6]);
const mask = [0, 1, 1, 1, 1, 1, 1, 1, 1, 0];
const N = logp.length;
const tokOf = (m: ArrayLike<number>) => Array.from({ length: N }, (_, n) => [old[n], ref[n], adv[n], m[n]]).flat();

const gpu = await testGpu();

interface Run {
  dlogp: Float32Array;
  dentropy: Float32Array;
  sums: Float32Array;
}

async function runGpu(launch: (dl: Tensor, de: Tensor, sums: Tensor, lp: Tensor, en: Tensor) => void, g: Gpu = gpu): Promise<Run> {
  const [dl, de] = [
    g.upload(new Float32Array(N).fill(7), [N], 'f32', 'dlogp'),
    g.upload(new Float32Array(N).fill(7), [N], 'f32', 'dentropy'),
  ]; // = overwrites
  const sums = g.zeros([8], 'f32', 'sums');
  const [lp, en] = [g.upload(logp, [N], 'f32', 'logp'), g.upload(ent, [N], 'f32', 'entropy')];
  launch(dl, de, sums, lp, en);
  const [a, b, c] = await g.readMany([dl, de, sums]);
  g.release(dl, de, sums, lp, en);
  return { dlogp: a as Float32Array, dentropy: b as Float32Array, sums: c as Float32Array };
}

function expectMatch(got: Run, ref: PpoLossRef): void {
  expectClose('dlogp', got.dlogp, ref.dlogp, TOL);
  expectClose('dentropy', got.dentropy, ref.dentropy, TOL);
  PPO_SUMS.forEach((name, i) => expectClose(`sums.${name}`, [got.sums[i]], [ref.sums[i]], TOL));
}

/** The reference's numbers as losses.ts gives them (the metrics divide the raw sums by the unit count). */
function expectLosses(
  ref: PpoLossRef,
  l: { loss: number; surrogate: number; entropy: number; kl: number; approxKl: number; approxKlK1: number; clipFraction: number },
  dl: ArrayLike<number>,
  de: ArrayLike<number>,
): void {
  const s = ref.sums;
  const c = s[7];
  expectClose(
    'losses.ts metrics',
    [s[0], s[1], s[2], s[3], s[4] / c, s[5] / c, s[6] / c],
    [l.loss, l.surrogate, l.entropy, l.kl, l.approxKl, l.approxKlK1, l.clipFraction],
    { atol: 1e-12, rtol: 1e-12 },
  );
  expectClose('losses.ts dLogp', ref.dlogp, dl, { atol: 1e-12, rtol: 1e-12 });
  expectClose('losses.ts dEntropy', ref.dentropy, de, { atol: 1e-12, rtol: 1e-12 });
}

const BASE: PpoLossOptions = { clip: 0.2, entropyCoef: 0.01, klCoef: 0.1, klEstimator: 'k3', withRef: true, normalizer: 11 };

describe('ppo token level', () => {
  const cases: Array<[string, PpoLossOptions]> = [
    ['k3, entropy bonus, Z above the count', BASE],
    ['k1', { ...BASE, klEstimator: 'k1' }],
    ['KL measured only (coefficient 0)', { ...BASE, klCoef: 0 }],
    ['no reference, no entropy bonus', { ...BASE, withRef: false, klCoef: 0, entropyCoef: 0, normalizer: 8 }],
  ];
  for (const [name, o] of cases) {
    it(name, async () => {
      const tok = tokOf(mask);
      const r = ppoTokenLossRef(logp, ent, tok, o);
      const l = ppoPolicyLoss({
        logp,
        oldLogp: old,
        advantages: adv,
        mask,
        clip: o.clip,
        entropy: ent,
        entropyCoef: o.entropyCoef,
        refLogp: o.withRef ? ref : undefined,
        klCoef: o.klCoef,
        klEstimator: o.klEstimator,
        normalizer: o.normalizer,
      });
      expectLosses(r, l, l.dLogp, l.dEntropy);
      // outside the range: rows 4, 5 above and 1, 6, 8 below; the clipped branch wins at row 4 (above, A > 0) and 6 (below, A < 0)
      expect(r.sums[6]).toBe(5);
      const t = gpu.upload(tok, [N, 4], 'f32', 'tok');
      expectMatch(await runGpu((dl, de, sums, lp, en) => ppoTokenLoss(gpu, dl, de, sums, lp, en, t, o)), r);
      gpu.release(t);
    });
  }

  it('by hand: one row clipped above with A > 0 (gradient 0), one below with A < 0 (gradient 0), one unclipped', async () => {
    // rows: log-ratio 0.3, A = 1: max(-1.35, -1.2) = -1.2, no gradient; log-ratio -0.3, A = -1: max(0.74, 0.8) = 0.8,
    // no gradient; log-ratio 0.1, A = -1: ratio 1.105 inside, s = 1.105, gradient -ratio*A = 1.105. Z = 3.
    const o = { clip: 0.2, entropyCoef: 0, klCoef: 0, klEstimator: 'k3', withRef: false, normalizer: 3 } as const;
    const lp = gpu.upload([0.3, -0.3, 0.1], [3], 'f32', 'logp');
    const en = gpu.zeros([3], 'f32', 'entropy');
    const tok = gpu.upload([0, 0, 1, 1, 0, 0, -1, 1, 0, 0, -1, 1], [3, 4], 'f32', 'tok');
    const [dl, de] = [gpu.tensor([3], 'f32', 'dlogp'), gpu.tensor([3], 'f32', 'dentropy')];
    const sums = gpu.zeros([8], 'f32', 'sums');
    ppoTokenLoss(gpu, dl, de, sums, lp, en, tok, o);
    const [g, s] = await gpu.readMany([dl, sums]);
    expectClose('dlogp', g, [0, 0, Math.exp(0.1) / 3], TOL);
    expectClose('loss', [s[0]], [(-1.2 + 0.8 + Math.exp(0.1)) / 3], TOL);
    expect(s[6]).toBe(2);
    gpu.release(lp, en, tok, dl, de, sums);
  });

  it('adds into the sums across calls (the micro-batches of a minibatch) and flags a NaN log-prob as a NaN loss', async () => {
    const tok = gpu.upload(tokOf(mask), [N, 4], 'f32', 'tok');
    const r = ppoTokenLossRef(logp, ent, tokOf(mask), BASE);
    const got = await runGpu((dl, de, sums, lp, en) => {
      ppoTokenLoss(gpu, dl, de, sums, lp, en, tok, BASE);
      ppoTokenLoss(gpu, dl, de, sums, lp, en, tok, BASE);
    });
    PPO_SUMS.forEach((name, i) => expectClose(`twice ${name}`, [got.sums[i]], [2 * r.sums[i]], TOL));
    gpu.release(tok);
    // the prompt row counted: its NaN log-prob must not vanish in max / clamp (SwiftShader's max(NaN, x) is x)
    const bad = gpu.upload(tokOf(mask.map((m, n) => (n === 0 ? 1 : m))), [N, 4], 'f32', 'tok');
    const nan = await runGpu((dl, de, sums, lp, en) => ppoTokenLoss(gpu, dl, de, sums, lp, en, bad, { ...BASE, withRef: false }));
    expect(nan.sums[0]).toBeNaN();
    gpu.release(bad);
  });
});

describe('ppo action level', () => {
  // Three actions over rows 1-3, 4-5 and 6-8 (row 0 a prompt, row 9 padding); the second is masked off in one case.
  const spans = [1, 3, 4, 2, 6, 3];
  const A = spans.length / 2;
  const actAdv = [1.2, -0.8, -1.5];
  const words = [2, 1, 5];
  const scaleOf = (norm: 'sum' | 'token' | 'word', a: number) =>
    norm === 'sum' ? 1 : norm === 'token' ? 1 / spans[2 * a + 1] : 1 / words[a];
  const cases: Array<[string, 'sum' | 'token' | 'word', PpoLossOptions, number[]]> = [
    ['norm sum, k3', 'sum', BASE, [1, 1, 1]],
    ['norm token, k1', 'token', { ...BASE, klEstimator: 'k1', clip: 0.05 }, [1, 1, 1]],
    ['norm word, an action masked off', 'word', { ...BASE, normalizer: 4 }, [1, 0, 1]],
    ['norm sum, no reference', 'sum', { ...BASE, withRef: false, klCoef: 0, normalizer: 3 }, [1, 1, 1]],
  ];
  for (const [name, norm, o, am] of cases) {
    it(name, async () => {
      const acts = Array.from({ length: A }, (_, a) => [actAdv[a], scaleOf(norm, a), am[a], 0]).flat();
      const tok = tokOf(mask);
      const r = ppoActionLossRef(logp, ent, tok, spans, acts, o);
      const l = actionLevelPolicyLoss({
        tokenLogp: logp,
        oldTokenLogp: old,
        spans: Array.from({ length: A }, (_, a) => ({ agent: 0, start: spans[2 * a], end: spans[2 * a] + spans[2 * a + 1] })),
        advantages: actAdv,
        actionMask: am,
        norm,
        wordCounts: words,
        clip: o.clip,
        tokenEntropy: ent,
        entropyCoef: o.entropyCoef,
        refTokenLogp: o.withRef ? ref : undefined,
        klCoef: o.klCoef,
        klEstimator: o.klEstimator,
        normalizer: o.normalizer,
      });
      expectLosses(r, l, l.dTokenLogp, l.dTokenEntropy);
      const t = gpu.upload(tok, [N, 4], 'f32', 'tok');
      const sp = gpu.upload(spans, [A, 2], 'i32', 'spans');
      const ac = gpu.upload(acts, [A, 4], 'f32', 'acts');
      expectMatch(await runGpu((dl, de, sums, lp, en) => ppoActionLoss(gpu, dl, de, sums, lp, en, t, sp, ac, o)), r);
      gpu.release(t, sp, ac);
    });
  }

  it('clips on both sides: the sum-normalised ratios of the three actions', () => {
    // log-ratios: (-0.5 - 0.1 + 0.05) = -0.55 (ratio 0.58, A > 0: unclipped branch), (0.3 + 0.25) = 0.55
    // (1.73, A < 0: unclipped), (-0.3 + 0.1 - 0.3) = -0.5 (0.61, A < 0: clipped branch, gradient 0)
    const acts = [actAdv[0], 1, 1, 0, actAdv[1], 1, 1, 0, actAdv[2], 1, 1, 0];
    const r = ppoActionLossRef(logp, ent, tokOf(mask), spans, acts, { ...BASE, klCoef: 0, entropyCoef: 0 });
    expect(r.sums[6]).toBe(3);
    expect(Array.from(r.dlogp.slice(6, 9))).toEqual([0, 0, 0]);
    expect(r.dlogp[1]).toBeCloseTo((-Math.exp(-0.55) * 1.2) / 11, 6);
    expect(r.dlogp[4]).toBeCloseTo((Math.exp(0.55) * 0.8) / 11, 6);
  });

  it('rejects mismatched shapes before any dispatch', () => {
    const lp = gpu.zeros([4], 'f32', 'logp');
    const tok = gpu.zeros([4, 3], 'f32', 'tok');
    const spans = gpu.zeros([2, 2], 'f32', 'spans');
    const acts = gpu.zeros([2, 4], 'f32', 'acts');
    const sums = gpu.zeros([8], 'f32', 'sums');
    const before = gpu.dispatchCount;
    expect(() => ppoTokenLoss(gpu, lp, lp, sums, lp, lp, tok, BASE)).toThrow(
      /ppoTokenLoss: tok \(old, ref, adv, mask per row\) must be \(4, 4\) f32, got \[4, 3\] f32/,
    );
    const tok4 = gpu.zeros([4, 4], 'f32', 'tok4');
    expect(() => ppoActionLoss(gpu, lp, sums, sums, lp, lp, tok4, spans, acts, BASE)).toThrow(/ppoActionLoss: dentropy must be \(4\) f32/);
    const [dl, de] = [gpu.zeros([4], 'f32', 'dl'), gpu.zeros([4], 'f32', 'de')];
    expect(() => ppoActionLoss(gpu, dl, de, sums, lp, lp, tok4, spans, acts, BASE)).toThrow(/ppoActionLoss: spans must be \(A, 2\) i32/);
    expect(() => ppoTokenLoss(gpu, dl, dl, sums, lp, lp, tok4, BASE)).toThrow(/ppoTokenLoss: dentropy and dlogp must be different buffers/);
    expect(gpu.dispatchCount).toBe(before);
    gpu.release(lp, tok, spans, acts, sums, tok4, dl, de);
  });
});
