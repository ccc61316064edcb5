// config.json parsing for Llama, Qwen2 and SmolLM configs (copied from their HF repos, trimmed), rejection of
// what we do not implement, RoPE inverse frequencies, and the expected-weights table and checker.

import { describe, expect, it } from 'vitest';
import { ModelFileError } from './errors.ts';
import { checkWeights, assertWeights, expectedWeights, linearDims, parseModelConfig, ropeInvFreq, type ModelConfig } from './config.ts';

export const SMOLLM2_135M = {
  architectures: ['LlamaForCausalLM'],
  attention_bias: false,
  attention_dropout: 0.0,
  bos_token_id: 0,
  eos_token_id: 0,
  hidden_act: 'silu',
  hidden_size: 576,
  initializer_range: 0.041666666666666664,
  intermediate_size: 1536,
  is_llama_config: true,
  max_position_embeddings: 8192,
  model_type: 'llama',
  num_attention_heads: 9,
  num_hidden_layers: 30,
  num_key_value_heads: 3,
  pretraining_tp: 1,
  rms_norm_eps: 1e-5,
  rope_interleaved: false,
  rope_scaling: null,
  rope_theta: 100000,
  tie_word_embeddings: true,
  torch_dtype: 'bfloat16',
  transformers_version: '4.40.1',
  use_cache: true,
  vocab_size: 49152,
};

export const QWEN25_05B = {
  architectures: ['Qwen2ForCausalLM'],
  attention_dropout: 0.0,
  bos_token_id: 151643,
  eos_token_id: 151645,
  hidden_act: 'silu',
  hidden_size: 896,
  initializer_range: 0.02,
  intermediate_size: 4864,
  max_position_embeddings: 32768,
  max_window_layers: 21,
  model_type: 'qwen2',
  num_attention_heads: 14,
  num_hidden_layers: 24,
  num_key_value_heads: 2,
  rms_norm_eps: 1e-6,
  rope_theta: 1000000.0,
  sliding_window: 32768,
  tie_word_embeddings: true,
  torch_dtype: 'bfloat16',
  transformers_version: '4.43.1',
  use_cache: true,
  use_sliding_window: false,
  vocab_size: 151936,
};

export const LLAMA32_1B = {
  architectures: ['LlamaForCausalLM'],
  attention_bias: false,
  attention_dropout: 0.0,
  bos_token_id: 128000,
  eos_token_id: [128001, 128008, 128009],
  head_dim: 64,
  hidden_act: 'silu',
  hidden_size: 2048,
  initializer_range: 0.02,
  intermediate_size: 8192,
  max_position_embeddings: 131072,
  mlp_bias: false,
  model_type: 'llama',
  num_attention_heads: 32,
  num_hidden_layers: 16,
  num_key_value_heads: 8,
  pretraining_tp: 1,
  rms_norm_eps: 1e-5,
  rope_scaling: { factor: 32.0, high_freq_factor: 4.0, low_freq_factor: 1.0, original_max_position_embeddings: 8192, rope_type: 'llama3' },
  rope_theta: 500000.0,
  tie_word_embeddings: true,
  torch_dtype: 'bfloat16',
  use_cache: true,
  vocab_size: 128256,
};

function expectConfigError(json: unknown, code: 'CONFIG_INVALID' | 'CONFIG_UNSUPPORTED', text: RegExp): void {
  try {
    parseModelConfig(json, 'm/config.json');
  } catch (e) {
    expect(e).toBeInstanceOf(ModelFileError);
    expect((e as ModelFileError).code).toBe(code);
    expect((e as Error).message).toMatch(text);
    expect((e as Error).message).toContain('m/config.json');
    return;
  }
  throw new Error('expected a ModelFileError');
}

