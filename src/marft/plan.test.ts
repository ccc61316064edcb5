// The run plan: its breakdown on a small model worked out by hand (every tensor below 1 MiB, so each is
// rounded up to the pool's 256-byte bucket), the limits and the budget it checks, the advice re-planned with
// each change, and on the GPU (SwiftShader here) the plan against the buffer pool's measured peaks.

import { describe, expect, it } from 'vitest';
import { testGpu } from '../../kernels/testing.ts';
import { parseModelConfig } from '../model/config.ts';
import { attentionBackwardScratch } from '../model/memory.ts';
import { tinyTokenizer } from '../model/file-fixtures.ts';
import { loadTokenizer } from '../model/tokenizer.ts';
import { parseRunConfig } from '../config/run-config.ts';
import { tinyRunConfig } from '../config/testing.ts';
import { Envs } from '../envs/registry.ts';
import { type PlanInput, formatPlan, planOnModel, planPrompts, planRun } from './plan.ts';
import { measurePlan } from './plan-measure.ts';
import { releaseTrainState } from './state.ts';
import { tinySetup } from './testing.ts';

// V 64, C 16, I 32, L 2, NH 2, NKV 1, HS 8, tied head
const MODEL_JSON = {
  model_type: 'llama',
  vocab_size: 64,
  hidden_size: 16,
  intermediate_size: 32,
  num_hidden_layers: 2,
  num_attention_heads: 2,
  num_key_value_heads: 1,
  head_dim: 8,
  max_position_embeddings: 256,
  tie_word_embeddings: true,
};
const MODEL = parseModelConfig(MODEL_JSON);
// one agent, one episode of one turn, 4 new tokens; LoRA r 2 on q and v; a critic head 16-8-1
const SOLO = parseRunConfig({
  graph: { agents: [{ role: 'solver', systemPrompt: 'Solve.', withAnswer: true, maxNewTokens: 4 }], edges: [] },
  env: { name: 'arithmetic' },
  rollout: { episodes: 1, horizon: 1 },
  lora: { r: 2, alpha: 4 },
  critic: { hidden: [8] },
  level: 'token',
});
const input = (over: Partial<PlanInput> = {}): PlanInput => ({
  config: SOLO,
  model: MODEL,
  dtype: 'bf16',
  prompts: { base: [10], perVisible: 0, perTurn: 0 },
  device: { maxBufferSize: 2 ** 28, maxStorageBufferBindingSize: 2 ** 27, cpu: true },
  ...over,
});
const bytesOf = (items: Array<{ name: string; bytes: number }>, name: string): number => items.find((x) => x.name === name)!.bytes;

