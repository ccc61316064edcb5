// Test helpers for src/model: a tiny random Llama/Qwen2-shaped model built in memory.

import { parseModelConfig, expectedWeights, type ModelConfig } from './config.ts';
import type { TensorView } from './safetensors.ts';
import { Rng } from '../common/rng.ts';
import { randn } from '../../kernels/testing.ts';
import type { Gpu } from '../gpu/gpu.ts';
import type { LoraSet } from './lora-set.ts';

export function tinyConfig(over: Record<string, unknown> = {}): ModelConfig {
  return parseModelConfig({
    model_type: 'llama',
    architectures: ['LlamaForCausalLM'],
    vocab_size: 32,
    hidden_size: 16,
    intermediate_size: 24,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    rms_norm_eps: 1e-6,
    rope_theta: 10000,
    max_position_embeddings: 64,
    tie_word_embeddings: false,
    ...over,
  });
}

/** Random f32 weights for every tensor the config expects (norm weights near 1). */
export function tinyWeights(config: ModelConfig, seed: number, scale = 0.5): Map<string, TensorView> {
  const rng = new Rng(seed);
  const out = new Map<string, TensorView>();
  for (const { name, shape } of expectedWeights(config)) {
    const n = shape.reduce((a, b) => a * b, 1);
    const v = Float32Array.from({ length: n }, () => (name.includes('norm') ? 1 + 0.2 * rng.uniform(-1, 1) : scale * rng.uniform(-1, 1)));
    out.set(name, { dtype: 'F32', shape, data: new Uint8Array(v.buffer) });
  }
  return out;
}

/**
 * Gives every adapter's B random values (std 0.5; B starts at zero, so the adapters would change nothing):
 * `seed` names the draw of each B, from its shape and its place among them.
 */
export function randomizeLoraB(gpu: Gpu, lora: LoraSet, seed: (shape: readonly number[], i: number) => number): void {
  let i = 0;
  for (const layer of lora.layers)
    for (const p of Object.values(layer))
      gpu.write(
        p.B,
        Float32Array.from(
          randn(
            p.B.shape.reduce((a, b) => a * b, 1),
            seed(p.B.shape, i++),
            0.5,
          ),
        ),
      );
}
