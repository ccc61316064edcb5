// PEFT LoRA adapters, the layout Python's `PeftModel.from_pretrained` loads:
//   adapter_config.json        {"peft_type": "LORA", "r", "lora_alpha", "target_modules": [...], ...}
//   adapter_model.safetensors  base_model.model.model.layers.{i}.self_attn.q_proj.lora_A.weight  (R, in)
//                              base_model.model.model.layers.{i}.self_attn.q_proj.lora_B.weight  (out, R)
//                              (mlp.{gate,up,down}_proj for the MLP), F32, metadata {"format": "pt"}.
// The written config has the keys peft 0.10-0.13 write for a LoRA config (later versions read it too; older
// ones reject keys they do not know, so no newer keys are added). The reader is lenient on key spelling
// (".default." adapter names, with or without the "base_model.model." prefix) and strict on everything
// else: shapes must agree with r and with the base model, and features we do not implement (DoRA, other
// peft types, rank/alpha patterns, bias training, modules_to_save) fail with PEFT_UNSUPPORTED.
// The effective scale is lora_alpha / r, or lora_alpha / sqrt(r) with use_rslora.

import { fail, isObject, parseJsonFile, decodeUtf8 } from './errors.ts';
import { LINEAR_MODULES, MAX_LAYERS, linearDims, moduleParent, type LinearModule, type ModelConfig } from './config.ts';
import { parseSafetensors, tensorToFloat32, writeSafetensors, type TensorToWrite } from './safetensors.ts';

export const ADAPTER_CONFIG_FILE = 'adapter_config.json';
export const ADAPTER_WEIGHTS_FILE = 'adapter_model.safetensors';

export interface LoraConfig {
  r: number; // R
  loraAlpha: number;
  targetModules: LinearModule[];
  loraDropout: number;
  useRslora: boolean;
  baseModelNameOrPath: string | null;
  /** Layers that carry adapters (null: all). Read from layers_to_transform; the writer always writes all. */
  layersToTransform: number[] | null;
}

/** One layer's adapters: A (R, in) and B (out, R), row-major. */
export type LoraLayer = Partial<Record<LinearModule, { A: Float32Array; B: Float32Array }>>;

export interface PeftAdapter {
  config: LoraConfig;
  layers: LoraLayer[];
}

export interface ReadPeftAdapter extends PeftAdapter {
  /** The factor the adapter's product is multiplied by: alpha/r, or alpha/sqrt(r) with use_rslora. */
  scale: number;
  /** What the reader accepted but changed or ignored, for the UI to show. */
  notes: string[];
}

export const loraScale = (c: Pick<LoraConfig, 'r' | 'loraAlpha' | 'useRslora'>): number =>
  c.useRslora ? c.loraAlpha / Math.sqrt(c.r) : c.loraAlpha / c.r;

/** The key of one LoRA matrix as PEFT saves it (adapter name removed). */
export const loraKey = (layer: number, m: LinearModule, which: 'A' | 'B'): string =>
  `base_model.model.model.layers.${layer}.${moduleParent(m)}.${m}.lora_${which}.weight`;

/** adapter_config.json as peft writes it for a LoRA config (keys sorted, as json.dumps(sort_keys=True) does). */
export function adapterConfigJson(c: LoraConfig): string {
  const obj: Record<string, unknown> = {
    alpha_pattern: {},
    auto_mapping: null,
    base_model_name_or_path: c.baseModelNameOrPath,
    bias: 'none',
    fan_in_fan_out: false,
    inference_mode: true,
    init_lora_weights: true,
    layer_replication: null,
    layers_pattern: null,
    layers_to_transform: null,
    loftq_config: {},
    lora_alpha: c.loraAlpha,
    lora_dropout: c.loraDropout,
    megatron_config: null,
    megatron_core: 'megatron.core',
    modules_to_save: null,
    peft_type: 'LORA',
    r: c.r,
    rank_pattern: {},
    revision: null,
    target_modules: [...c.targetModules].sort(),
    task_type: 'CAUSAL_LM',
    use_dora: false,
    use_rslora: c.useRslora,
  };
  return JSON.stringify(obj, null, 2) + '\n';
}

