// Random models for the benchmarks: the shapes measured (a tiny one, SmolLM2-135M's, SmolLM2-360M's and
// Qwen2.5-0.5B's), with weights drawn from a seeded uniform of std 0.02 (norm weights 1), made lazily tensor
// by tensor.

import { type ModelConfig, expectedWeights } from '../src/model/config.ts';
import { Rng } from '../src/common/rng.ts';
import type { TensorView } from '../src/model/safetensors.ts';
import type { LoadedTokenizer } from '../src/model/tokenizer.ts';

export const BENCH_MODELS: Record<string, Record<string, unknown>> = {
  tiny: { vocab_size: 512, hidden_size: 256, intermediate_size: 704, num_hidden_layers: 4, num_attention_heads: 4, num_key_value_heads: 2 },
  'smollm2-135m': {
    vocab_size: 49152,
    hidden_size: 576,
    intermediate_size: 1536,
    num_hidden_layers: 30,
    num_attention_heads: 9,
    num_key_value_heads: 3,
    tie_word_embeddings: true,
  },
  // the sizes the lab's Hub panel offers next: SmolLM2-360M (Llama, tied head) and Qwen2.5-0.5B (Qwen2: q/k/v
  // biases, GQA 7:1, a 151 936-token tied embedding of 272 MB in bf16)
  'smollm2-360m': {
    vocab_size: 49152,
    hidden_size: 960,
    intermediate_size: 2560,
    num_hidden_layers: 32,
    num_attention_heads: 15,
    num_key_value_heads: 5,
    tie_word_embeddings: true,
  },
  'qwen2.5-0.5b': {
    model_type: 'qwen2',
    architectures: ['Qwen2ForCausalLM'],
    vocab_size: 151936,
    hidden_size: 896,
    intermediate_size: 4864,
    num_hidden_layers: 24,
    num_attention_heads: 14,
    num_key_value_heads: 2,
    rope_theta: 1000000,
    rms_norm_eps: 1e-6,
    tie_word_embeddings: true,
  },
};

/** The config.json of a BENCH_MODELS shape, as a model's folder would hold it (`extra`: e.g. special token ids). */
export function benchModelConfigJson(name: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const dims = BENCH_MODELS[name];
  if (!dims) throw new Error(`no random model "${name}"; one of ${Object.keys(BENCH_MODELS).join(', ')}`);
  return { model_type: 'llama', architectures: ['LlamaForCausalLM'], max_position_embeddings: 4096, ...dims, ...extra };
}

export function randomWeights(config: ModelConfig, seed: number): (name: string) => TensorView {
  const rng = new Rng(seed);
  const cache = new Map<string, TensorView>();
  const specs = new Map(expectedWeights(config).map((w) => [w.name, w.shape]));
  return (name) => {
    const shape = specs.get(name);
    if (!shape) return undefined as unknown as TensorView;
    let v = cache.get(name);
    if (!v) {
      const n = shape.reduce((a, b) => a * b, 1);
      const std = name.includes('norm') ? 0 : 0.02;
      const f = Float32Array.from({ length: n }, () => (name.includes('norm') ? 1 : std * (rng.next() * 2 - 1) * 1.73));
      v = { dtype: 'F32', shape, data: new Uint8Array(f.buffer) };
      cache.set(name, v);
    }
    return v;
  };
}

/** Printable-character tokenizer for random models: no chat template, no end token. */
export function syntheticTokenizer(vocab: number): LoadedTokenizer {
  return {
    hasChatTemplate: false,
    eosIds: [],
    bosId: null,
    padId: 0,
    vocabSize: vocab,
    encode: (t: string) => Array.from(t, (c) => 1 + (c.charCodeAt(0) % (vocab - 1))),
    decode: (ids: readonly number[]) => String.fromCharCode(...ids.map((i) => 32 + (i % 94))),
    applyChatTemplate: () => {
      throw new Error('no chat template');
    },
    tokenToId: () => undefined,
    idToToken: () => undefined,
  };
}
