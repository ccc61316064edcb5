// The direction of a PPO step, end to end on the GPU: after one update in which one action has a positive
// advantage and another a negative one, the first action's log-probability (under the new adapters)
// went up and the second's went down — the sign chain from the loss through the log-prob kernel, the
// decoder's backward and AdamW. And the approx-KL early stop as the legacy MARFT trainers do it: a minibatch
// over the target skips its policy step only, the critic and the later minibatches train on. And the loss on
// the GPU (kernels/ppo) against the path it replaced, kept here as a test-only reference: the log-probs of
// every micro-batch read back, the loss in float64 (losses.ts), its gradients uploaded into the head's backward.

import { describe, expect, it } from 'vitest';
import { expectClose, testGpu } from '../../kernels/testing.ts';
import type { Gpu } from '../gpu/gpu.ts';
import { releaseTokenLogprobs, tokenLogprobs, tokenLogprobsBackward } from '../model/heads.ts';
import { clearGrads, optimizerStep } from '../model/optimizer.ts';
import { buildBatch, chunkActions } from './batch.ts';
import { actionLevelPolicyLoss, countWords, ppoPolicyLoss } from './losses.ts';
import { twoEpisodes } from './testing-episodes.ts';
import type { ScoreResult } from './score.ts';
import { compileGraph } from '../config/graph.ts';
import { createEnv } from '../envs/registry.ts';
import { rollout } from './rollout.ts';
import { scoreActions } from './score.ts';
import type { ActionTargets } from './advantage-targets.ts';
import { minibatchAdvantages, ppoUpdate } from './update.ts';
import { tinySetup } from './testing.ts';
import type { ActionRecord } from './rollout.ts';

