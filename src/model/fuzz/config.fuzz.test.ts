// Fuzzes the model folder's JSON files: config.json (parseModelConfig), tokenizer.json + tokenizer_config.json
// (loadTokenizer) and adapter_config.json + adapter_model.safetensors (parseAdapterConfig, readPeftAdapter),
// by structural mutations of valid files (fields replaced, deleted or added with hostile values) and
// byte-wise mutations of their text. Every case ends in a correct load (which must then be usable:
// expectedWeights of a config, encode/decode of a tokenizer) or a ModelFileError.

import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { applyByteOps, applyJsonEdits, byteOps, jsonEdits, measure } from '../../../scripts/fuzz.ts';
import { type ReliabilityRow, Tally, outcomeOf, recordReliability } from '../../../scripts/reliability.ts';
import { expectedWeights, parseModelConfig } from '../config.ts';
import { ModelFileError } from '../errors.ts';
import { TINY_QWEN2_CONFIG, seededValues, tinyTokenizer } from '../file-fixtures.ts';
import {
  ADAPTER_CONFIG_FILE,
  ADAPTER_WEIGHTS_FILE,
  type LoraLayer,
  parseAdapterConfig,
  readPeftAdapter,
  writePeftAdapter,
} from '../peft.ts';
import { parseSafetensors, writeSafetensors } from '../safetensors.ts';
import { tinyConfig } from '../testing.ts';
import { loadTokenizer } from '../tokenizer.ts';

const TEST = 'src/model/fuzz/config.fuzz.test.ts';
const rows: ReliabilityRow[] = [];
afterAll(() => recordReliability('model-json', rows));
const enc = new TextEncoder();
const dec = new TextDecoder();

const LLAMA = {
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
  eos_token_id: [1, 2],
  bos_token_id: 0,
  rope_scaling: { rope_type: 'llama3', factor: 8, low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 8192 },
};
const CONFIG_KEYS = fc.constantFrom(
  ...new Set([
    ...Object.keys(LLAMA),
    ...Object.keys(TINY_QWEN2_CONFIG),
    'head_dim',
    'rope_parameters',
    'hidden_act',
    'attention_bias',
    'mlp_bias',
    'rope_type',
    'factor',
  ]),
);

/** A parsed config must be usable: its weight list is computed fast (no size drives a long loop). */
function useConfig(text: unknown): void {
  const c = parseModelConfig(text);
  const m = measure(() => expectedWeights(c).length);
  if (m.error !== undefined) throw m.error as Error;
  expect(m.ms, 'expectedWeights time').toBeLessThan(200);
}

describe('config.json fuzz', () => {
  it('structural mutations of Llama and Qwen2 configs', () => {
    const t = new Tally();
    fc.assert(
      fc.property(fc.constantFrom(LLAMA, TINY_QWEN2_CONFIG), jsonEdits(CONFIG_KEYS), (base, edits) => {
        t.add(outcomeOf(() => useConfig(applyJsonEdits(base, edits)), [ModelFileError]));
      }),
      { numRuns: 3000, seed: 11 },
    );
    rows.push({
      area: 'config.json',
      fault:
        'structural mutations of Llama / Qwen2 configs (fields replaced, deleted or added with hostile values: 2^53, -1, 0.5, strings, lists, objects)',
      cases: t.cases,
      outcome: `${t.summary('parsed (and expectedWeights < 200 ms)')}`,
      verdict: 'pass',
      test: TEST,
    });
  });

  it('byte-wise mutations of the JSON text', () => {
    const t = new Tally();
    fc.assert(
      fc.property(fc.constantFrom(LLAMA, TINY_QWEN2_CONFIG), byteOps, (base, ops) => {
        const text = dec.decode(applyByteOps(enc.encode(JSON.stringify(base, null, 1)), ops));
        t.add(outcomeOf(() => useConfig(text), [ModelFileError]));
      }),
      { numRuns: 1500, seed: 12 },
    );
    rows.push({
      area: 'config.json',
      fault: 'byte-wise mutations of the JSON text',
      cases: t.cases,
      outcome: t.summary('parsed'),
      verdict: 'pass',
      test: TEST,
    });
  });

  it('absurd sizes are refused, not looped over', () => {
    const t = new Tally();
    for (const [k, v] of [
      ['num_hidden_layers', 2 ** 40],
      ['num_hidden_layers', 1e9],
      ['vocab_size', 2 ** 53 - 1],
      ['hidden_size', 2 ** 40],
      ['intermediate_size', 2 ** 52],
      ['num_attention_heads', 2 ** 33],
      ['head_dim', 2 ** 34],
    ] as const) {
      const m = measure(() => useConfig({ ...LLAMA, [k]: v }));
      expect(m.error, `${k} ${v}`).toBeInstanceOf(ModelFileError);
      expect(m.ms).toBeLessThan(200);
      t.add(`ModelFileError ${(m.error as ModelFileError).code}`);
    }
    rows.push({
      area: 'config.json',
      fault: 'absurd sizes (num_hidden_layers 2^40, vocab 2^53, dims 2^34..2^52)',
      cases: t.cases,
      outcome: `${t.summary()}; each < 200 ms`,
      verdict: 'pass',
      test: TEST,
    });
  });
});