/**
 * Serialises an adapter. Every layer must hold A and B for every target module; shapes come from r and the
 * lengths (in = |A| / r, out = |B| / r) and are checked against `model` when it is given.
 */
export function writePeftAdapter(
  adapter: PeftAdapter,
  model?: ModelConfig,
): { 'adapter_config.json': string; 'adapter_model.safetensors': Uint8Array } {
  const { config: c, layers } = adapter;
  const where = 'writePeftAdapter';
  if (!Number.isSafeInteger(c.r) || c.r <= 0) fail('PEFT_INVALID', where, `r must be a positive integer, got ${c.r}`);
  if (!(c.loraAlpha > 0)) fail('PEFT_INVALID', where, `lora_alpha must be positive, got ${c.loraAlpha}`);
  if (c.targetModules.length === 0) fail('PEFT_INVALID', where, 'target_modules is empty');
  for (const m of c.targetModules)
    if (!LINEAR_MODULES.includes(m)) fail('PEFT_INVALID', where, `unknown target module "${m}" (expected ${LINEAR_MODULES.join(', ')})`);
  if (c.layersToTransform) fail('PEFT_UNSUPPORTED', where, 'writing layers_to_transform is not supported: give adapters for every layer');
  if (model && layers.length !== model.numLayers)
    fail('PEFT_INVALID', where, `${layers.length} layers of adapters for a ${model.numLayers}-layer model`);
  const tensors: TensorToWrite[] = [];
  layers.forEach((layer, l) => {
    for (const m of Object.keys(layer))
      if (!c.targetModules.includes(m as LinearModule))
        fail('PEFT_INVALID', where, `layer ${l} has "${m}", which is not in target_modules`);
    for (const m of c.targetModules) {
      const ab = layer[m];
      if (!ab) fail('PEFT_INVALID', where, `layer ${l} has no adapter for "${m}"`);
      const inF = ab.A.length / c.r;
      const outF = ab.B.length / c.r;
      if (!Number.isInteger(inF) || !Number.isInteger(outF) || inF === 0 || outF === 0) {
        fail(
          'PEFT_INVALID',
          where,
          `layer ${l} ${m}: |A| = ${ab.A.length} and |B| = ${ab.B.length} are not positive multiples of r = ${c.r}`,
        );
      }
      if (model) {
        const d = linearDims(model, m);
        if (d.in !== inF || d.out !== outF)
          fail(
            'PEFT_INVALID',
            where,
            `layer ${l} ${m}: A is [${c.r}, ${inF}] and B [${outF}, ${c.r}], the model needs [${c.r}, ${d.in}] and [${d.out}, ${c.r}]`,
          );
      }
      tensors.push({ name: loraKey(l, m, 'A'), dtype: 'F32', shape: [c.r, inF], data: ab.A });
      tensors.push({ name: loraKey(l, m, 'B'), dtype: 'F32', shape: [outF, c.r], data: ab.B });
    }
  });
  return {
    'adapter_config.json': adapterConfigJson(c),
    'adapter_model.safetensors': writeSafetensors(tensors, { format: 'pt' }),
  };
}

/** Short module names from target_modules: "q_proj", "model.layers.0.self_attn.q_proj" or "all-linear". */
function targetModules(v: unknown, file: string, notes: string[]): LinearModule[] | null {
  if (typeof v === 'string') {
    if (v === 'all-linear') return [...LINEAR_MODULES];
    notes.push(`target_modules is the regex ${JSON.stringify(v)}: modules taken from the weights`);
    return null;
  }
  if (!Array.isArray(v) || v.length === 0 || v.some((m) => typeof m !== 'string'))
    fail('PEFT_INVALID', file, '"target_modules" must be a non-empty list of module names');
  const out = new Set<LinearModule>();
  for (const name of v as string[]) {
    if (name === 'all-linear') {
      LINEAR_MODULES.forEach((m) => out.add(m));
      continue;
    }
    const short = name.split('.').pop() as string;
    if (!LINEAR_MODULES.includes(short as LinearModule))
      fail('PEFT_UNSUPPORTED', file, `target module "${name}" is not one of ${LINEAR_MODULES.join(', ')}`);
    out.add(short as LinearModule);
  }
  return [...out];
}