describe('planRun by hand', () => {
  it('resident: weights, adapters, optimiser state and critic, each tensor in its pool bucket', () => {
    const p = planRun(input());
    // embedding 64 x 16 bf16 = 2048; a layer: q 512, k 256, v 256, o 512, gate/up/down 1024 each, two norms 256 each = 5120
    expect(bytesOf(p.resident, 'base weights (bf16)')).toBe(2048 + 2 * 5120 + 256);
    // per layer: q's A (2, 16) and B (16, 2), v's A (2, 16) and B (8, 2), each with its gradient, 256 bytes apiece
    expect(bytesOf(p.resident, 'policy LoRA')).toBe(2 * 8 * 256);
    expect(bytesOf(p.resident, 'policy optimiser')).toBe(2 * 8 * 256 + 256);
    // W0 (8, 16) 512, b0 256, W1 (1, 8) 256, b1 256; with gradients; moments alike plus the stats
    expect(bytesOf(p.resident, 'critic')).toBe(2 * 1280);
    expect(bytesOf(p.resident, 'critic optimiser')).toBe(2 * 1280 + 256);
    expect(p.residentBytes).toBe(12544 + 4096 + 4352 + 2560 + 2816);
    // a CPU adapter runs unfused: no copies; a GPU's fused path adds q/k/v (32, 16) and gate/up (64, 16) per layer
    expect(p.resident.some((x) => x.name === 'fused decode copies')).toBe(false);
    expect(
      bytesOf(planRun(input({ device: { maxBufferSize: 2 ** 28, maxStorageBufferBindingSize: 2 ** 27 } })).resident, 'fused decode copies'),
    ).toBe(2 * (1024 + 2048));
    // f32 weights: every matrix twice the bytes
    expect(bytesOf(planRun(input({ dtype: 'f32' })).resident, 'base weights (f32)')).toBe(
      4096 + 2 * (1024 + 512 + 512 + 1024 + 3 * 2048 + 512) + 256,
    );
  });

  it('the rollout: the KV cache of 1 x (10 + 4) positions, f32 keys and values per layer', () => {
    const p = planRun(input());
    expect(p.sequences).toEqual([{ role: 'solver', prompt: 10, generated: 4 }]);
    // (1, 14, 1, 8) f32 = 448 -> 512, four of them, and the (1, 14) mask
    expect(bytesOf(p.phases.rollout.items, 'KV cache')).toBe(4 * 512 + 256);
  });

  it("the update keeps every layer's activations, or with recompute only the residual stream and one layer", () => {
    // N = 14 tokens: rstd x2 256 each, h1/xMid/h2 (14, 16) 1024 each, q/att 1024 each, k/v 512 each, lse 256,
    // gate/up/act (14, 32) 1792 each, LoRA h (14, 2) x2 256 each = 12 800 a layer; the residual stream (3, 14, 16)
    const saved = planRun(input({ recompute: false }));
    expect(saved.settings.recompute).toBe(false);
    expect(bytesOf(saved.phases.update.items, 'saved activations')).toBe(3 * 1024 + 2 * 12800);
    const re = planRun(input({ recompute: true }));
    expect(bytesOf(re.phases.update.items, 'saved residual stream')).toBe(3 * 1024 + 12800 + 1024);
    expect(re.peakBytes).toBeLessThan(saved.peakBytes);
    // the peak is the resident state plus the largest phase, plus what the pool may keep of the others
    for (const p of [saved, re]) {
      expect(p.inUseBytes).toBe(p.residentBytes + Math.max(...Object.values(p.phases).map((x) => x.bytes)));
      expect(p.peakBytes).toBe(p.inUseBytes + p.poolCacheBytes);
      // a small model's pool keeps up to KEEP_BYTES: the other phases' buffers, and another set of the peak's when lengths vary
      expect(p.poolCacheBytes).toBe(p.phases.rollout.bytes + p.phases.score.bytes);
      expect(p.varyingPeakBytes).toBe(p.peakBytes + p.phases.update.bytes);
    }
  });

  it('later agents see their teammates: prompts grow by each visible output and each past turn', () => {
    const config = tinyRunConfig({ rollout: { episodes: 2, horizon: 2 } }); // planner (3 new) -> solver (4 new)
    const p = planRun(input({ config, prompts: { base: [20, 30], perVisible: 5, perTurn: 7 } }));
    // last turn: planner 20 + (3 + 4 + 7); solver 30 + (3 + 5) + (3 + 4 + 7)
    expect(p.sequences).toEqual([
      { role: 'planner', prompt: 34, generated: 3 },
      { role: 'solver', prompt: 52, generated: 4 },
    ]);
  });
});

describe('attentionBackwardScratch', () => {
  // HS 64, 4 heads over 2 kv heads; a desktop GPU's limits
  const model = parseModelConfig({ ...MODEL_JSON, hidden_size: 256, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 64 });
  const limits = {
    maxBufferSize: 2 ** 32,
    maxStorageBufferBindingSize: 2 ** 31,
    maxComputeWorkgroupStorageSize: 49152,
    maxComputeInvocationsPerWorkgroup: 1024,
    maxComputeWorkgroupSizeX: 1024,
    maxStorageBuffersPerShaderStage: 10,
  };
  it('follows the variant the kernel picks for the length', () => {
    const ld = (B: number, T: number) => B * 4 * T * 2 * 4;
    // up to 341 tokens: the fused single-split variant, ld alone
    expect(attentionBackwardScratch(model, 3, 300, { cpu: false, limits })).toEqual([ld(3, 300)]);
    // longer: 4 splits of dk and dv (4, B, T, 2, 64) and the (B, 4, T, T) dS scratch
    expect(attentionBackwardScratch(model, 3, 500, { cpu: false, limits })).toEqual([
      ld(3, 500),
      4 * 3 * 500 * 2 * 64 * 4,
      4 * 3 * 500 * 2 * 64 * 4,
      3 * 4 * 500 * 500 * 4,
    ]);
    // dS past 512 MiB is not kept; a CPU adapter's paths take no scratch
    expect(attentionBackwardScratch(model, 64, 1500, { cpu: false, limits })).toHaveLength(3);
    expect(attentionBackwardScratch(model, 3, 500, { cpu: true, limits })).toEqual([]);
    // a device whose workgroup memory cannot hold the blocked variant runs v1: ld alone
    expect(attentionBackwardScratch(model, 3, 500, { cpu: false, limits: { ...limits, maxComputeWorkgroupStorageSize: 16384 } })).toEqual([
      ld(3, 500),
    ]);
  });
});

