// The direction of a PPO step, end to end on the GPU: after one update in which one action has a positive
// advantage and another a negative one, the first action's log-probability (under the new adapters)
// went up and the second's went down — the sign chain from the loss through the log-prob kernel, the
// decoder's backward and AdamW. And the approx-KL early stop as the legacy MARFT trainers do it: a minibatch
// over the target skips its policy step only, the critic and the later minibatches train on.

import { describe, expect, it } from 'vitest';
import { testGpu } from '../../kernels/testing.ts';
import { compileGraph } from '../config/graph.ts';
import { createEnv } from '../envs/registry.ts';
import { rollout } from './rollout.ts';
import { scoreActions } from './score.ts';
import type { ActionTargets } from './advantage-targets.ts';
import { ppoUpdate } from './update.ts';
import { tinySetup } from './testing.ts';
import type { ActionRecord } from './rollout.ts';

describe('ppo update', () => {
  it('raises the log-prob of an action with positive advantage and lowers one with negative advantage', async () => {
    const gpu = await testGpu();
    const s = tinySetup(gpu, { level: 'token', rollout: { episodes: 1, horizon: 1 }, ppo: { lr: 3e-3, epochs: 1, minibatches: 1, targetKl: null, entropyCoef: 0, advantageNorm: false } });
    const slotOf = (a: number) => a;
    const ro = await rollout({
      decoder: s.decoder, tokenizer: s.tokenizer, config: s.config, graph: compileGraph(s.config.graph),
      makeEnv: () => createEnv('arithmetic', { difficulty: 1, horizon: 1 }), seeds: [4], rng: s.state.rng, adapters: s.state.policy, slotOf,
    });
    const actions = ro.episodes[0].actions;
    const opts = { level: 'token' as const, adapters: s.state.policy, slotOf, headOf: () => 0, padId: 0, maxTokens: 512, needRef: false };
    const before = await scoreActions(gpu, s.decoder, s.state.critic, actions, opts);
    const targets = new Map<ActionRecord, ActionTargets>(actions.map((a, i) => [a, {
      reward: 0, advantages: a.actionIds.map(() => (i === 0 ? 1 : -1)), returns: a.actionIds.map(() => 0), trace: [],
    }]));
    // the same map of old log-probs is used by the update: one step, both agents training
    const upd = await ppoUpdate(gpu, s.decoder, s.state, actions, before, targets, {
      trainPolicy: true, trainAgents: [0, 1], slotOf, padId: 0, rng: s.state.rng, maxTokens: 512,
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
    const s = tinySetup(gpu, { level: 'token', rollout: { episodes: 1, horizon: 1 }, ppo: { lr: 3e-3, epochs: 2, minibatches: 1, targetKl: 1e-3, entropyCoef: 0, advantageNorm: false } });
    const slotOf = (a: number) => a;
    const ro = await rollout({
      decoder: s.decoder, tokenizer: s.tokenizer, config: s.config, graph: compileGraph(s.config.graph),
      makeEnv: () => createEnv('arithmetic', { difficulty: 1, horizon: 1 }), seeds: [4], rng: s.state.rng, adapters: s.state.policy, slotOf,
    });
    const actions = ro.episodes[0].actions;
    const score = await scoreActions(gpu, s.decoder, s.state.critic, actions, { level: 'token', adapters: s.state.policy, slotOf, headOf: () => 0, padId: 0, maxTokens: 512, needRef: false });
    // behaviour log-probs 0.5 above the current ones: ratio e^-0.5 on every token, approx KL (r - 1) - log r = 0.1065 > 1e-3
    for (const a of actions) { const sc = score.scores.get(a)!; sc.oldLogp = sc.oldLogp.map((x) => x + 0.5); }
    const targets = new Map<ActionRecord, ActionTargets>(actions.map((a) => [a, { reward: 0, advantages: a.actionIds.map(() => 1), returns: a.actionIds.map(() => 1), trace: [] }]));
    const read = (o: typeof s.state.policyOptim) => Promise.all(o.groups.map((g) => gpu.readF32(g.params)));
    const [policyBefore, criticBefore] = [await read(s.state.policyOptim), await read(s.state.criticOptim)];
    const upd = await ppoUpdate(gpu, s.decoder, s.state, actions, score, targets, { trainPolicy: true, trainAgents: [0, 1], slotOf, padId: 0, rng: s.state.rng, maxTokens: 512 });
    gpu.release(score.criticInput);
    expect(upd.policySteps).toBe(0);
    expect(upd.criticSteps).toBe(2);
    expect(upd.skipped).toEqual([expect.stringMatching(/^epoch 0: policy step skipped \(approx KL 1\.0\de-1 > target 0\.001\)$/), expect.stringMatching(/^epoch 1: policy step skipped/)]);
    expect(upd.approxKl).toBeCloseTo(Math.exp(-0.5) - 1 + 0.5, 4);
    const [policyAfter, criticAfter] = [await read(s.state.policyOptim), await read(s.state.criticOptim)];
    policyAfter.forEach((p, i) => expect(Array.from(p)).toEqual(Array.from(policyBefore[i])));
    expect(criticAfter.some((p, i) => p.some((x, k) => x !== criticBefore[i][k]))).toBe(true);
  });
});