/** Parses and validates adapter_config.json. */
export function parseAdapterConfig(json: unknown, file = ADAPTER_CONFIG_FILE, notes: string[] = []): LoraConfig {
  const c = typeof json === 'string' ? parseJsonFile(json, file, 'PEFT_INVALID') : json;
  if (!isObject(c)) fail('PEFT_INVALID', file, 'not a JSON object');
  const unsupported = (field: string, why: string): never => fail('PEFT_UNSUPPORTED', file, `"${field}" ${why}`);
  if (c.peft_type !== 'LORA') unsupported('peft_type', `is ${JSON.stringify(c.peft_type)}; only "LORA" is supported`);
  if (c.use_dora === true) unsupported('use_dora', 'is true; DoRA adapters are not supported');
  if (c.bias !== undefined && c.bias !== 'none') unsupported('bias', `is ${JSON.stringify(c.bias)}; only "none" is supported`);
  if (c.lora_bias === true) unsupported('lora_bias', 'is true; LoRA biases are not supported');
  if (c.fan_in_fan_out === true) unsupported('fan_in_fan_out', 'is true (Conv1D models); Llama/Qwen2 adapters have it false');
  for (const k of ['rank_pattern', 'alpha_pattern']) {
    if (isObject(c[k]) && Object.keys(c[k]).length > 0) unsupported(k, 'is not empty; per-module ranks and alphas are not supported');
  }
  if (Array.isArray(c.modules_to_save) && c.modules_to_save.length > 0)
    unsupported('modules_to_save', 'is not empty; fully trained extra modules are not supported');
  if (c.layer_replication !== undefined && c.layer_replication !== null) unsupported('layer_replication', 'is set; not supported');
  // Newer peft features that change the forward or add weights beyond lora_A/lora_B.
  const setField = (k: string): boolean =>
    c[k] !== undefined && c[k] !== null && !(Array.isArray(c[k]) && (c[k] as unknown[]).length === 0);
  if (setField('target_parameters')) unsupported('target_parameters', 'is set; LoRA on raw parameters (MoE experts) is not supported');
  if (setField('alora_invocation_tokens')) unsupported('alora_invocation_tokens', 'is set; activated LoRA (aLoRA) is not supported');
  if (setField('trainable_token_indices')) unsupported('trainable_token_indices', 'is set; trainable token embeddings are not supported');
  if (c.use_qalora === true) unsupported('use_qalora', 'is true; QA-LoRA is not supported');
  if (c.task_type !== undefined && c.task_type !== null && c.task_type !== 'CAUSAL_LM')
    unsupported('task_type', `is ${JSON.stringify(c.task_type)}; expected "CAUSAL_LM"`);
  const r = c.r;
  if (typeof r !== 'number' || !Number.isSafeInteger(r) || r <= 0)
    fail('PEFT_INVALID', file, `"r" must be a positive integer, got ${JSON.stringify(r)}`);
  const alpha = c.lora_alpha ?? 8; // peft's default
  if (typeof alpha !== 'number' || !(alpha > 0))
    fail('PEFT_INVALID', file, `"lora_alpha" must be a positive number, got ${JSON.stringify(alpha)}`);
  const dropout = c.lora_dropout ?? 0;
  if (typeof dropout !== 'number' || dropout < 0 || dropout >= 1)
    fail('PEFT_INVALID', file, `"lora_dropout" must be in [0, 1), got ${JSON.stringify(dropout)}`);
  const useRslora = c.use_rslora === true;
  if (useRslora) notes.push(`use_rslora: scale is lora_alpha / sqrt(r) = ${alpha} / sqrt(${r})`);
  let layersToTransform: number[] | null = null;
  const ltt = c.layers_to_transform;
  if (typeof ltt === 'number') layersToTransform = [ltt];
  else if (Array.isArray(ltt)) layersToTransform = ltt as number[];
  else if (ltt !== undefined && ltt !== null) fail('PEFT_INVALID', file, '"layers_to_transform" must be an int, a list of ints or null');
  if (layersToTransform?.some((l) => !Number.isSafeInteger(l) || l < 0))
    fail('PEFT_INVALID', file, '"layers_to_transform" has an invalid layer index');
  const base = c.base_model_name_or_path;
  return {
    r,
    loraAlpha: alpha,
    targetModules: targetModules(c.target_modules, file, notes) ?? [],
    loraDropout: dropout,
    useRslora,
    baseModelNameOrPath: typeof base === 'string' ? base : null,
    layersToTransform,
  };
}