describe('planRun limits, budget and advice', () => {
  it('a buffer over the binding limit is named', () => {
    // the trainer's forwards take at least 64 tokens; this one stacks policy and reference, 2 x 14 tokens
    const p = planRun(input({ device: { maxBufferSize: 2 ** 28, maxStorageBufferBindingSize: 1024, cpu: true } }));
    expect(p.largest.name).toBe('an MLP activation');
    expect(p.problems[0]).toMatch(
      /an MLP activation \(28 tokens x 32 f32\) needs 3\.5 KiB, over this GPU's largest buffer binding of 1\.0 KiB/,
    );
    expect(formatPlan(p).join('\n')).toMatch(/does not fit: an MLP activation/);
    // a wide vocabulary: the embedding is the largest; where one binding cannot hold it, its row chunks do
    const wide = parseModelConfig({ ...MODEL_JSON, vocab_size: 4096 });
    const whole = planRun(input({ model: wide }));
    expect([whole.problems, whole.largest.name]).toEqual([[], 'the embedding']);
    const small = planRun(input({ model: wide, device: { maxBufferSize: 2 ** 28, maxStorageBufferBindingSize: 96 * 1024, cpu: true } }));
    expect(small.problems).toEqual([]);
    expect(small.largest).toMatchObject({
      name: 'an embedding chunk',
      bytes: 64 * 1024,
      detail: '2048 of 4096 rows x 16 bf16, in 2 chunks',
    });
  });

  it('over the budget, each change is re-planned; those that fit first', () => {
    const config = parseRunConfig({
      ...SOLO,
      rollout: { episodes: 8, horizon: 1 },
      graph: { ...SOLO.graph, agents: [{ ...SOLO.graph.agents[0], maxNewTokens: 64 }] },
    });
    const free = planRun(input({ config, dtype: 'f32' }));
    const budget = free.peakBytes - 1;
    const p = planRun(input({ config, dtype: 'f32', budget }));
    expect(p.problems).toEqual([expect.stringMatching(/expected peak of .* is over the memory budget/)]);
    expect(p.advice.map((a) => a.change)).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^bf16 base weights/),
        expect.stringMatching(/^rollout\.episodes 8 -> 4$/),
        expect.stringMatching(/^maxNewTokens halved/),
      ]),
    );
    // each figure is the plan of the changed input
    const bf16 = p.advice.find((a) => a.change.startsWith('bf16'))!;
    expect(bf16.peakBytes).toBe(planRun(input({ config, dtype: 'bf16' })).peakBytes);
    const fewer = p.advice.find((a) => a.change.startsWith('rollout.episodes'))!;
    expect(fewer.peakBytes).toBe(
      planRun(input({ config: parseRunConfig({ ...config, rollout: { ...config.rollout, episodes: 4 } }), dtype: 'f32' })).peakBytes,
    );
    for (const a of p.advice) expect(a.fits).toBe(a.peakBytes <= budget);
    const firstMiss = p.advice.findIndex((a) => !a.fits);
    if (firstMiss >= 0) expect(p.advice.slice(firstMiss).every((a) => !a.fits)).toBe(true);
    expect(free.advice).toEqual([]);
  });
});

describe('planPrompts', () => {
  it('measures prompts with the tokenizer: a longer system prompt, a longer prompt', async () => {
    const tj = tinyTokenizer();
    const tokenizer = loadTokenizer(tj.tokenizerJson, tj.tokenizerConfig);
    const config = tinyRunConfig(); // planner -> solver, 2 turns
    const longer = tinyRunConfig({
      graph: {
        ...config.graph,
        agents: config.graph.agents.map((a, i) => (i === 1 ? { ...a, systemPrompt: `${a.systemPrompt}${' more'.repeat(20)}` } : a)),
      },
    });
    const a = await planPrompts(config, tokenizer, new Envs(null));
    const b = await planPrompts(longer, tokenizer, new Envs(null));
    expect(a.base[0]).toBe(b.base[0]);
    expect(b.base[1]).toBeGreaterThan(a.base[1]);
    expect(a.perVisible).toBeGreaterThan(0);
    expect(a.perTurn).toBeGreaterThan(0);
  });
});

describe('the plan on the GPU', () => {
  it("is within 15% of the buffer pool's measured peaks", async () => {
    const gpu = await testGpu();
    const before = gpu.pool.stats.bytesInUse;
    const { decoder, tokenizer, config, state, envs } = tinySetup(gpu, { rollout: { episodes: 2, horizon: 1 } });
    releaseTrainState(gpu, state);
    const plan = await planOnModel({ gpu, decoder, tokenizer, envs }, config, { maxTokens: 512 });
    expect(plan.settings.dtype).toBe(decoder.weights.dtype);
    expect(plan.settings.fused).toBe(decoder.fused);
    const m = await measurePlan({ gpu, decoder, tokenizer, envs }, config, { iterations: 2, maxTokens: 512 });
    const it2 = m.iterations[1];
    expect(m.resident - before).toBe(plan.residentBytes);
    expect(Math.abs(plan.inUseBytes / it2.inUse - 1), formatPlan(plan).join('\n')).toBeLessThan(0.15);
    expect(Math.abs(plan.peakBytes / it2.allocated - 1)).toBeLessThan(0.15);
  }, 120_000);
});