describe('tokenizer.json fuzz', () => {
  const tok = tinyTokenizer();
  const TOK_KEYS = fc.constantFrom(
    'model',
    'type',
    'vocab',
    'merges',
    'added_tokens',
    'pre_tokenizer',
    'decoder',
    'post_processor',
    'normalizer',
    'content',
    'id',
    'special',
    'unk_token',
    'byte_fallback',
  );
  const CFG_KEYS = fc.constantFrom(
    'bos_token',
    'eos_token',
    'pad_token',
    'unk_token',
    'chat_template',
    'additional_special_tokens',
    'content',
  );

  /** A loaded tokenizer must work: encode, decode, render its chat template (or refuse with CHAT_TEMPLATE). */
  function useTokenizer(tj: unknown, tc: unknown): void {
    const t = loadTokenizer(tj as object | string, tc as object | string);
    const ids = t.encode('hello world 12+3');
    expect(Array.isArray(ids)).toBe(true);
    expect(typeof t.decode(ids)).toBe('string');
    expect(Number.isInteger(t.vocabSize)).toBe(true);
    if (t.hasChatTemplate) t.applyChatTemplate([{ role: 'user', content: 'hi' }], { addGenerationPrompt: true });
  }

  it('structural mutations of tokenizer.json and tokenizer_config.json', () => {
    const t = new Tally();
    fc.assert(
      fc.property(jsonEdits(TOK_KEYS), jsonEdits(CFG_KEYS), fc.boolean(), (e1, e2, both) => {
        const tj = applyJsonEdits(tok.tokenizerJson, e1);
        const tc = both ? applyJsonEdits(tok.tokenizerConfig, e2) : tok.tokenizerConfig;
        t.add(outcomeOf(() => useTokenizer(tj, tc), [ModelFileError]));
      }),
      { numRuns: 1500, seed: 21 },
    );
    rows.push({
      area: 'tokenizer.json',
      fault:
        'structural mutations of tokenizer.json (model, vocab, merges, added_tokens, pipeline stages) and tokenizer_config.json (special tokens, chat_template)',
      cases: t.cases,
      outcome: t.summary('loaded (encode, decode and chat template work)'),
      verdict: 'pass',
      test: TEST,
    });
  });

  it('byte-wise mutations of the JSON texts', () => {
    const t = new Tally();
    const tjText = enc.encode(JSON.stringify(tok.tokenizerJson));
    const tcText = enc.encode(JSON.stringify(tok.tokenizerConfig));
    fc.assert(
      fc.property(byteOps, fc.boolean(), (ops, which) => {
        const tj = which ? dec.decode(applyByteOps(tjText, ops)) : dec.decode(tjText);
        const tc = which ? dec.decode(tcText) : dec.decode(applyByteOps(tcText, ops));
        t.add(outcomeOf(() => useTokenizer(tj, tc), [ModelFileError]));
      }),
      { numRuns: 1000, seed: 22 },
    );
    rows.push({
      area: 'tokenizer.json',
      fault: 'byte-wise mutations of tokenizer.json or tokenizer_config.json text',
      cases: t.cases,
      outcome: t.summary('loaded'),
      verdict: 'pass',
      test: TEST,
    });
  });
});

