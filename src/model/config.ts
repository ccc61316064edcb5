// Hugging Face config.json -> ModelConfig for the decoder families the lab runs: Llama (LlamaForCausalLM,
// which SmolLM also uses) and Qwen2 (Qwen2ForCausalLM). Defaults are transformers' own; anything we do not
// implement (another model type, an activation other than SiLU, sliding-window attention, rope scaling
// other than default/linear/llama3) is refused with an error naming the field. Also: the RoPE inverse
// frequencies computed in float32 the way transformers computes them, and the table of expected weight names
// and shapes (HF names), with a checker that reports missing tensors and wrong shapes naming the file.
// Legend: V vocab, C hidden, I intermediate, L layers, NH heads, NKV key/value heads, HS head size.

import { thetaInvFreq } from '../../kernels/rope/rope.ts';
import { fail, isObject, parseJsonFile } from './errors.ts';

export type ModelType = 'llama' | 'qwen2';

export type RopeScaling =
  | { type: 'linear'; factor: number }
  | { type: 'llama3'; factor: number; lowFreqFactor: number; highFreqFactor: number; originalMaxPositionEmbeddings: number };

export interface ModelConfig {
  modelType: ModelType;
  architecture: string; // e.g. LlamaForCausalLM
  vocabSize: number; // V
  hiddenSize: number; // C
  intermediateSize: number; // I
  numLayers: number; // L
  numHeads: number; // NH
  numKvHeads: number; // NKV
  headDim: number; // HS
  rmsNormEps: number;
  ropeTheta: number;
  ropeScaling: RopeScaling | null;
  maxPositionEmbeddings: number;
  tieWordEmbeddings: boolean;
  /** Bias on q/k/v projections (Qwen2: always; Llama: attention_bias). */
  qkvBias: boolean;
  /** Bias on o_proj (Llama: attention_bias; Qwen2: never). */
  oBias: boolean;
  /** Bias on gate/up/down (Llama: mlp_bias; Qwen2: never). */
  mlpBias: boolean;
  bosTokenId: number | null;
  eosTokenIds: number[];
  padTokenId: number | null;
  torchDtype: string | null; // "bfloat16", "float16", "float32" or null
}

const ARCHITECTURES: Record<ModelType, string> = { llama: 'LlamaForCausalLM', qwen2: 'Qwen2ForCausalLM' };
/** transformers' defaults (LlamaConfig / Qwen2Config) for the optional fields. */
const DEFAULTS: Record<ModelType, { rmsNormEps: number; maxPos: number }> = {
  llama: { rmsNormEps: 1e-6, maxPos: 2048 },
  qwen2: { rmsNormEps: 1e-6, maxPos: 32768 },
};

/** Caps on config.json sizes: 2^31 - 1 per dim (a WebGPU buffer could not hold more), 4096 layers. */
export const MAX_DIM = 2 ** 31 - 1;
export const MAX_LAYERS = 4096;