describe('ppo update', () => {
  it('raises the log-prob of an action with positive advantage and lowers one with negative advantage', async () => {
    const gpu = await testGpu();
    const s = tinySetup(gpu, {
      level: 'token',
      rollout: { episodes: 1, horizon: 1 },
      ppo: { lr: 3e-3, epochs: 1, minibatches: 1, targetKl: null, entropyCoef: 0, advantageNorm: false },
    });
    const slotOf = (a: number) => a;
    const ro = await rollout({
      decoder: s.decoder,
      tokenizer: s.tokenizer,
      config: s.config,
      graph: compileGraph(s.config.graph),
      makeEnv: () => createEnv('arithmetic', { difficulty: 1, horizon: 1 }),
      seeds: [4],
      rng: s.state.rng,
      adapters: s.state.policy,
      slotOf,
    });
    const actions = ro.episodes[0].actions;
    const opts = { level: 'token' as const, adapters: s.state.policy, slotOf, headOf: () => 0, padId: 0, maxTokens: 512, needRef: false };
    const before = await scoreActions(gpu, s.decoder, s.state.critic, actions, opts);
    const targets = new Map<ActionRecord, ActionTargets>(
      actions.map((a, i) => [
        a,
        {
          reward: 0,
          advantages: a.actionIds.map(() => (i === 0 ? 1 : -1)),
          returns: a.actionIds.map(() => 0),
          trace: [],
        },
      ]),
    );
    // the same map of old log-probs is used by the update: one step, both agents training
    const upd = await ppoUpdate(gpu, s.decoder, s.state, actions, before, targets, {
      trainPolicy: true,
      trainAgents: [0, 1],
      slotOf,
      padId: 0,
      rng: s.state.rng,
      maxTokens: 512,
    });
    expect(upd.policySteps).toBe(1);
    gpu.release(before.criticInput);
    const after = await scoreActions(gpu, s.decoder, s.state.critic, actions, opts);
    gpu.release(after.criticInput);
    const sum = (xs: number[]) => xs.reduce((x, y) => x + y, 0);
    const d0 = sum(after.scores.get(actions[0])!.oldLogp) - sum(before.scores.get(actions[0])!.oldLogp);
    const d1 = sum(after.scores.get(actions[1])!.oldLogp) - sum(before.scores.get(actions[1])!.oldLogp);
    console.log(`log-prob change: positive-advantage action ${d0.toFixed(4)}, negative-advantage action ${d1.toFixed(4)}`);
    expect(d0).toBeGreaterThan(0);
    expect(d1).toBeLessThan(0);
  });

  it('a minibatch over the target KL skips its policy step only: the policy stays, the critic steps on', async () => {
    // Legacy MARFT marft/algorithms/appo_trainer.py / tppo_trainer.py ppo_update: the critic steps first, then
    // `if total_approx_kl > threshold: return` before the policy optimisers step; train() goes on with the
    // next minibatch and epoch. Here every minibatch passes the target, so the policy never moves, and the
    // critic steps in both epochs (an update that stopped at the first skip would have stepped it once).
    const gpu = await testGpu();
    const s = tinySetup(gpu, {
      level: 'token',
      rollout: { episodes: 1, horizon: 1 },
      ppo: { lr: 3e-3, epochs: 2, minibatches: 1, targetKl: 1e-3, entropyCoef: 0, advantageNorm: false },
    });
    const slotOf = (a: number) => a;
    const ro = await rollout({
      decoder: s.decoder,
      tokenizer: s.tokenizer,
      config: s.config,
      graph: compileGraph(s.config.graph),
      makeEnv: () => createEnv('arithmetic', { difficulty: 1, horizon: 1 }),
      seeds: [4],
      rng: s.state.rng,
      adapters: s.state.policy,
      slotOf,
    });
    const actions = ro.episodes[0].actions;
    const score = await scoreActions(gpu, s.decoder, s.state.critic, actions, {
      level: 'token',
      adapters: s.state.policy,
      slotOf,
      headOf: () => 0,
      padId: 0,
      maxTokens: 512,
      needRef: false,
    });
    // behaviour log-probs 0.5 above the current ones: ratio e^-0.5 on every token, approx KL (r - 1) - log r = 0.1065 > 1e-3
    for (const a of actions) {
      const sc = score.scores.get(a)!;
      sc.oldLogp = sc.oldLogp.map((x) => x + 0.5);
    }
    const targets = new Map<ActionRecord, ActionTargets>(
      actions.map((a) => [a, { reward: 0, advantages: a.actionIds.map(() => 1), returns: a.actionIds.map(() => 1), trace: [] }]),
    );
    const read = (o: typeof s.state.policyOptim) => Promise.all(o.groups.map((g) => gpu.readF32(g.params)));
    const [policyBefore, criticBefore] = [await read(s.state.policyOptim), await read(s.state.criticOptim)];
    const upd = await ppoUpdate(gpu, s.decoder, s.state, actions, score, targets, {
      trainPolicy: true,
      trainAgents: [0, 1],
      slotOf,
      padId: 0,
      rng: s.state.rng,
      maxTokens: 512,
    });
    gpu.release(score.criticInput);
    expect(upd.policySteps).toBe(0);
    expect(upd.criticSteps).toBe(2);
    expect(upd.skipped).toEqual([
      expect.stringMatching(/^epoch 0: policy step skipped \(approx KL 1\.0\de-1 > target 0\.001\)$/),
      expect.stringMatching(/^epoch 1: policy step skipped/),
    ]);
    expect(upd.approxKl).toBeCloseTo(Math.exp(-0.5) - 1 + 0.5, 4);
    const [policyAfter, criticAfter] = [await read(s.state.policyOptim), await read(s.state.criticOptim)];
    policyAfter.forEach((p, i) => expect(Array.from(p)).toEqual(Array.from(policyBefore[i])));
    expect(criticAfter.some((p, i) => p.some((x, k) => x !== criticBefore[i][k]))).toBe(true);
  });

  for (const [level, norm] of [
    ['token', 'sum'],
    ['action', 'sum'],
    ['action', 'word'],
    ['action', 'token'],
  ] as const) {
    it(`the GPU loss steps the policy as the float64 CPU loss did (${level} level${level === 'action' ? `, norm ${norm}` : ''}, 2 minibatches of 4 micro-batches)`, async () => {
      const gpu = await testGpu();
      // a large lr and a small clip, so the second minibatch's ratios leave the clip range on both sides
      const over = {
        level,
        ppo: {
          lr: 3e-2,
          epochs: 2,
          minibatches: 1,
          targetKl: null,
          clip: 0.02,
          entropyCoef: 0.05,
          klCoef: 0.2,
          klIn: 'loss',
          klEstimator: level === 'token' ? 'k3' : 'k1',
          logProbNorm: norm,
        },
      };
      const [gpuPath, cpuPath] = [tinySetup(gpu, over), tinySetup(gpu, over)];
      const actions = twoEpisodes();
      actions.forEach((a, i) => {
        a.text = ['one', 'two words', 'three short words', ''][i];
      });
      const slotOf = (a: number) => a;
      const score = await scoreActions(gpu, gpuPath.decoder, gpuPath.state.critic, actions, {
        level,
        adapters: gpuPath.state.policy,
        slotOf,
        headOf: () => 0,
        padId: 0,
        maxTokens: 1,
        needRef: true,
      });
      const targets = new Map<ActionRecord, ActionTargets>(
        actions.map((a, i) => [
          a,
          {
            reward: 0,
            advantages: level === 'action' ? [[1, -0.5, 0.8, -1.2][i]] : a.actionIds.map((_, k) => ((i + k) % 3) - 1 + 0.25 * i),
            returns: level === 'action' ? [0] : a.actionIds.map(() => 0),
            trace: [],
          },
        ]),
      );
      const upd = await ppoUpdate(gpu, gpuPath.decoder, gpuPath.state, actions, score, targets, {
        trainPolicy: true,
        trainAgents: [0, 1],
        slotOf,
        padId: 0,
        rng: gpuPath.state.rng,
        maxTokens: 1,
      });
      gpu.release(score.criticInput);
      const ref = await cpuLossUpdate(gpu, cpuPath, actions, score, targets, 1);
      expect(upd.policySteps).toBe(2);
      // the clip was active (else the test would not reach the clipped branch)
      expect(upd.clipFraction).toBeGreaterThan(0);
      // metrics: float32 sums on the GPU against float64 on the CPU
      expectClose(
        'metrics (loss, entropy, approx KL, KL to ref, clip fraction)',
        [upd.policyLoss, upd.entropy, upd.approxKl, upd.klToRef, upd.clipFraction],
        ref.metrics,
        { atol: 1e-5, rtol: 1e-4 },
      );
      // parameters: the same two AdamW steps from gradients that differ by float32 rounding of the loss
      for (const [i, g] of gpuPath.state.policyOptim.groups.entries()) {
        expectClose(g.params.label, await gpu.readF32(g.params), await gpu.readF32(cpuPath.state.policyOptim.groups[i].params), {
          atol: 1e-5,
          rtol: 1e-4,
        });
      }
    });
  }
});

