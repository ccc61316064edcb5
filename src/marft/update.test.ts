// The direction of a PPO step, end to end on the GPU: after one update in which one action has a positive
// advantage and another a negative one, the first action's log-probability (under the new adapters)
// went up and the second's went down — the sign chain from the loss through the log-prob kernel, the
// decoder's backward and AdamW.

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
});