/** Parses config.json (text or already-parsed object). Throws CONFIG_INVALID / CONFIG_UNSUPPORTED naming `fileName`. */
export function parseModelConfig(json: unknown, fileName = 'config.json'): ModelConfig {
  const c = typeof json === 'string' ? parseJsonFile(json, fileName, 'CONFIG_INVALID') : json;
  if (!isObject(c)) fail('CONFIG_INVALID', fileName, 'not a JSON object');
  const bad = (field: string, why: string): never => fail('CONFIG_INVALID', fileName, `"${field}" ${why}`);
  const unsupported = (field: string, why: string): never => fail('CONFIG_UNSUPPORTED', fileName, `"${field}" ${why}`);

  const mt = c.model_type;
  if (typeof mt !== 'string') bad('model_type', 'is missing or not a string');
  if (mt !== 'llama' && mt !== 'qwen2') unsupported('model_type', `is "${mt}"; supported: llama (Llama, SmolLM), qwen2`);
  const modelType = mt as ModelType;
  let architecture = ARCHITECTURES[modelType];
  if (c.architectures !== undefined && c.architectures !== null) {
    if (!Array.isArray(c.architectures) || c.architectures.some((a) => typeof a !== 'string'))
      bad('architectures', 'is not a list of strings');
    const archs = c.architectures as string[];
    if (archs.length > 0) {
      if (archs.length > 1 || archs[0] !== architecture)
        unsupported('architectures', `is [${archs.join(', ')}]; supported for ${modelType}: ${architecture}`);
      architecture = archs[0];
    }
  }

  // Sizes are capped before anything is sized or looped from them (expectedWeights walks the layers):
  // a number past the caps is a corrupt or hostile file, not a model that could run here.
  const int = (field: string, dflt?: number, max = MAX_DIM): number => {
    const v = c[field] ?? dflt;
    if (v === undefined) bad(field, 'is missing');
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v <= 0) bad(field, `must be a positive integer, got ${JSON.stringify(v)}`);
    if ((v as number) > max) unsupported(field, `is ${v}, over the lab's limit of ${max}`);
    return v as number;
  };
  const num = (field: string, v: unknown, positive = true): number => {
    if (typeof v !== 'number' || !Number.isFinite(v) || (positive && v <= 0))
      bad(field, `must be a ${positive ? 'positive ' : ''}number, got ${JSON.stringify(v)}`);
    return v as number;
  };
  const bool = (field: string, dflt: boolean): boolean => {
    const v = c[field] ?? dflt;
    if (typeof v !== 'boolean') bad(field, `must be true or false, got ${JSON.stringify(v)}`);
    return v as boolean;
  };
  const tokenId = (field: string): number | null => {
    const v = c[field];
    if (v === undefined || v === null) return null;
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) bad(field, `must be a token id, got ${JSON.stringify(v)}`);
    return v as number;
  };

  const vocabSize = int('vocab_size');
  const hiddenSize = int('hidden_size');
  const intermediateSize = int('intermediate_size');
  const numLayers = int('num_hidden_layers', undefined, MAX_LAYERS);
  const numHeads = int('num_attention_heads');
  const numKvHeads = int('num_key_value_heads', numHeads);
  if (numHeads % numKvHeads !== 0) bad('num_key_value_heads', `(${numKvHeads}) must divide num_attention_heads (${numHeads})`);
  if (c.head_dim === undefined || c.head_dim === null) {
    if (hiddenSize % numHeads !== 0)
      bad('hidden_size', `(${hiddenSize}) must be a multiple of num_attention_heads (${numHeads}) when head_dim is not given`);
  }
  const headDim = int('head_dim', hiddenSize / numHeads);
  if (headDim % 2 !== 0) bad('head_dim', `(${headDim}) must be even for rotary embeddings`);

  const act = c.hidden_act ?? 'silu';
  if (act !== 'silu') unsupported('hidden_act', `is ${JSON.stringify(act)}; only "silu" is implemented`);
  if (modelType === 'qwen2' && c.use_sliding_window === true)
    unsupported('use_sliding_window', 'is true; sliding-window attention is not implemented');
  // pretraining_tp only splits Llama's matmuls in slices (same math); transformers ignores it at inference.
  // RoPE: transformers v4 keeps rope_theta / rope_scaling at the top level; v5 groups them in rope_parameters.
  let ropeTheta = 10000;
  let scalingSrc: unknown = c.rope_scaling;
  let scalingField = 'rope_scaling';
  if (isObject(c.rope_parameters)) {
    const rp = c.rope_parameters;
    if (rp.rope_theta !== undefined) ropeTheta = num('rope_parameters.rope_theta', rp.rope_theta);
    scalingSrc = rp;
    scalingField = 'rope_parameters';
  } else if (c.rope_parameters !== undefined && c.rope_parameters !== null) {
    bad('rope_parameters', 'is not an object');
  }
  if (c.rope_theta !== undefined && c.rope_theta !== null) ropeTheta = num('rope_theta', c.rope_theta);
  const ropeScaling = parseRopeScaling(scalingSrc, scalingField, fileName);

  const eos = c.eos_token_id;
  let eosTokenIds: number[] = [];
  if (Array.isArray(eos)) {
    if (eos.some((e) => typeof e !== 'number' || !Number.isSafeInteger(e) || e < 0))
      bad('eos_token_id', 'must be a token id or a list of token ids');
    eosTokenIds = eos as number[];
  } else if (eos !== undefined && eos !== null) {
    eosTokenIds = [tokenId('eos_token_id') as number];
  }

  const dtype = c.torch_dtype ?? c.dtype ?? null;
  if (dtype !== null && typeof dtype !== 'string') bad('torch_dtype', 'is not a string');

  const attentionBias = modelType === 'llama' ? bool('attention_bias', false) : false;
  return {
    modelType,
    architecture,
    vocabSize,
    hiddenSize,
    intermediateSize,
    numLayers,
    numHeads,
    numKvHeads,
    headDim,
    rmsNormEps: c.rms_norm_eps === undefined ? DEFAULTS[modelType].rmsNormEps : num('rms_norm_eps', c.rms_norm_eps),
    ropeTheta,
    ropeScaling,
    maxPositionEmbeddings: int('max_position_embeddings', DEFAULTS[modelType].maxPos),
    tieWordEmbeddings: bool('tie_word_embeddings', false),
    qkvBias: modelType === 'qwen2' ? true : attentionBias,
    oBias: attentionBias,
    mlpBias: modelType === 'llama' ? bool('mlp_bias', false) : false,
    bosTokenId: tokenId('bos_token_id'),
    eosTokenIds,
    padTokenId: tokenId('pad_token_id'),
    torchDtype: dtype as string | null,
  };
}