/**
 * The policy half of ppoUpdate as it was before the loss moved to the GPU (a test-only reference): epochs of
 * one minibatch each, every micro-batch's log-probs and entropies read back, the loss and its gradients in
 * float64 (losses.ts), uploaded into the head's backward; the same clipped AdamW step. Returns the metrics
 * ppoUpdate reports (loss, entropy, approx KL, KL to ref, clip fraction), averaged over the minibatches.
 */
async function cpuLossUpdate(
  gpu: Gpu,
  s: ReturnType<typeof tinySetup>,
  actions: ActionRecord[],
  score: ScoreResult,
  targets: Map<ActionRecord, ActionTargets>,
  maxTokens: number,
): Promise<{ metrics: number[] }> {
  const { state, decoder: dec } = s;
  const cfg = state.config;
  const ppo = cfg.ppo;
  const slotOf = (a: number) => a;
  const sum = [0, 0, 0, 0, 0];
  for (let epoch = 0; epoch < ppo.epochs; epoch++) {
    const { advOf, Z } = minibatchAdvantages(actions, targets, cfg);
    for (const chunk of chunkActions(actions, maxTokens)) {
      const batch = buildBatch(chunk, slotOf, 0);
      const N = batch.B * batch.T;
      const fw = dec.forward(
        { B: batch.B, T: batch.T, ids: batch.ids, mask: batch.mask, adapters: state.policy, slots: batch.slots },
        { save: true },
      );
      const targetsT = gpu.upload(batch.targets, [N], 'i32', 'ref.targets');
      const head = tokenLogprobs(gpu, fw.logits!, targetsT, 'ref');
      const [lp, en] = await gpu.readMany([head.logp, head.entropy]);
      const tok = { logp: [] as number[], old: [] as number[], ent: [] as number[], ref: [] as number[], adv: [] as number[] };
      const spans: Array<{ agent: number; start: number; end: number }> = [];
      chunk.forEach((a, i) => {
        const r = batch.rows[i];
        const sc = score.scores.get(a)!;
        const start = tok.logp.length;
        tok.logp.push(...lp.slice(r.start, r.start + r.count));
        tok.ent.push(...en.slice(r.start, r.start + r.count));
        tok.old.push(...sc.oldLogp);
        tok.ref.push(...sc.refLogp);
        tok.adv.push(...advOf.get(a)!);
        spans.push({ agent: a.agent, start, end: tok.logp.length });
      });
      const common = { clip: ppo.clip, entropyCoef: ppo.entropyCoef, klCoef: ppo.klCoef, klEstimator: ppo.klEstimator, normalizer: Z };
      const x =
        cfg.level === 'action'
          ? actionLevelPolicyLoss({
              ...common,
              tokenLogp: tok.logp,
              oldTokenLogp: tok.old,
              spans,
              advantages: tok.adv,
              norm: ppo.logProbNorm,
              wordCounts: chunk.map((a) => Math.max(1, countWords(a.text))),
              tokenEntropy: tok.ent,
              refTokenLogp: tok.ref,
            })
          : ppoPolicyLoss({ ...common, logp: tok.logp, oldLogp: tok.old, advantages: tok.adv, entropy: tok.ent, refLogp: tok.ref });
      const [dLogp, dEnt] = 'dTokenLogp' in x ? [x.dTokenLogp, x.dTokenEntropy] : [x.dLogp, x.dEntropy];
      const w = (cfg.level === 'action' ? chunk.length : tok.logp.length) / Z; // the chunk means of approx KL and clip fraction, weighted
      [x.loss, x.entropy, w * x.approxKl, x.kl, w * x.clipFraction].forEach((v, i) => {
        sum[i] += v;
      });
      const dl = new Float32Array(N);
      const de = new Float32Array(N);
      chunk.forEach((_, i) => {
        const row = batch.rows[i];
        for (let k = 0; k < row.count; k++) {
          dl[row.start + k] = dLogp[spans[i].start + k];
          de[row.start + k] = dEnt[spans[i].start + k];
        }
      });
      tokenLogprobsBackward(gpu, head, fw.logits!, dl, de);
      dec.backward(fw, fw.logits, null);
      releaseTokenLogprobs(gpu, head);
      gpu.release(targetsT);
      dec.release(fw);
    }
    optimizerStep(gpu, state.policyOptim, { lr: ppo.lr, eps: ppo.adamEps, weightDecay: ppo.weightDecay, maxNorm: ppo.maxGradNorm }, [0, 1]);
    clearGrads(gpu, state.policyOptim);
  }
  return { metrics: sum.map((v) => v / ppo.epochs) };
}
