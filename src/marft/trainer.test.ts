// Two MARFT iterations (rollout + scoring + advantages + update) on a tiny random model on the test
// device, for action-level PPO, token-level PPO and GRPO, plus the agent-by-agent schedule's per-agent
// optimiser state (frozen slots untouched, each agent's own step count).

import { describe, expect, it } from 'vitest';
import { expectClose, testGpu } from '../../kernels/testing.ts';
import { readSlotStats } from '../model/optimizer.ts';
import type { Gpu } from '../gpu/gpu.ts';
import { KEEP_BYTES, KEEP_FRACTION, KEEP_MAX_PARAMS, Trainer, decoderParams, poolHeadroom } from './trainer.ts';
import { tinySetup } from './testing.ts';
import { parseModelConfig } from '../model/config.ts';

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
        for (const k of ['policyLoss', 'valueLoss', 'entropy', 'approxKl', 'clipFraction', 'tokensPerSecond'] as const)
          expect(Number.isFinite(metrics[k]), k).toBe(true);
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

  it("bounds the logits rows of every forward, the update's too, by maxLogitRows (recompute off)", async () => {
    const gpu = await testGpu();
    const s = tinySetup(gpu, { level: 'token', rollout: { episodes: 2, horizon: 1 } });
    const trainer = new Trainer({
      gpu,
      envs: s.envs,
      decoder: s.decoder,
      tokenizer: s.tokenizer,
      state: s.state,
      maxTokens: 512,
      recompute: false,
    });
    // a vocabulary this small never reaches the 256 MiB bound: stand in a small one
    Object.defineProperty(trainer, 'maxLogitRows', { get: () => 3 });
    const forwards: Array<{ B: number; rows: number }> = [];
    const forward = s.decoder.forward.bind(s.decoder);
    s.decoder.forward = (inp, opts = {}) => {
      if (opts.logitRows) forwards.push({ B: inp.B, rows: opts.logitRows.length });
      return forward(inp, opts);
    };
    await trainer.iteration();
    expect(forwards.length).toBeGreaterThan(0);
    // an action longer than the bound is a batch of its own
    for (const f of forwards) expect(f.rows <= 3 || f.B === 1).toBe(true);
  });

  it('reuses the buffers an iteration used in the next (with their bind groups), holding no more than its in-use peak', async () => {
    const gpu = await testGpu();
    const { trainer } = tinySetup(gpu, { level: 'token', rollout: { episodes: 2, horizon: 1 } });
    const dev = gpu.device as GPUDevice & { createBuffer: GPUDevice['createBuffer'] };
    const create = dev.createBuffer.bind(dev);
    let made = 0;
    dev.createBuffer = (d) => {
      made++;
      return create(d);
    };
    try {
      const perIteration: number[] = [];
      for (let i = 0; i < 3; i++) {
        made = 0;
        await trainer.iteration();
        perIteration.push(made);
        expect(gpu.pool.stats.bytesAllocated).toBeLessThanOrEqual(gpu.pool.stats.peakInUse + KEEP_BYTES);
      }
      // the first iteration makes its buffers; the later ones take them back (sampled lengths may differ a little)
      expect(perIteration[2]).toBeLessThan(perIteration[0] / 4);
    } finally {
      dev.createBuffer = create;
    }
  });

  it("counts a decoder's parameters: the built-in model's pool keeps 1 GiB, SmolLM2-135M's a quarter of its in-use peak up to 1 GiB", () => {
    const smol = parseModelConfig(
      JSON.stringify({
        architectures: ['LlamaForCausalLM'],
        model_type: 'llama',
        vocab_size: 49152,
        hidden_size: 576,
        intermediate_size: 1536,
        num_hidden_layers: 30,
        num_attention_heads: 9,
        num_key_value_heads: 3,
        max_position_embeddings: 2048,
        rms_norm_eps: 1e-5,
        rope_theta: 10000,
        tie_word_embeddings: true,
      }),
    );
    expect(decoderParams(smol)).toBe(134515008); // SmolLM2-135M: 134.5M
    const tiny = parseModelConfig(
      JSON.stringify({
        architectures: ['LlamaForCausalLM'],
        model_type: 'llama',
        vocab_size: 512,
        hidden_size: 256,
        intermediate_size: 688,
        num_hidden_layers: 6,
        num_attention_heads: 4,
        num_key_value_heads: 2,
        head_dim: 64,
        max_position_embeddings: 512,
        rms_norm_eps: 1e-5,
        tie_word_embeddings: true,
      }),
    );
    expect(decoderParams(tiny)).toBe(512 * 256 + 6 * (256 * (2 * 256 + 2 * 128) + 3 * 256 * 688 + 2 * 256) + 256);
    expect(decoderParams(tiny)).toBeLessThanOrEqual(KEEP_MAX_PARAMS);
    expect(decoderParams(smol)).toBeGreaterThan(KEEP_MAX_PARAMS);
    const GiB = 2 ** 30;
    expect(poolHeadroom(tiny, 0)).toBe(KEEP_BYTES);
    expect(poolHeadroom(tiny, 8 * GiB)).toBe(KEEP_BYTES);
    expect(poolHeadroom(smol, 0)).toBe(0);
    expect(poolHeadroom(smol, 1.09 * GiB)).toBe(Math.floor(1.09 * GiB * KEEP_FRACTION));
    expect(poolHeadroom(smol, 5.6 * GiB)).toBe(KEEP_BYTES);
  });

  it('klIn "reward": the KL penalty reaches the token rewards once the adapters moved; the KL metric stays', async () => {
    const gpu = await testGpu();
    const { trainer } = tinySetup(gpu, {
      level: 'token',
      ppo: { klIn: 'reward', klCoef: 0.1, klEstimator: 'k1' },
      rollout: { episodes: 1, horizon: 1 },
    });
    const inner = (r: Awaited<ReturnType<typeof trainer.iteration>>) =>
      r.episodes
        .flatMap((e) => e.actions)
        .flatMap((a) =>
          r.targets
            .get(a)!
            .trace.slice(0, -1)
            .map((s) => s.reward),
        );
    // iteration 0: B = 0, so the policy is the reference and every KL is exactly 0: the inner tokens carry no reward
    const first = await trainer.iteration();
    expect(inner(first).every((r) => r === 0)).toBe(true);
    expect(first.metrics.klToRef).toBe(0);
    // iteration 1: the adapters moved; the inner tokens carry -0.1 * KL, the KL metric is still reported
    const second = await trainer.iteration();
    expect(inner(second).some((r) => r !== 0)).toBe(true);
    expect(Number.isFinite(second.metrics.klToRef)).toBe(true);
  });

  // Per-agent optimiser state, as legacy MARFT has it (marft/algorithms/appo_trainer.py: one AdamW per agent,
  // and with agent_iteration_interval > 0 only agent_to_train's optimiser steps and counts).
  it("agent-by-agent leaves the frozen agent untouched and gives the next agent a fresh optimiser's first step", async () => {
    const gpu = await testGpu();
    const { state, trainer, config } = tinySetup(gpu, { schedule: { mode: 'agent_by_agent', interval: 1, criticWarmup: 0 } });
    const p = state.policy.layers[1].q_proj!;
    const g = state.policyOptim.groups.find((x) => x.params === p.B)!;
    const slot = (a: Float32Array, s: number) => Array.from(a.subarray(s * (a.length / 2), (s + 1) * (a.length / 2)));
    const read = () => Promise.all([p.A, p.B, g.m, g.v].map((t) => gpu.readF32(t)));
    const steps = async () => (await readSlotStats(gpu, state.policyOptim)).map((x) => x.steps);
    const before = await read();
    const it0 = (await trainer.iteration()).metrics; // iteration 0: only the planner (slot 0) trains
    expect(it0.trained).toEqual(['planner']);
    const after0 = await read();
    for (const k of [0, 1, 2, 3]) expect(slot(after0[k], 1)).toEqual(slot(before[k], 1)); // solver: A, B, m, v bit for bit
    expect(slot(after0[1], 0)).not.toEqual(slot(before[1], 0)); // B moves first (A's gradient is B-weighted, 0 at init)
    expect(slot(after0[2], 0).some((x) => x !== 0)).toBe(true);
    expect(await steps()).toEqual([1, 0]); // one policy step (1 epoch, 1 minibatch), counted for the planner only
    const it1 = (await trainer.iteration()).metrics; // iteration 1: only the solver (slot 1) trains
    expect(it1.trained).toEqual(['solver']);
    const after1 = await read();
    for (const k of [0, 1, 2, 3]) expect(slot(after1[k], 0)).toEqual(slot(after0[k], 0)); // planner untouched now
    expect(await steps()).toEqual([1, 1]);
    // The solver's first step is Adam's first step (t = 1, not the planner's count): from its moments
    // m = (1 - b1) g and v = (1 - b2) g^2, dB = -lr (m / (1 - b1)) / (sqrt(v / (1 - b2)) + eps).
    const { lr, adamEps } = config.ppo;
    const [m, v, b0, b1] = [slot(after1[2], 1), slot(after1[3], 1), slot(after0[1], 1), slot(after1[1], 1)];
    expect(m.some((x) => x !== 0)).toBe(true);
    const want = m.map((mi, i) => b0[i] - (lr * (mi / (1 - 0.9))) / (Math.sqrt(v[i] / (1 - 0.999)) + adamEps));
    expectClose('solver B after its first step', b1, want, { atol: 2e-7, rtol: 1e-4 });
  });
});