describe('parseModelConfig', () => {
  it('reads SmolLM2 (model_type llama, tied, GQA 9/3)', () => {
    const c = parseModelConfig(JSON.stringify(SMOLLM2_135M));
    expect(c).toMatchObject({
      modelType: 'llama',
      architecture: 'LlamaForCausalLM',
      vocabSize: 49152,
      hiddenSize: 576,
      intermediateSize: 1536,
      numLayers: 30,
      numHeads: 9,
      numKvHeads: 3,
      headDim: 64,
      rmsNormEps: 1e-5,
      ropeTheta: 100000,
      ropeScaling: null,
      maxPositionEmbeddings: 8192,
      tieWordEmbeddings: true,
      qkvBias: false,
      oBias: false,
      mlpBias: false,
      bosTokenId: 0,
      eosTokenIds: [0],
      padTokenId: null,
      torchDtype: 'bfloat16',
    });
  });

  it('reads Qwen2.5 (q/k/v bias always, no o/mlp bias)', () => {
    const c = parseModelConfig(QWEN25_05B);
    expect(c).toMatchObject({
      modelType: 'qwen2',
      headDim: 64,
      numKvHeads: 2,
      qkvBias: true,
      oBias: false,
      mlpBias: false,
      ropeTheta: 1e6,
      eosTokenIds: [151645],
    });
  });

  it('reads Llama 3.2 (eos list, explicit head_dim, llama3 rope scaling)', () => {
    const c = parseModelConfig(LLAMA32_1B);
    expect(c.eosTokenIds).toEqual([128001, 128008, 128009]);
    expect(c.ropeScaling).toEqual({ type: 'llama3', factor: 32, lowFreqFactor: 1, highFreqFactor: 4, originalMaxPositionEmbeddings: 8192 });
  });

  it('applies transformers defaults', () => {
    const c = parseModelConfig({
      model_type: 'llama',
      vocab_size: 10,
      hidden_size: 8,
      intermediate_size: 16,
      num_hidden_layers: 1,
      num_attention_heads: 2,
    });
    expect(c).toMatchObject({
      numKvHeads: 2,
      headDim: 4,
      ropeTheta: 10000,
      rmsNormEps: 1e-6,
      maxPositionEmbeddings: 2048,
      tieWordEmbeddings: false,
      eosTokenIds: [],
      torchDtype: null,
    });
  });

  it('reads transformers v5 rope_parameters and dtype', () => {
    const c = parseModelConfig({
      ...SMOLLM2_135M,
      rope_theta: undefined,
      rope_scaling: undefined,
      torch_dtype: undefined,
      dtype: 'float32',
      rope_parameters: { rope_type: 'default', rope_theta: 123 },
    });
    expect(c.ropeTheta).toBe(123);
    expect(c.ropeScaling).toBeNull();
    expect(c.torchDtype).toBe('float32');
  });

  it('llama attention_bias / mlp_bias flags', () => {
    const c = parseModelConfig({ ...SMOLLM2_135M, attention_bias: true, mlp_bias: true });
    expect([c.qkvBias, c.oBias, c.mlpBias]).toEqual([true, true, true]);
  });

  it('rejects what it does not implement, naming the field', () => {
    expectConfigError({ ...SMOLLM2_135M, model_type: 'mistral' }, 'CONFIG_UNSUPPORTED', /"model_type" is "mistral"/);
    expectConfigError({ ...SMOLLM2_135M, architectures: ['LlamaForSequenceClassification'] }, 'CONFIG_UNSUPPORTED', /"architectures"/);
    expectConfigError(
      { ...SMOLLM2_135M, rope_scaling: { type: 'dynamic', factor: 2 } },
      'CONFIG_UNSUPPORTED',
      /"rope_scaling" type "dynamic"/,
    );
    expectConfigError({ ...SMOLLM2_135M, rope_scaling: { rope_type: 'yarn', factor: 4 } }, 'CONFIG_UNSUPPORTED', /"yarn"/);
    expectConfigError({ ...SMOLLM2_135M, hidden_act: 'gelu' }, 'CONFIG_UNSUPPORTED', /"hidden_act"/);
    expectConfigError({ ...QWEN25_05B, use_sliding_window: true }, 'CONFIG_UNSUPPORTED', /"use_sliding_window"/);
  });

  it('rejects malformed configs, naming the field', () => {
    expectConfigError('{not json', 'CONFIG_INVALID', /invalid JSON/);
    expectConfigError([1], 'CONFIG_INVALID', /not a JSON object/);
    expectConfigError({ ...SMOLLM2_135M, model_type: undefined }, 'CONFIG_INVALID', /"model_type" is missing/);
    expectConfigError({ ...SMOLLM2_135M, hidden_size: undefined }, 'CONFIG_INVALID', /"hidden_size" is missing/);
    expectConfigError({ ...SMOLLM2_135M, num_hidden_layers: 2.5 }, 'CONFIG_INVALID', /"num_hidden_layers" must be a positive integer/);
    expectConfigError({ ...SMOLLM2_135M, num_key_value_heads: 4 }, 'CONFIG_INVALID', /"num_key_value_heads" \(4\) must divide/);
    expectConfigError({ ...SMOLLM2_135M, hidden_size: 577 }, 'CONFIG_INVALID', /"hidden_size" \(577\)/);
    expectConfigError({ ...SMOLLM2_135M, tie_word_embeddings: 'yes' }, 'CONFIG_INVALID', /"tie_word_embeddings"/);
    expectConfigError({ ...SMOLLM2_135M, eos_token_id: ['x'] }, 'CONFIG_INVALID', /"eos_token_id"/);
    expectConfigError(
      { ...LLAMA32_1B, rope_scaling: { rope_type: 'llama3', factor: 8 } },
      'CONFIG_INVALID',
      /"rope_scaling.low_freq_factor"/,
    );
  });
});

