// PEFT adapters: write -> read round trip, the exact key layout and adapter_config.json PEFT expects, the key
// spellings other tools write (".default.", no "base_model.model." prefix), rsLoRA, and refusals.

import { describe, expect, it } from 'vitest';
import { parseModelConfig } from './config.ts';
import { ModelFileError } from './errors.ts';
import { readPeftAdapter, writePeftAdapter, loraKey, type LoraLayer, type PeftAdapter } from './peft.ts';
import { parseSafetensors, writeSafetensors, type TensorToWrite } from './safetensors.ts';
import { seededValues, TINY_QWEN2_CONFIG } from './file-fixtures.ts';

const model = parseModelConfig(TINY_QWEN2_CONFIG); // C 16, I 24, NH 4, NKV 2, HS 4, L 2
const r = 4;

function makeAdapter(modules: Array<'q_proj' | 'v_proj' | 'down_proj' | 'o_proj'> = ['q_proj', 'v_proj', 'down_proj']): PeftAdapter {
  const dims = { q_proj: [16, 16], v_proj: [16, 8], o_proj: [16, 16], down_proj: [24, 16] } as const; // [in, out]
  const layers: LoraLayer[] = [0, 1].map((l) => {
    const layer: LoraLayer = {};
    modules.forEach((m, k) => {
      const [inF, outF] = dims[m];
      layer[m] = { A: seededValues(r * inF, 100 * l + 2 * k), B: seededValues(outF * r, 100 * l + 2 * k + 1) };
    });
    return layer;
  });
  return {
    config: {
      r,
      loraAlpha: 8,
      targetModules: modules,
      loraDropout: 0.05,
      useRslora: false,
      baseModelNameOrPath: 'marft/tiny',
      layersToTransform: null,
    },
    layers,
  };
}

const files = (cfg: string | object, st: Uint8Array) => ({ 'adapter_config.json': cfg, 'adapter_model.safetensors': st });

function expectPeftError(fn: () => unknown, code: 'PEFT_INVALID' | 'PEFT_UNSUPPORTED', text: RegExp): void {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ModelFileError);
    expect((e as ModelFileError).code, (e as Error).message).toBe(code);
    expect((e as Error).message).toMatch(text);
    return;
  }
  throw new Error(`expected ${code}`);
}

