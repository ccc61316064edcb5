// Two MARFT iterations (rollout + scoring + advantages + update) on a tiny random model on the test
// device, for action-level PPO, token-level PPO and GRPO, plus the agent-by-agent schedule's frozen slots.

import { describe, expect, it } from 'vitest';
import { testGpu } from '../../kernels/testing.ts';
import type { Gpu } from '../gpu/gpu.ts';
import { tinySetup } from './testing.ts';

const sum = async (gpu: Gpu, t: Parameters<Gpu['readF32']>[0]) => (await gpu.readF32(t)).reduce((a, b) => a + Math.abs(b), 0);

describe('trainer', () => {
  const cases: Array<Record<string, unknown>> = [
    { level: 'action', rollout: { episodes: 2, horizon: 1 } }, // multi-turn control flow: rollout.test.ts
    { level: 'token', credit: { method: 'step_discount', discount: 0.9 }, rollout: { episodes: 2, horizon: 1 } },
    { algo: 'grpo', level: 'token', rollout: { episodes: 1, horizon: 1, groupSize: 2 } },
  ];
  for (const over of cases) {
    it(`runs two iterations: ${JSON.stringify(over)}`, async () => {
      const gpu = await testGpu();
      const { state, trainer } = tinySetup(gpu, over);
      const B0 = state.policy.layers[0].v_proj!.B;
      expect(await sum(gpu, B0)).toBe(0); // PEFT init: B = 0
      for (let i = 0; i < 2; i++) {
        const { metrics, episodes, targets } = await trainer.iteration();
        expect(metrics.iteration).toBe(i);
        expect(episodes.length).toBe(2);
        for (const e of episodes) {
          expect(e.actions.length).toBeGreaterThanOrEqual(2);
          expect(e.actions[0].role).toBe('planner');
          expect(e.actions[1].role).toBe('solver');
        }
        for (const k of ['policyLoss', 'valueLoss', 'entropy', 'approxKl', 'clipFraction', 'tokensPerSecond'] as const) expect(Number.isFinite(metrics[k]), k).toBe(true);
        expect(Object.keys(metrics.agents)).toEqual(['planner', 'solver']);
        expect(metrics.skipped).toEqual([]);
        // the targets the update used keep their GAE trace, step for step (what the inspector shows)
        for (const a of episodes.flatMap((e) => e.actions)) {
          const t = targets.get(a)!;
          expect(t.trace.map((s) => s.advantage)).toEqual(over.algo === 'grpo' ? [] : t.advantages);
        }
      }
      expect(state.iteration).toBe(2);
      expect(await sum(gpu, B0)).toBeGreaterThan(0); // the adapters moved
    });
  }

  it('klIn "reward": the KL penalty reaches the token rewards once the adapters moved; the KL metric stays', async () => {
    const gpu = await testGpu();
    const { trainer } = tinySetup(gpu, { level: 'token', ppo: { klIn: 'reward', klCoef: 0.1, klEstimator: 'k1' }, rollout: { episodes: 1, horizon: 1 } });
    const inner = (r: Awaited<ReturnType<typeof trainer.iteration>>) => r.episodes.flatMap((e) => e.actions).flatMap((a) => r.targets.get(a)!.trace.slice(0, -1).map((s) => s.reward));
    // iteration 0: B = 0, so the policy is the reference and every KL is exactly 0: the inner tokens carry no reward
    const first = await trainer.iteration();
    expect(inner(first).every((r) => r === 0)).toBe(true);
    expect(first.metrics.klToRef).toBe(0);
    // iteration 1: the adapters moved; the inner tokens carry -0.1 * KL, the KL metric is still reported
    const second = await trainer.iteration();
    expect(inner(second).some((r) => r !== 0)).toBe(true);
    expect(Number.isFinite(second.metrics.klToRef)).toBe(true);
  });

  it('agent-by-agent keeps the frozen agent\'s adapter and Adam moments exactly', async () => {
    const gpu = await testGpu();
    const { state, trainer } = tinySetup(gpu, { schedule: { mode: 'agent_by_agent', interval: 1, criticWarmup: 0 } });
    const p = state.policy.layers[1].q_proj!;
    const g = state.policyOptim.groups.find((x) => x.params === p.B)!;
    const slot = (a: Float32Array, s: number) => Array.from(a.subarray(s * (a.length / 2), (s + 1) * (a.length / 2)));
    const before = await Promise.all([p.A, p.B].map((t) => gpu.readF32(t)));
    const { metrics } = await trainer.iteration(); // iteration 0: only the planner (slot 0) trains
    expect(metrics.trained).toEqual(['planner']);
    const [A1, B1, m1] = await Promise.all([p.A, p.B, g.m].map((t) => gpu.readF32(t)));
    expect(slot(A1, 1)).toEqual(slot(before[0], 1));
    expect(slot(B1, 1)).toEqual(slot(before[1], 1));
    expect(slot(m1, 1).every((x) => x === 0)).toBe(true);
    expect(slot(B1, 0)).not.toEqual(slot(before[1], 0)); // B moves first (A's gradient is B-weighted, 0 at init)
    expect(slot(m1, 0).some((x) => x !== 0)).toBe(true);
  });
});