function parseRopeScaling(src: unknown, field: string, fileName: string): RopeScaling | null {
  if (src === undefined || src === null) return null;
  if (!isObject(src)) fail('CONFIG_INVALID', fileName, `"${field}" is not an object or null`);
  const type = src.rope_type ?? src.type ?? 'default';
  const num = (k: string): number => {
    const v = src[k];
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0)
      fail('CONFIG_INVALID', fileName, `"${field}.${k}" must be a positive number, got ${JSON.stringify(v)}`);
    return v;
  };
  if (type === 'default') return null;
  if (type === 'linear') return { type, factor: num('factor') };
  if (type === 'llama3') {
    const s: RopeScaling = {
      type,
      factor: num('factor'),
      lowFreqFactor: num('low_freq_factor'),
      highFreqFactor: num('high_freq_factor'),
      originalMaxPositionEmbeddings: num('original_max_position_embeddings'),
    };
    if (s.highFreqFactor <= s.lowFreqFactor) fail('CONFIG_INVALID', fileName, `"${field}.high_freq_factor" must exceed low_freq_factor`);
    return s;
  }
  return fail(
    'CONFIG_UNSUPPORTED',
    fileName,
    `"${field}" type ${JSON.stringify(type)} is not implemented (supported: null/default, linear, llama3)`,
  );
}

const f = Math.fround;

/**
 * RoPE inverse frequencies (HS/2 values), computed in float32 step by step as transformers does
 * (`_compute_default_rope_parameters`, then the linear or llama3 adjustment). Each torch float32 op is one
 * Math.fround of the double result, exact for + - * / (double rounding is innocuous for them); `scalar / tensor`
 * is torch's `tensor.reciprocal() * scalar`. pow is correctly rounded here, while torch's vectorised powf
 * (Sleef, <= 1 ulp) may land an ulp away for some entries: compare with a 1-ulp tolerance, not bit for bit.
 */
export function ropeInvFreq(config: ModelConfig): Float32Array {
  const inv = thetaInvFreq(config.headDim, config.ropeTheta);
  const s = config.ropeScaling;
  if (!s) return inv;
  if (s.type === 'linear') return inv.map((x) => f(x / f(s.factor)));
  const factor = f(s.factor);
  const old = s.originalMaxPositionEmbeddings;
  const lowWavelen = old / s.lowFreqFactor; // python floats, compared against f32 tensors
  const highWavelen = old / s.highFreqFactor;
  const twoPi = f(2 * Math.PI);
  const span = f(s.highFreqFactor - s.lowFreqFactor);
  const out = new Float32Array(inv.length);
  for (let i = 0; i < inv.length; i++) {
    const wavelen = f(f(1 / inv[i]) * twoPi); // torch: scalar / tensor = tensor.reciprocal() * scalar
    let v = wavelen > f(lowWavelen) ? f(inv[i] / factor) : inv[i];
    const medium = !(wavelen < f(highWavelen)) && !(wavelen > f(lowWavelen));
    if (medium) {
      const smooth = f(f(f(f(1 / wavelen) * f(old)) - f(s.lowFreqFactor)) / span);
      v = f(f(f(f(1 - smooth) * v) / factor) + f(smooth * v));
    }
    out[i] = v;
  }
  return out;
}

// ---- expected weights ----

export type LinearModule = 'q_proj' | 'k_proj' | 'v_proj' | 'o_proj' | 'gate_proj' | 'up_proj' | 'down_proj';
export const ATTN_MODULES: readonly LinearModule[] = ['q_proj', 'k_proj', 'v_proj', 'o_proj'];
export const MLP_MODULES: readonly LinearModule[] = ['gate_proj', 'up_proj', 'down_proj'];
export const LINEAR_MODULES: readonly LinearModule[] = [...ATTN_MODULES, ...MLP_MODULES];

/** The parent block of a linear module in HF names: self_attn or mlp. */
export const moduleParent = (m: LinearModule): 'self_attn' | 'mlp' => (ATTN_MODULES.includes(m) ? 'self_attn' : 'mlp');