describe('PEFT adapter fuzz', () => {
  const model = tinyConfig();
  const layers: LoraLayer[] = Array.from({ length: model.numLayers }, (_, l) => ({
    q_proj: { A: seededValues(2 * 16, l), B: seededValues(16 * 2, l + 10) },
    v_proj: { A: seededValues(2 * 16, l + 20), B: seededValues(8 * 2, l + 30) },
  }));
  const good = writePeftAdapter(
    {
      config: {
        r: 2,
        loraAlpha: 4,
        targetModules: ['q_proj', 'v_proj'],
        loraDropout: 0,
        useRslora: false,
        baseModelNameOrPath: 'tiny',
        layersToTransform: null,
      },
      layers,
    },
    model,
  );
  const goodCfg = JSON.parse(good[ADAPTER_CONFIG_FILE]);
  const ADAPTER_KEYS = fc.constantFrom(...Object.keys(goodCfg), 'use_dora', 'lora_bias', 'target_parameters', 'layers_to_transform');

  it('structural mutations of adapter_config.json', () => {
    const t = new Tally();
    fc.assert(
      fc.property(jsonEdits(ADAPTER_KEYS), (edits) => {
        const cfg = applyJsonEdits(goodCfg, edits);
        t.add(
          outcomeOf(() => {
            parseAdapterConfig(cfg);
            readPeftAdapter({ [ADAPTER_CONFIG_FILE]: JSON.stringify(cfg), [ADAPTER_WEIGHTS_FILE]: good[ADAPTER_WEIGHTS_FILE] }, model);
          }, [ModelFileError]),
        );
      }),
      { numRuns: 2000, seed: 31 },
    );
    rows.push({
      area: 'adapter_config.json',
      fault:
        'structural mutations (r, lora_alpha, target_modules, peft_type, layers_to_transform, DoRA/bias flags...) read with the matching weights',
      cases: t.cases,
      outcome: t.summary('loaded'),
      verdict: 'pass',
      test: TEST,
    });
  });

  it('mutated adapter_model.safetensors: tensor names, shapes and bytes', () => {
    const t = new Tally();
    const st = parseSafetensors(good[ADAPTER_WEIGHTS_FILE], 'a');
    const names = [...st.tensors.keys()];
    const nameEdit = fc.record({
      i: fc.nat(),
      to: fc.oneof(
        fc.constantFrom(
          'base_model.model.model.layers.4294967295.self_attn.q_proj.lora_A.weight',
          'base_model.model.model.layers.99999999.self_attn.q_proj.lora_A.weight',
          'layers.1.mlp.q_proj.lora_A.weight',
          'base_model.model.model.layers.0.self_attn.q_proj.lora_magnitude_vector',
          'model.layers.0.self_attn.v_proj.lora_B.default.weight',
          'base_model.model.model.layers.1.self_attn.k_proj.lora_A.weight',
          'base_model.model.model.layers.00.self_attn.q_proj.lora_A.weight',
        ),
        fc.string({ maxLength: 20 }),
        fc.nat({ max: 2 ** 32 }).map((n) => `base_model.model.model.layers.${n}.self_attn.q_proj.lora_B.weight`),
      ),
      shape: fc.option(fc.array(fc.integer({ min: 0, max: 40 }), { maxLength: 3 })),
    });
    fc.assert(
      fc.property(
        fc.array(nameEdit, { maxLength: 3 }),
        fc.option(byteOps, { freq: 3 }),
        fc.boolean(),
        fc.option(fc.constantFrom([1], [0, 1], [1e8], 3)),
        (edits, ops, withModel, ltt) => {
          const ts = names.map((n) => ({ name: n, shape: [...st.tensors.get(n)!.shape], data: st.tensors.get(n)!.data }));
          for (const e of edits) {
            const x = ts[e.i % ts.length];
            if (!ts.some((y) => y.name === e.to) && e.to !== '' && e.to !== '__metadata__') x.name = e.to;
            if (e.shape) x.shape = e.shape;
          }
          let bytes = writeSafetensors(
            ts.map((x) => ({
              name: x.name,
              dtype: 'F32' as const,
              shape: x.shape,
              data: new Float32Array(x.shape.reduce((a, b) => a * b, 1)),
            })),
          );
          if (ops) bytes = applyByteOps(bytes, ops);
          const cfg = ltt === null ? good[ADAPTER_CONFIG_FILE] : JSON.stringify({ ...goodCfg, layers_to_transform: ltt });
          const m = measure(() =>
            outcomeOf(
              () => readPeftAdapter({ [ADAPTER_CONFIG_FILE]: cfg, [ADAPTER_WEIGHTS_FILE]: bytes }, withModel ? model : undefined),
              [ModelFileError],
            ),
          );
          if (m.error !== undefined) throw m.error as Error;
          expect(m.ms, 'readPeftAdapter time').toBeLessThan(500);
          t.add(m.result!);
        },
      ),
      { numRuns: 1500, seed: 32 },
    );
    // a whole layer moved to a huge index (both A and B of every module, so every per-tensor check passes)
    for (const idx of [1e8, 2 ** 32 - 1, 2 ** 53]) {
      const ts = names.map((n) => ({
        name: n.replace('layers.1.', `layers.${idx}.`),
        dtype: 'F32' as const,
        shape: [...st.tensors.get(n)!.shape],
        data: new Float32Array(st.tensors.get(n)!.data.length / 4),
      }));
      for (const ltt of [null, [0, idx]]) {
        const cfg = ltt === null ? good[ADAPTER_CONFIG_FILE] : JSON.stringify({ ...goodCfg, layers_to_transform: ltt });
        const m = measure(() =>
          outcomeOf(() => readPeftAdapter({ [ADAPTER_CONFIG_FILE]: cfg, [ADAPTER_WEIGHTS_FILE]: writeSafetensors(ts) }), [ModelFileError]),
        );
        if (m.error !== undefined) throw m.error as Error;
        expect(m.result, `layer ${idx}`).toBe('ModelFileError PEFT_INVALID');
        expect(m.ms, `layer ${idx}`).toBeLessThan(500);
        expect(m.arrayBufferBytes).toBeLessThan(1 << 20);
        t.add(m.result!);
      }
    }
    rows.push({
      area: 'adapter_model.safetensors',
      fault:
        'renamed tensors (layer indices up to 2^32, wrong parent, DoRA keys, junk), wrong shapes, byte-wise mutations, layers_to_transform; with and without the base config',
      cases: t.cases,
      outcome: `${t.summary('loaded')}; each < 500 ms`,
      verdict: 'pass',
      test: TEST,
    });
  });
});
