// Exact continuation: two iterations in a row equal one iteration, a checkpoint save and load into a
// fresh state, and one more iteration (metrics, adapters and critic bit for bit). Also evaluation of the
// base model and of the trained adapters on the held-out split.

import { describe, expect, it } from 'vitest';
import { testGpu } from '../../kernels/testing.ts';
import { loadCheckpoint, saveCheckpoint } from './checkpoint/checkpoint.ts';
import { evaluate } from './evaluate.ts';
import { releaseTrainState } from './state.ts';
import { memoryStore } from '../platform/storage/index.ts';
import { Trainer } from './trainer.ts';
import { tinySetup, untimed } from './testing.ts';

describe('resume', () => {
  it('continues exactly where it stopped', async () => {
    const gpu = await testGpu();
    const over = { level: 'token', rollout: { episodes: 2, horizon: 1 } };
    const a = tinySetup(gpu, over);
    const m0 = (await a.trainer.iteration()).metrics;
    const m1 = (await a.trainer.iteration()).metrics;
    const bA = await gpu.readF32(a.state.policy.layers[0].q_proj!.B);

    const b = tinySetup(gpu, over);
    expect(untimed((await b.trainer.iteration()).metrics)).toEqual(untimed(m0));
    const store = memoryStore();
    await saveCheckpoint(gpu, b.state, store, 'run', { baseModel: 'tiny' });
    releaseTrainState(gpu, b.state);
    const state = await loadCheckpoint(gpu, store, 'run', b.model);
    expect(state.iteration).toBe(1);
    const resumed = new Trainer({ gpu, envs: b.envs, decoder: b.decoder, tokenizer: b.tokenizer, state, maxTokens: 512 });
    const r1 = (await resumed.iteration()).metrics;
    expect(r1.iteration).toBe(1);
    expect(untimed(r1)).toEqual(untimed(m1));
    expect(Array.from(await gpu.readF32(state.policy.layers[0].q_proj!.B))).toEqual(Array.from(bA));
    expect(state.metrics.map((m) => m.iteration)).toEqual([0, 1]);

    const base = await evaluate(b.decoder, b.tokenizer, state.config, null, { envs: b.envs, episodes: 2, split: 'test' });
    const tuned = await evaluate(b.decoder, b.tokenizer, state.config, state, { envs: b.envs, episodes: 2, split: 'test' });
    for (const e of [base, tuned]) {
      expect(e.split).toBe('test');
      expect(e.accuracy).toBeGreaterThanOrEqual(0);
      expect(Object.keys(e.agents)).toEqual(['solver']);
      // every duo episode of one turn: one planner action and one solver action; coop-arith judges no plan
      expect(e.calls).toEqual(Object.fromEntries(state.config.graph.agents.map((g) => [g.role, 1])));
      expect(e.judged).toEqual({});
      expect(e.generatedTokens).toBeGreaterThan(0);
    }
    // coop-plan judges the planner's plan: its share of right verdicts (a random tiny model writes no plan the rule accepts)
    const onPlan = { ...state.config, env: { ...state.config.env, name: 'coop-plan', options: {} } };
    const judged = await evaluate(b.decoder, b.tokenizer, onPlan, state, { envs: b.envs, episodes: 2, split: 'test' });
    expect(judged.judged).toEqual({ planner: 0 });
    expect(judged.calls).toEqual({ planner: 1, solver: 1 });
  });
});