describe('ropeInvFreq', () => {
  it('default: theta^(-2i/d) in float32', () => {
    const inv = ropeInvFreq(parseModelConfig(SMOLLM2_135M));
    expect(inv.length).toBe(32);
    for (let i = 0; i < 32; i++) expect(inv[i]).toBeCloseTo(Math.pow(100000, -(2 * i) / 64), 6);
    expect(inv[0]).toBe(1);
  });

  it('linear scaling divides by factor', () => {
    const base = ropeInvFreq(parseModelConfig(SMOLLM2_135M));
    const lin = ropeInvFreq(parseModelConfig({ ...SMOLLM2_135M, rope_scaling: { type: 'linear', factor: 4 } }));
    for (let i = 0; i < 32; i++) expect(lin[i]).toBe(Math.fround(base[i] / 4));
  });

  it('llama3 matches a float32 replay of transformers (numpy) bit for bit', () => {
    // numpy float32, op by op as torch runs them: p = f32(5e5) ** (arange(0,64,2)/64) correctly rounded;
    // inv = 1/p; wavelen = (1/inv)*f32(2pi); smooth = ((1/wavelen)*8192 - 1)/3; ((1-smooth)*v)/32 + smooth*v.
    // (numpy's own vectorised powf is off by an ulp in 9 of 32 entries; torch's Sleef powf can be too.)
    const expected = [
      0x3f800000, 0x3f29e1c6, 0x3ee177bc, 0x3e959ee3, 0x3e4693b0, 0x3e03c6a0, 0x3daee4ad, 0x3d681e67, 0x3d1a08c8, 0x3ccc6f49, 0x3c87a9c3,
      0x3c340d6d, 0x3beef74f, 0x3b9e9402, 0x3b527720, 0x3aa9279b, 0x39e13620, 0x38cb98f7, 0x37a3418d, 0x3758ac81, 0x370fc8f8, 0x36bed4f4,
      0x367d45c3, 0x3628126b, 0x35df10c4, 0x359406cb, 0x35447610, 0x35025f34, 0x34ad07a7, 0x3465a54d, 0x341864a7, 0x33ca41b0,
    ];
    const inv = ropeInvFreq(parseModelConfig(LLAMA32_1B));
    expect(Array.from(new Uint32Array(inv.buffer))).toEqual(expected);
    // entries 15..17 are the smoothed band; below it unchanged, above it divided by 32
    const plain = ropeInvFreq({ ...parseModelConfig(LLAMA32_1B), ropeScaling: null });
    expect(inv[3]).toBe(plain[3]);
    expect(inv[30]).toBe(Math.fround(plain[30] / 32));
  });
});

describe('expected weights', () => {
  const tiny: ModelConfig = parseModelConfig({
    model_type: 'qwen2',
    vocab_size: 11,
    hidden_size: 8,
    intermediate_size: 12,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
  });

  it('lists HF names and shapes (qwen2: q/k/v bias, untied lm_head)', () => {
    const w = expectedWeights(tiny);
    const m = new Map(w.map((x) => [x.name, x.shape]));
    expect(w.length).toBe(1 + 2 * 12 + 2);
    expect(m.get('model.embed_tokens.weight')).toEqual([11, 8]);
    expect(m.get('model.layers.1.self_attn.q_proj.weight')).toEqual([8, 8]);
    expect(m.get('model.layers.1.self_attn.k_proj.weight')).toEqual([4, 8]);
    expect(m.get('model.layers.1.self_attn.k_proj.bias')).toEqual([4]);
    expect(m.has('model.layers.1.self_attn.o_proj.bias')).toBe(false);
    expect(m.get('model.layers.0.mlp.down_proj.weight')).toEqual([8, 12]);
    expect(m.get('model.layers.0.post_attention_layernorm.weight')).toEqual([8]);
    expect(m.get('lm_head.weight')).toEqual([11, 8]);
    expect(linearDims(tiny, 'o_proj')).toEqual({ in: 8, out: 8 });
  });

  it('tied models need no lm_head', () => {
    const names = expectedWeights(parseModelConfig(SMOLLM2_135M)).map((x) => x.name);
    expect(names).not.toContain('lm_head.weight');
    expect(names.filter((n) => n.endsWith('.bias'))).toEqual([]);
  });

  it('reports missing and mis-shaped tensors naming the file', () => {
    const index = new Map(expectedWeights(tiny).map((w) => [w.name, { shape: w.shape, file: 'model.safetensors' }]));
    expect(checkWeights(tiny, index).ok).toBe(true);
    index.delete('model.norm.weight');
    index.set('model.layers.0.mlp.up_proj.weight', { shape: [12, 9], file: 'model-00002.safetensors' });
    index.set('model.layers.0.self_attn.rotary_emb.inv_freq', { shape: [2], file: 'model.safetensors' });
    const r = checkWeights(tiny, index);
    expect(r.ok).toBe(false);
    expect(r.missing).toEqual(['model.norm.weight']);
    expect(r.unused).toEqual(['model.layers.0.self_attn.rotary_emb.inv_freq']);
    expect(r.messages.join('\n')).toContain(
      'model-00002.safetensors: tensor "model.layers.0.mlp.up_proj.weight" has shape [12, 9], config.json implies [12, 8]',
    );
    expect(() => assertWeights(tiny, index, 'tiny')).toThrow(/1 missing and 1 mis-shaped/);
  });
});
