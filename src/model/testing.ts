// Test helpers for src/model: a tiny random Llama/Qwen2-shaped model built in memory.

import { parseModelConfig, expectedWeights, type ModelConfig } from './config.ts';
import type { TensorView } from './safetensors.ts';
import { Rng } from '../common/rng.ts';

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