// base_model.model.model.layers.3.self_attn.q_proj.lora_A.weight, optionally lora_A.default.weight, optionally
// without "base_model.model." or without the inner "model.".
const KEY_RE =
  /^(?:base_model\.model\.)?(?:model\.)?layers\.(\d+)\.(self_attn|mlp)\.([a-z_]+)\.lora_([AB])(?:\.([A-Za-z0-9_-]+))?\.weight$/;

/**
 * Reads an adapter folder's two files. `model` (the base model's config) enables the shape checks against
 * in/out features and the layer count; without it, the layer count is the highest index + 1.
 */
export function readPeftAdapter(
  files: { 'adapter_config.json': string | object | Uint8Array; 'adapter_model.safetensors': Uint8Array },
  model?: ModelConfig,
): ReadPeftAdapter {
  const notes: string[] = [];
  const cfgIn = files[ADAPTER_CONFIG_FILE];
  if (cfgIn === undefined) fail('FILE_MISSING', ADAPTER_CONFIG_FILE, 'adapter_config.json is missing');
  if (files[ADAPTER_WEIGHTS_FILE] === undefined)
    fail(
      'FILE_MISSING',
      ADAPTER_WEIGHTS_FILE,
      'adapter_model.safetensors is missing (adapter_model.bin pickles are not read: re-save with safe_serialization=True)',
    );
  const cfgText = cfgIn instanceof Uint8Array ? decodeUtf8(cfgIn, ADAPTER_CONFIG_FILE, 'PEFT_INVALID') : cfgIn;
  const config = parseAdapterConfig(cfgText, ADAPTER_CONFIG_FILE, notes);
  const st = parseSafetensors(files[ADAPTER_WEIGHTS_FILE], ADAPTER_WEIGHTS_FILE);
  const file = ADAPTER_WEIGHTS_FILE;

  const found = new Map<string, { A?: Float32Array; B?: Float32Array }>(); // "layer/module"
  const adapterNames = new Set<string>();
  let maxLayer = -1;
  const seenModules = new Set<LinearModule>();
  const moduleDims = new Map<LinearModule, { in?: number; out?: number }>();
  for (const [key, t] of st.tensors) {
    if (/lora_magnitude_vector/.test(key)) fail('PEFT_UNSUPPORTED', file, `"${key}" is a DoRA magnitude; DoRA adapters are not supported`);
    if (/lora_embedding_[AB]/.test(key)) fail('PEFT_UNSUPPORTED', file, `"${key}" adapts an embedding; only linear modules are supported`);
    const m = KEY_RE.exec(key);
    if (!m)
      fail(
        'PEFT_INVALID',
        file,
        `unexpected tensor "${key}" (expected base_model.model.model.layers.{i}.{self_attn|mlp}.{module}.lora_{A|B}.weight)`,
      );
    const [, layerStr, parent, mod, which, adapterName] = m;
    if (!LINEAR_MODULES.includes(mod as LinearModule))
      fail('PEFT_INVALID', file, `"${key}": unknown module "${mod}" (expected ${LINEAR_MODULES.join(', ')})`);
    const module = mod as LinearModule;
    if (moduleParent(module) !== parent)
      fail('PEFT_INVALID', file, `"${key}": ${module} belongs under ${moduleParent(module)}, not ${parent}`);
    if (adapterName) adapterNames.add(adapterName);
    const layer = Number(layerStr);
    // the layer list below is sized from the highest index: refuse an absurd one before allocating
    if (layer >= MAX_LAYERS) fail('PEFT_INVALID', file, `"${key}": layer ${layerStr} is beyond any model (at most ${MAX_LAYERS} layers)`);
    if (model && layer >= model.numLayers)
      fail('PEFT_INVALID', file, `"${key}": layer ${layer} but the base model has ${model.numLayers} layers`);
    maxLayer = Math.max(maxLayer, layer);
    seenModules.add(module);

    const r = config.r;
    if (t.shape.length !== 2) fail('PEFT_INVALID', file, `"${key}" has shape [${t.shape.join(', ')}], expected a matrix`);
    const [rows, cols] = t.shape;
    if (which === 'A' ? rows !== r : cols !== r) {
      fail('PEFT_INVALID', file, `"${key}" has shape [${rows}, ${cols}] but r = ${r} (lora_A is [r, in], lora_B is [out, r])`);
    }
    if (model) {
      const d = linearDims(model, module);
      const want = which === 'A' ? [r, d.in] : [d.out, r];
      if (rows !== want[0] || cols !== want[1])
        fail('PEFT_INVALID', file, `"${key}" has shape [${rows}, ${cols}], the base model needs [${want.join(', ')}]`);
    }
    if (t.dtype !== 'F32' && t.dtype !== 'F16' && t.dtype !== 'BF16')
      fail('PEFT_INVALID', file, `"${key}" is ${t.dtype}; adapters must be float`);
    const dims = moduleDims.get(module) ?? {};
    const feat = which === 'A' ? cols : rows;
    const k = which === 'A' ? 'in' : 'out';
    if (dims[k] !== undefined && dims[k] !== feat)
      fail('PEFT_INVALID', file, `"${key}" has ${k} features ${feat} but other layers' ${module} have ${dims[k]}`);
    dims[k] = feat;
    moduleDims.set(module, dims);
    const slot = `${layer}/${module}`;
    const entry = found.get(slot) ?? {};
    if (entry[which as 'A' | 'B']) fail('PEFT_INVALID', file, `"${key}": lora_${which} of layer ${layer} ${module} appears twice`);
    entry[which as 'A' | 'B'] = tensorToFloat32(t);
    found.set(slot, entry);
  }
  if (found.size === 0) fail('PEFT_INVALID', file, 'no LoRA tensors');
  if (adapterNames.size > 1) fail('PEFT_UNSUPPORTED', file, `several adapters in one file (${[...adapterNames].join(', ')})`);
  if (adapterNames.size === 1) notes.push(`keys carry the adapter name ".${[...adapterNames][0]}."; read as the default adapter`);
  if (st.tensors.size > 0 && [...st.tensors.keys()].some((k) => !k.startsWith('base_model.model.')))
    notes.push('keys lack the "base_model.model." prefix; read anyway');

  if (config.targetModules.length === 0) config.targetModules = LINEAR_MODULES.filter((m) => seenModules.has(m));
  for (const m of seenModules)
    if (!config.targetModules.includes(m))
      fail('PEFT_INVALID', file, `has ${m} adapters but adapter_config.json target_modules is [${config.targetModules.join(', ')}]`);

  const numLayers = model ? model.numLayers : maxLayer + 1;
  const adapted = config.layersToTransform ?? Array.from({ length: numLayers }, (_, i) => i);
  if (config.layersToTransform) notes.push(`layers_to_transform: only layers ${adapted.join(', ')} carry adapters`);
  const layers: LoraLayer[] = Array.from({ length: numLayers }, () => ({}));
  for (const [slot, ab] of found) {
    const [ls, m] = slot.split('/');
    const l = Number(ls);
    if (!adapted.includes(l)) fail('PEFT_INVALID', file, `layer ${l} has adapters but is not in layers_to_transform`);
    if (!ab.A || !ab.B) fail('PEFT_INVALID', file, `layer ${l} ${m}: lora_${ab.A ? 'B' : 'A'} is missing`);
    layers[l][m as LinearModule] = { A: ab.A, B: ab.B };
  }
  for (const l of adapted) {
    if (l >= numLayers)
      fail('PEFT_INVALID', ADAPTER_CONFIG_FILE, `layers_to_transform has layer ${l} but the model has ${numLayers} layers`);
    for (const m of config.targetModules)
      if (!layers[l][m]) fail('PEFT_INVALID', file, `no adapter for layer ${l} ${m} (in target_modules)`);
  }
  return { config, layers, scale: loraScale(config), notes };
}