/** in/out features of a linear module; its weight is [out, in] (torch Linear layout). */
export function linearDims(config: ModelConfig, m: LinearModule): { in: number; out: number } {
  const { hiddenSize: C, intermediateSize: I, numHeads: NH, numKvHeads: NKV, headDim: HS } = config;
  switch (m) {
    case 'q_proj':
      return { in: C, out: NH * HS };
    case 'k_proj':
    case 'v_proj':
      return { in: C, out: NKV * HS };
    case 'o_proj':
      return { in: NH * HS, out: C };
    case 'gate_proj':
    case 'up_proj':
      return { in: C, out: I };
    case 'down_proj':
      return { in: I, out: C };
  }
}

const hasBias = (config: ModelConfig, m: LinearModule): boolean =>
  m === 'o_proj' ? config.oBias : moduleParent(m) === 'mlp' ? config.mlpBias : config.qkvBias;

export interface WeightSpec {
  name: string;
  shape: number[];
}

/** Every tensor the model needs, with its HF name and shape, in load order. */
export function expectedWeights(config: ModelConfig): WeightSpec[] {
  const { vocabSize: V, hiddenSize: C } = config;
  const out: WeightSpec[] = [{ name: 'model.embed_tokens.weight', shape: [V, C] }];
  for (let l = 0; l < config.numLayers; l++) {
    const p = `model.layers.${l}`;
    out.push({ name: `${p}.input_layernorm.weight`, shape: [C] });
    for (const m of LINEAR_MODULES) {
      if (m === 'gate_proj') out.push({ name: `${p}.post_attention_layernorm.weight`, shape: [C] });
      const d = linearDims(config, m);
      out.push({ name: `${p}.${moduleParent(m)}.${m}.weight`, shape: [d.out, d.in] });
      if (hasBias(config, m)) out.push({ name: `${p}.${moduleParent(m)}.${m}.bias`, shape: [d.out] });
    }
  }
  out.push({ name: 'model.norm.weight', shape: [C] });
  if (!config.tieWordEmbeddings) out.push({ name: 'lm_head.weight', shape: [V, C] });
  return out;
}

export interface WeightReport {
  ok: boolean;
  missing: string[];
  mismatched: Array<{ name: string; file: string; expected: number[]; got: readonly number[] }>;
  /** Tensors present but not used (e.g. rotary_emb.inv_freq buffers, lm_head.weight of a tied model). */
  unused: string[];
  /** One line per problem, ready to show. */
  messages: string[];
}

/**
 * Compares the tensors present (name -> {shape, file?}) with expectedWeights(config). A tied model whose
 * checkpoint stores lm_head.weight anyway is fine (transformers ignores it); it is listed as unused.
 */
export function checkWeights(
  config: ModelConfig,
  tensorIndex: ReadonlyMap<string, { shape: readonly number[]; file?: string }>,
): WeightReport {
  const report: WeightReport = { ok: true, missing: [], mismatched: [], unused: [], messages: [] };
  const expected = expectedWeights(config);
  const names = new Set<string>();
  for (const { name, shape } of expected) {
    names.add(name);
    const t = tensorIndex.get(name);
    if (!t) {
      report.missing.push(name);
      report.messages.push(`missing tensor "${name}" [${shape.join(', ')}]`);
    } else if (t.shape.length !== shape.length || t.shape.some((d, i) => d !== shape[i])) {
      const file = t.file ?? '?';
      report.mismatched.push({ name, file, expected: shape, got: t.shape });
      report.messages.push(`${file}: tensor "${name}" has shape [${t.shape.join(', ')}], config.json implies [${shape.join(', ')}]`);
    }
  }
  for (const name of tensorIndex.keys()) if (!names.has(name)) report.unused.push(name);
  report.ok = report.missing.length === 0 && report.mismatched.length === 0;
  return report;
}

/** checkWeights, throwing WEIGHTS_MISMATCH with the first problems when the weights do not fit. */
export function assertWeights(
  config: ModelConfig,
  tensorIndex: ReadonlyMap<string, { shape: readonly number[]; file?: string }>,
  folder = 'model folder',
): WeightReport {
  const r = checkWeights(config, tensorIndex);
  if (!r.ok) {
    const shown = r.messages
      .slice(0, 8)
      .map((m) => `\n  - ${m}`)
      .join('');
    const more = r.messages.length > 8 ? `\n  ... and ${r.messages.length - 8} more` : '';
    fail(
      'WEIGHTS_MISMATCH',
      folder,
      `${r.missing.length} missing and ${r.mismatched.length} mis-shaped tensors for config.json:${shown}${more}`,
    );
  }
  return r;
}