describe('PEFT adapters', () => {
  it('round-trips write -> read', () => {
    const a = makeAdapter();
    const out = writePeftAdapter(a, model);
    const back = readPeftAdapter(out, model);
    expect(back.config).toEqual({ ...a.config, targetModules: ['down_proj', 'q_proj', 'v_proj'] });
    expect(back.scale).toBe(2);
    expect(back.notes).toEqual([]);
    expect(back.layers.length).toBe(2);
    for (let l = 0; l < 2; l++) {
      for (const m of ['q_proj', 'v_proj', 'down_proj'] as const) {
        expect(back.layers[l][m]!.A).toEqual(a.layers[l][m]!.A);
        expect(back.layers[l][m]!.B).toEqual(a.layers[l][m]!.B);
      }
      expect(back.layers[l].k_proj).toBeUndefined();
    }
  });

  it('writes the key layout and config PEFT expects', () => {
    const out = writePeftAdapter(makeAdapter(), model);
    const st = parseSafetensors(out['adapter_model.safetensors'], 'adapter_model.safetensors');
    expect(st.metadata).toEqual({ format: 'pt' });
    expect([...st.tensors.keys()].sort()).toEqual([
      'base_model.model.model.layers.0.mlp.down_proj.lora_A.weight',
      'base_model.model.model.layers.0.mlp.down_proj.lora_B.weight',
      'base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight',
      'base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight',
      'base_model.model.model.layers.0.self_attn.v_proj.lora_A.weight',
      'base_model.model.model.layers.0.self_attn.v_proj.lora_B.weight',
      'base_model.model.model.layers.1.mlp.down_proj.lora_A.weight',
      'base_model.model.model.layers.1.mlp.down_proj.lora_B.weight',
      'base_model.model.model.layers.1.self_attn.q_proj.lora_A.weight',
      'base_model.model.model.layers.1.self_attn.q_proj.lora_B.weight',
      'base_model.model.model.layers.1.self_attn.v_proj.lora_A.weight',
      'base_model.model.model.layers.1.self_attn.v_proj.lora_B.weight',
    ]);
    const t = (k: string) => st.tensors.get(k)!;
    expect(t('base_model.model.model.layers.0.self_attn.v_proj.lora_A.weight')).toMatchObject({ dtype: 'F32', shape: [4, 16] });
    expect(t('base_model.model.model.layers.0.self_attn.v_proj.lora_B.weight').shape).toEqual([8, 4]);
    expect(t('base_model.model.model.layers.1.mlp.down_proj.lora_A.weight').shape).toEqual([4, 24]);
    expect(t('base_model.model.model.layers.1.mlp.down_proj.lora_B.weight').shape).toEqual([16, 4]);
    const cfg = JSON.parse(out['adapter_config.json']);
    expect(cfg).toMatchObject({
      peft_type: 'LORA',
      task_type: 'CAUSAL_LM',
      r: 4,
      lora_alpha: 8,
      lora_dropout: 0.05,
      bias: 'none',
      target_modules: ['down_proj', 'q_proj', 'v_proj'],
      fan_in_fan_out: false,
      use_rslora: false,
      use_dora: false,
      base_model_name_or_path: 'marft/tiny',
      inference_mode: true,
      modules_to_save: null,
      layers_to_transform: null,
      rank_pattern: {},
      alpha_pattern: {},
      init_lora_weights: true,
      revision: null,
    });
    expect(Object.keys(cfg)).toEqual([...Object.keys(cfg)].sort());
  });

  it('reads ".default." keys and keys without the base_model.model. prefix', () => {
    const a = makeAdapter(['q_proj']);
    const out = writePeftAdapter(a, model);
    const st = parseSafetensors(out['adapter_model.safetensors'], 'x');
    for (const rename of [(k: string) => k.replace('.weight', '.default.weight'), (k: string) => k.replace('base_model.model.', '')]) {
      const tensors: TensorToWrite[] = [...st.tensors].map(([k, v]) => ({ name: rename(k), dtype: 'F32', shape: v.shape, data: v.data }));
      const back = readPeftAdapter(files(out['adapter_config.json'], writeSafetensors(tensors)), model);
      expect(back.layers[1].q_proj!.B).toEqual(a.layers[1].q_proj!.B);
      expect(back.notes.length).toBe(1);
    }
  });

  it('accepts the adapter_config.json peft 0.21 writes', () => {
    const out = writePeftAdapter(makeAdapter(['q_proj', 'v_proj']), model);
    const peft021 = {
      alora_invocation_tokens: null,
      alpha_pattern: {},
      arrow_config: null,
      auto_mapping: null,
      base_model_name_or_path: null,
      bias: 'none',
      corda_config: null,
      ensure_weight_tying: false,
      eva_config: null,
      exclude_modules: null,
      fan_in_fan_out: false,
      inference_mode: true,
      init_lora_weights: false,
      kasa_config: null,
      layer_replication: null,
      layers_pattern: null,
      layers_to_transform: null,
      loftq_config: {},
      lora_alpha: 8,
      lora_bias: false,
      lora_dropout: 0.0,
      lora_ga_config: null,
      megatron_config: null,
      megatron_core: 'megatron.core',
      modules_to_save: null,
      monteclora_config: null,
      peft_type: 'LORA',
      peft_version: '0.21.0',
      qalora_group_size: 16,
      r: 4,
      rank_pattern: {},
      revision: null,
      target_modules: ['v_proj', 'q_proj'],
      target_parameters: null,
      task_type: 'CAUSAL_LM',
      trainable_token_indices: null,
      use_bdlora: null,
      use_dora: false,
      use_qalora: false,
      use_rslora: false,
      velora_config: null,
    };
    const back = readPeftAdapter(files(JSON.stringify(peft021), out['adapter_model.safetensors']), model);
    expect(back.config.targetModules.sort()).toEqual(['q_proj', 'v_proj']);
    expect(back.scale).toBe(2);
    expectPeftError(
      () => readPeftAdapter(files({ ...peft021, target_parameters: ['experts.w1'] }, out['adapter_model.safetensors'])),
      'PEFT_UNSUPPORTED',
      /target_parameters/,
    );
    expectPeftError(
      () => readPeftAdapter(files({ ...peft021, trainable_token_indices: [1, 2] }, out['adapter_model.safetensors'])),
      'PEFT_UNSUPPORTED',
      /trainable_token_indices/,
    );
  });

  it('scales by alpha/sqrt(r) with use_rslora and notes it', () => {
    const a = makeAdapter();
    a.config.useRslora = true;
    const back = readPeftAdapter(writePeftAdapter(a, model), model);
    expect(back.scale).toBe(8 / 2);
    expect(back.notes[0]).toMatch(/use_rslora/);
  });

  it('reads F16/BF16 adapters, "all-linear" and long module names', () => {
    const a = makeAdapter(['q_proj', 'v_proj', 'o_proj', 'down_proj']);
    const st = parseSafetensors(writePeftAdapter(a, model)['adapter_model.safetensors'], 'x');
    const bf: TensorToWrite[] = [...st.tensors].map(([k, v]) => ({
      name: k,
      dtype: 'BF16',
      shape: v.shape,
      data: new Float32Array(v.data.slice().buffer),
    }));
    const cfg = {
      peft_type: 'LORA',
      r,
      lora_alpha: 16,
      target_modules: ['model.layers.0.self_attn.q_proj', 'v_proj', 'o_proj', 'mlp.down_proj'],
    };
    const back = readPeftAdapter(files(cfg, writeSafetensors(bf)), model);
    expect(back.layers[0].o_proj!.A[0]).toBeCloseTo(a.layers[0].o_proj!.A[0], 2);
    expectPeftError(
      () => readPeftAdapter(files({ ...cfg, target_modules: 'all-linear' }, writeSafetensors(bf)), model),
      'PEFT_INVALID',
      /no adapter for layer 0 k_proj/,
    );
  });

  it('refuses unsupported and inconsistent adapters', () => {
    const out = writePeftAdapter(makeAdapter(), model);
    const cfg = JSON.parse(out['adapter_config.json']);
    const st = out['adapter_model.safetensors'];
    expectPeftError(() => readPeftAdapter(files({ ...cfg, peft_type: 'IA3' }, st)), 'PEFT_UNSUPPORTED', /"peft_type" is "IA3"/);
    expectPeftError(() => readPeftAdapter(files({ ...cfg, use_dora: true }, st)), 'PEFT_UNSUPPORTED', /DoRA/);
    expectPeftError(() => readPeftAdapter(files({ ...cfg, bias: 'all' }, st)), 'PEFT_UNSUPPORTED', /"bias"/);
    expectPeftError(() => readPeftAdapter(files({ ...cfg, rank_pattern: { q_proj: 8 } }, st)), 'PEFT_UNSUPPORTED', /rank_pattern/);
    expectPeftError(() => readPeftAdapter(files({ ...cfg, target_modules: ['q_proj', 'c_attn'] }, st)), 'PEFT_UNSUPPORTED', /"c_attn"/);
    expectPeftError(
      () => readPeftAdapter(files({ ...cfg, target_modules: ['q_proj', 'v_proj'] }, st)),
      'PEFT_INVALID',
      /down_proj adapters but .*target_modules/,
    );
    expectPeftError(() => readPeftAdapter(files({ ...cfg, r: 8 }, st)), 'PEFT_INVALID', /but r = 8/);
    expectPeftError(() => readPeftAdapter(files('{', st)), 'PEFT_INVALID', /invalid JSON/);
    // shapes against the base model
    const other = parseModelConfig({ ...TINY_QWEN2_CONFIG, intermediate_size: 32 });
    expectPeftError(
      () => readPeftAdapter(out, other),
      'PEFT_INVALID',
      /down_proj.lora_A.weight" has shape \[4, 24\], the base model needs \[4, 32\]/,
    );
    expectPeftError(
      () => readPeftAdapter(out, parseModelConfig({ ...TINY_QWEN2_CONFIG, num_hidden_layers: 1 })),
      'PEFT_INVALID',
      /layer 1 but the base model has 1 layers/,
    );
    // DoRA magnitudes, stray keys, half an adapter
    const extra = (name: string, shape: number[]): Uint8Array => {
      const t = parseSafetensors(st, 'x');
      const list: TensorToWrite[] = [...t.tensors].map(([k, v]) => ({ name: k, dtype: 'F32', shape: v.shape, data: v.data }));
      list.push({ name, dtype: 'F32', shape, data: new Float32Array(shape.reduce((a, b) => a * b, 1)) });
      return writeSafetensors(list);
    };
    expectPeftError(
      () => readPeftAdapter(files(cfg, extra('base_model.model.model.layers.0.self_attn.q_proj.lora_magnitude_vector', [16]))),
      'PEFT_UNSUPPORTED',
      /DoRA/,
    );
    expectPeftError(
      () => readPeftAdapter(files(cfg, extra('base_model.model.lm_head.weight', [2, 2]))),
      'PEFT_INVALID',
      /unexpected tensor "base_model.model.lm_head.weight"/,
    );
    expectPeftError(
      () => readPeftAdapter(files(cfg, extra('base_model.model.model.layers.0.self_attn.qq_proj.lora_A.weight', [4, 16]))),
      'PEFT_INVALID',
      /unknown module "qq_proj"/,
    );
    const half = writeSafetensors([{ name: loraKey(0, 'q_proj', 'A'), dtype: 'F32', shape: [4, 16], data: new Float32Array(64) }]);
    expectPeftError(() => readPeftAdapter(files({ ...cfg, target_modules: ['q_proj'] }, half)), 'PEFT_INVALID', /lora_B is missing/);
  });

  it('refuses inconsistent writer input', () => {
    const a = makeAdapter();
    a.layers[1].q_proj!.A = new Float32Array(10);
    expectPeftError(() => writePeftAdapter(a), 'PEFT_INVALID', /not positive multiples of r/);
    const b = makeAdapter();
    delete b.layers[0].v_proj;
    expectPeftError(() => writePeftAdapter(b), 'PEFT_INVALID', /layer 0 has no adapter for "v_proj"/);
    expectPeftError(
      () => writePeftAdapter(makeAdapter(), parseModelConfig({ ...TINY_QWEN2_CONFIG, hidden_size: 32 })),
      'PEFT_INVALID',
      /the model needs/,
    );
  });
});
