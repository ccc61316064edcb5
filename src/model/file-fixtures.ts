// Fixtures for the model-file tests, built in memory (no downloads): a tiny byte-level BPE tokenizer.json in the
// GPT-2/Qwen2 style with ChatML special tokens and a chat template, and a tiny Qwen2 folder (config.json,
// model.safetensors with seeded weights, tokenizer files). (testing.ts holds the decoder tests' helpers.)

import { Rng } from '../common/rng.ts';
import { expectedWeights, parseModelConfig, type ModelConfig } from './config.ts';
import { CHATML_TEMPLATE } from './chatml.ts';
import { writeSafetensors, type FloatDType, type TensorToWrite } from './safetensors.ts';

/** GPT-2's bytes_to_unicode: byte b -> the printable character byte-level BPE uses for it. */
export function byteToUnicode(): string[] {
  const bs: number[] = [];
  for (let b = 0x21; b <= 0x7e; b++) bs.push(b);
  for (let b = 0xa1; b <= 0xac; b++) bs.push(b);
  for (let b = 0xae; b <= 0xff; b++) bs.push(b);
  const out: string[] = new Array(256);
  for (const b of bs) out[b] = String.fromCharCode(b);
  let n = 0;
  for (let b = 0; b < 256; b++) if (out[b] === undefined) out[b] = String.fromCharCode(256 + n++);
  return out;
}

/**
 * A byte-level BPE tokenizer: ids 0..255 are the bytes, then merges building "hello" and "Ġworld", then the
 * special tokens <|endoftext|> (also the BOS the post-processor adds), <|im_start|>, <|im_end|>.
 */
export function tinyTokenizer(): {
  tokenizerJson: Record<string, unknown>;
  tokenizerConfig: Record<string, unknown>;
  ids: Record<string, number>;
} {
  const chars = byteToUnicode();
  const vocab: Record<string, number> = {};
  chars.forEach((c, b) => {
    vocab[c] = b;
  });
  const merges = [
    ['h', 'e'],
    ['l', 'l'],
    ['he', 'll'],
    ['hell', 'o'],
    ['Ġ', 'w'],
    ['o', 'r'],
    ['Ġw', 'or'],
    ['Ġwor', 'l'],
    ['Ġworl', 'd'],
  ];
  for (const [a, b] of merges) vocab[a + b] = Object.keys(vocab).length;
  const specials = ['<|endoftext|>', '<|im_start|>', '<|im_end|>'];
  const ids: Record<string, number> = { hello: vocab.hello, Ġworld: vocab['Ġworld'] };
  const added = specials.map((content, i) => {
    ids[content] = 256 + merges.length + i;
    return { id: ids[content], content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true };
  });
  const bos = ids['<|endoftext|>'];
  const tokenizerJson = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: null,
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    post_processor: {
      type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: '<|endoftext|>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
      pair: [
        { SpecialToken: { id: '<|endoftext|>', type_id: 0 } },
        { Sequence: { id: 'A', type_id: 0 } },
        { Sequence: { id: 'B', type_id: 1 } },
      ],
      special_tokens: { '<|endoftext|>': { id: '<|endoftext|>', ids: [bos], tokens: ['<|endoftext|>'] } },
    },
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab,
      merges: merges.map(([a, b]) => `${a} ${b}`),
    },
  };
  const tokenizerConfig = {
    add_prefix_space: false,
    bos_token: null,
    eos_token: { content: '<|im_end|>', lstrip: false, normalized: false, rstrip: false, single_word: false, __type: 'AddedToken' },
    pad_token: '<|endoftext|>',
    unk_token: null,
    chat_template: CHATML_TEMPLATE,
    clean_up_tokenization_spaces: false,
    model_max_length: 512,
    tokenizer_class: 'Qwen2Tokenizer',
  };
  return { tokenizerJson, tokenizerConfig, ids };
}

/** Deterministic values in [-1, 1). */
export function seededValues(n: number, seed: number): Float32Array {
  const rng = new Rng(seed);
  return Float32Array.from({ length: n }, () => rng.next() * 2 - 1);
}

export const TINY_QWEN2_CONFIG = {
  architectures: ['Qwen2ForCausalLM'],
  model_type: 'qwen2',
  vocab_size: 268,
  hidden_size: 16,
  intermediate_size: 24,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  rms_norm_eps: 1e-6,
  rope_theta: 10000,
  max_position_embeddings: 128,
  tie_word_embeddings: true,
  torch_dtype: 'bfloat16',
  bos_token_id: null,
  eos_token_id: 267,
  use_sliding_window: false,
  hidden_act: 'silu',
};

/** All weights a config needs, seeded, as writeSafetensors input. */
export function weightsToWrite(config: ModelConfig, dtype: FloatDType = 'BF16', seed = 1): TensorToWrite[] {
  return expectedWeights(config).map((w, i) => ({
    name: w.name,
    dtype,
    shape: w.shape,
    data: seededValues(
      w.shape.reduce((a, b) => a * b, 1),
      seed + i,
    ),
  }));
}

/** A whole tiny HF folder as path -> contents. */
export function tinyModelFolder(dtype: FloatDType = 'BF16'): Record<string, Uint8Array | string> {
  const config = parseModelConfig(TINY_QWEN2_CONFIG);
  const tok = tinyTokenizer();
  return {
    'config.json': JSON.stringify(TINY_QWEN2_CONFIG),
    'model.safetensors': writeSafetensors(weightsToWrite(config, dtype), { format: 'pt' }),
    'tokenizer.json': JSON.stringify(tok.tokenizerJson),
    'tokenizer_config.json': JSON.stringify(tok.tokenizerConfig),
  };
}
