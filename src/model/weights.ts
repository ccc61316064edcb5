// The base model's weights on the GPU, named as in the Hugging Face checkpoint. Matrices keep their
// stored 16-bit format packed two per u32 (the kernels unpack), unless `trainable` (full-parameter
// pretraining) asks for f32; norm weights and biases are small and always f32.
// Shapes (legend: V vocab, C channels, L layers, NH heads, NKV kv heads, HS head size, I intermediate):
//   embed (V, C)   q (NH*HS, C)   k, v (NKV*HS, C)   o (C, NH*HS)   gate, up (I, C)   down (C, I)
//   norms (C)      lmHead (V, C), the embed tensor itself when tied.
// The embedding and the LM head are row chunks (row-chunks.ts): one tensor, or, where the matrix is over
// one storage binding (a large vocabulary on a device with WebGPU's default limits) and frozen, several.
// fuseWeights adds, for the fused decode path (kernels/fused), q/k/v concatenated along the rows
// ((NH + 2 NKV) * HS, C) and gate/up (2I, C), with their biases: GPU copies of frozen weights, next to the
// per-module tensors that the backward, the exports and full-parameter training keep using.

import type { Gpu } from '../gpu/gpu.ts';
import { GpuError } from '../gpu/errors.ts';
import { type Tensor, byteSize, is16, numel } from '../gpu/tensor.ts';
import { LINEAR_MODULES, type LinearModule, type ModelConfig, expectedWeights, moduleParent } from './config.ts';
import { fail } from './errors.ts';
import { type RowChunks, chunkRows, viewRows } from './row-chunks.ts';
import { type TensorView, tensorToFloat32, tensorToPacked16 } from './safetensors.ts';

export interface LayerWeights {
  inNorm: Tensor;
  postNorm: Tensor;
  linear: Record<LinearModule, Tensor>;
  bias: Partial<Record<LinearModule, Tensor>>;
}

export interface DecoderWeights {
  /** (V, C) in row chunks (one unless the matrix is over one binding). */
  embed: RowChunks;
  layers: LayerWeights[];
  norm: Tensor;
  /** (V, C) in row chunks; the same chunks as embed when tied. */
  lmHead: RowChunks;
  /** The dtype the matrices are stored in on the GPU. */
  dtype: 'f32' | 'bf16' | 'f16';
  /** Full-parameter training updates these weights in place (uploadWeights' `trainable`). */
  trainable?: boolean;
  /** The fused path's concatenations (fuseWeights), per layer; absent until asked for. */
  fused?: FusedLayerWeights[];
}

/** A layer's projections that share an input, concatenated along the output rows. */
export interface FusedLayerWeights {
  qkv: Tensor; // ((NH + 2 NKV) * HS, C)
  qkvBias?: Tensor; // ((NH + 2 NKV) * HS), zeros for a module without bias
  gateUp: Tensor; // (2I, C)
  gateUpBias?: Tensor; // (2I)
}

export interface UploadOptions {
  /** f32 matrices (full-parameter training); default keeps the checkpoint's 16-bit format. */
  trainable?: boolean;
  /** Store f32 checkpoints as this 16-bit format to halve GPU memory. */
  storeAs?: 'bf16' | 'f16';
  file?: string;
}

export const weightName = (l: number, m: LinearModule, kind: 'weight' | 'bias' = 'weight'): string =>
  `model.layers.${l}.${moduleParent(m)}.${m}.${kind}`;

/**
 * Uploads every tensor of the model. On any failure the tensors already uploaded are released, so nothing
 * stays half-loaded on the GPU.
 */
export function uploadWeights(
  gpu: Gpu,
  config: ModelConfig,
  get: (name: string) => TensorView | undefined,
  opts: UploadOptions = {},
): DecoderWeights {
  const file = opts.file ?? 'model.safetensors';
  const embedView = get('model.embed_tokens.weight');
  if (!embedView) fail('WEIGHTS_MISMATCH', file, 'missing tensor "model.embed_tokens.weight"');
  const stored = embedView.dtype === 'BF16' ? 'bf16' : embedView.dtype === 'F16' ? 'f16' : 'f32';
  const dtype: DecoderWeights['dtype'] = opts.trainable ? 'f32' : stored === 'f32' ? (opts.storeAs ?? 'f32') : stored;
  const budget = Math.min(gpu.limits.maxBufferSize, gpu.limits.maxStorageBufferBindingSize);
  const rowsPer = fitWeights(config, dtype, budget, file, opts.trainable ?? false);
  const made: Tensor[] = [];
  const upload = (v: TensorView, kind: 'matrix' | 'vector', label: string): Tensor => {
    let t: Tensor;
    if (kind === 'matrix' && dtype !== 'f32') {
      const { words } = tensorToPacked16(v, dtype);
      t = gpu.upload(words, v.shape, dtype, label);
    } else {
      t = gpu.upload(tensorToFloat32(v), v.shape, 'f32', label);
    }
    made.push(t);
    return t;
  };
  const found = (name: string): TensorView => get(name) ?? fail('WEIGHTS_MISMATCH', file, `missing tensor "${name}"`);
  const load = (name: string, kind: 'matrix' | 'vector'): Tensor => upload(found(name), kind, name);
  // the embedding and the LM head in row chunks of rowsPer rows (one chunk where the whole fits)
  const loadRows = (name: string): RowChunks => {
    const v = found(name);
    if (rowsPer >= v.shape[0]) return [upload(v, 'matrix', name)];
    const out: Tensor[] = [];
    for (let first = 0; first < v.shape[0]; first += rowsPer) {
      const count = Math.min(rowsPer, v.shape[0] - first);
      out.push(upload(viewRows(v, first, count), 'matrix', `${name}[${first}:${first + count}]`));
    }
    return out;
  };
  try {
    const embed = loadRows('model.embed_tokens.weight');
    const layers: LayerWeights[] = [];
    for (let l = 0; l < config.numLayers; l++) {
      const linear = {} as Record<LinearModule, Tensor>;
      const bias: Partial<Record<LinearModule, Tensor>> = {};
      for (const m of LINEAR_MODULES) {
        linear[m] = load(weightName(l, m), 'matrix');
        if (get(weightName(l, m, 'bias'))) bias[m] = load(weightName(l, m, 'bias'), 'vector');
      }
      layers.push({
        inNorm: load(`model.layers.${l}.input_layernorm.weight`, 'vector'),
        postNorm: load(`model.layers.${l}.post_attention_layernorm.weight`, 'vector'),
        linear,
        bias,
      });
    }
    const norm = load('model.norm.weight', 'vector');
    const lmHead = config.tieWordEmbeddings ? embed : loadRows('lm_head.weight');
    return { embed, layers, norm, lmHead, dtype, ...(opts.trainable ? { trainable: true } : {}) };
  } catch (e) {
    gpu.release(...made);
    throw e;
  }
}

/** Each chunk of a matrix in row chunks, named `name` when whole, else by the tensor's label (`name[a:b]`). */
const chunkEntries = (name: string, chunks: RowChunks): Array<{ name: string; t: Tensor }> =>
  chunks.length === 1 ? [{ name, t: chunks[0] }] : chunks.map((t) => ({ name: t.label, t }));

/**
 * Rows per chunk of the embedding and the LM head on a device whose buffers bind `budget` bytes, checked
 * before anything is uploaded: every other tensor must fit one binding, and a matrix is split only where its
 * weights are frozen (full-parameter training updates them whole).
 */
function fitWeights(config: ModelConfig, dtype: DecoderWeights['dtype'], budget: number, file: string, trainable: boolean): number {
  const refuse = (name: string, shape: readonly number[], bytes: number, why: string): never => {
    throw new GpuError(
      'LIMIT',
      `${file}: "${name}" (${shape.join(' x ')}, ${dtype}) needs ${bytes} bytes, over this device's buffer binding limit of ${budget}; ${why}`,
      "use a device with larger limits (the CLI's --limits adapter, the lab without ?limits=default) or a smaller model",
    );
  };
  const { vocabSize: V, hiddenSize: C } = config;
  const size = dtype === 'f32' ? 4 : 2;
  for (const { name, shape } of expectedWeights(config)) {
    const bytes = numel(shape) * (shape.length === 2 ? size : 4);
    if (bytes > budget && !ROW_SPLIT.includes(name))
      refuse(name, shape, bytes, 'only the embedding and the LM head are split across buffers');
  }
  const rows = chunkRows(V, C, size, budget);
  const bytes = V * C * size;
  if (rows === null) refuse('model.embed_tokens.weight', [V, C], bytes, 'not even one of its rows fits');
  if (rows! < V && trainable)
    refuse('model.embed_tokens.weight', [V, C], bytes, 'full-parameter training needs it whole (only frozen weights are split)');
  return rows!;
}

/** The matrices uploadWeights may split by rows. */
const ROW_SPLIT: readonly string[] = ['model.embed_tokens.weight', 'lm_head.weight'];

/** Every distinct weight tensor (the tied lm_head once; a matrix split by rows chunk by chunk). */
export function weightTensors(w: DecoderWeights): Array<{ name: string; t: Tensor }> {
  const out = chunkEntries('model.embed_tokens.weight', w.embed);
  w.layers.forEach((l, i) => {
    out.push(
      { name: `model.layers.${i}.input_layernorm.weight`, t: l.inNorm },
      { name: `model.layers.${i}.post_attention_layernorm.weight`, t: l.postNorm },
    );
    for (const m of LINEAR_MODULES) {
      out.push({ name: weightName(i, m), t: l.linear[m] });
      const b = l.bias[m];
      if (b) out.push({ name: weightName(i, m, 'bias'), t: b });
    }
  });
  out.push({ name: 'model.norm.weight', t: w.norm });
  if (w.lmHead !== w.embed) out.push(...chunkEntries('lm_head.weight', w.lmHead));
  return out;
}

export function releaseWeights(gpu: Gpu, w: DecoderWeights): void {
  gpu.release(...weightTensors(w).map((x) => x.t));
  releaseFused(gpu, w);
}

function releaseFused(gpu: Gpu, w: DecoderWeights): void {
  for (const f of w.fused ?? []) gpu.release(f.qkv, f.qkvBias, f.gateUp, f.gateUpBias);
  delete w.fused;
}

/** Rebuilds the fused concatenations after per-module weights were written in place (if they exist). */
export function refreshFusedWeights(gpu: Gpu, w: DecoderWeights): void {
  if (!w.fused) return;
  releaseFused(gpu, w);
  fuseWeights(gpu, w);
}

/** rows (OUT_j, C) of the modules stacked into one (sum OUT_j, C) tensor by GPU copies. */
function concatRows(gpu: Gpu, parts: Tensor[], label: string): Tensor {
  const rows = parts.reduce((a, t) => a + t.shape[0], 0);
  const out = gpu.tensor([rows, parts[0].shape[1]], parts[0].dtype, label);
  let at = 0;
  for (const t of parts) {
    const bytes = byteSize(t.shape, t.dtype);
    gpu.copy(t, out, bytes, 0, at);
    at += bytes;
  }
  return out;
}

/** The modules' biases side by side (zeros for a module without one), or undefined when none has one. */
function concatBias(gpu: Gpu, l: LayerWeights, mods: LinearModule[], widths: number[], label: string): Tensor | undefined {
  if (!mods.some((m) => l.bias[m])) return undefined;
  const out = gpu.zeros([widths.reduce((a, b) => a + b, 0)], 'f32', label);
  let at = 0;
  mods.forEach((m, j) => {
    const b = l.bias[m];
    if (b) gpu.copy(b, out, widths[j] * 4, 0, at * 4);
    at += widths[j];
  });
  return out;
}

/**
 * Builds (once) the fused path's concatenated q/k/v and gate/up weights of frozen weights. Returns false,
 * building nothing, where they cannot be made: weights that full-parameter training updates in place
 * (a copy would go stale), 16-bit matrices with an odd element count (a copy starts on a 4-byte word), or
 * concatenations over one buffer binding.
 */
export function fuseWeights(gpu: Gpu, w: DecoderWeights): boolean {
  if (w.fused) return true;
  if (w.trainable) return false;
  const groups: LinearModule[][] = [
    ['q_proj', 'k_proj', 'v_proj'],
    ['gate_proj', 'up_proj'],
  ];
  if (is16(w.dtype) && w.layers.some((l) => groups.flat().some((m) => numel(l.linear[m].shape) % 2 !== 0))) return false;
  const budget = Math.min(gpu.limits.maxBufferSize, gpu.limits.maxStorageBufferBindingSize);
  const concatBytes = (l: LayerWeights, ms: LinearModule[]) => ms.reduce((a, m) => a + byteSize(l.linear[m].shape, w.dtype), 0);
  if (w.layers.some((l) => groups.some((ms) => concatBytes(l, ms) > budget))) return false;
  w.fused = w.layers.map((l, i) => {
    const [qkv, gu] = groups.map((ms) => ms.map((m) => l.linear[m]));
    return {
      qkv: concatRows(gpu, qkv, `model.layers.${i}.self_attn.qkv_proj.weight`),
      qkvBias: concatBias(
        gpu,
        l,
        groups[0],
        qkv.map((t) => t.shape[0]),
        `model.layers.${i}.self_attn.qkv_proj.bias`,
      ),
      gateUp: concatRows(gpu, gu, `model.layers.${i}.mlp.gate_up_proj.weight`),
      gateUpBias: concatBias(
        gpu,
        l,
        groups[1],
        gu.map((t) => t.shape[0]),
        `model.layers.${i}.mlp.gate_up_proj.bias`,
      ),
    };
  });
  return true;
}

/** Zero-filled f32 gradients shaped like every weight (full-parameter mode); same layout as the weights. */
export function createWeightGrads(gpu: Gpu, w: DecoderWeights): DecoderWeights {
  const g = (t: Tensor): Tensor => gpu.zeros(t.shape, 'f32', `d${t.label}`);
  const embed = w.embed.map(g);
  return {
    embed,
    layers: w.layers.map((l) => ({
      inNorm: g(l.inNorm),
      postNorm: g(l.postNorm),
      linear: Object.fromEntries(LINEAR_MODULES.map((m) => [m, g(l.linear[m])])) as Record<LinearModule, Tensor>,
      bias: Object.fromEntries(Object.entries(l.bias).map(([m, t]) => [m, g(t)])),
    })),
    norm: g(w.norm),
    lmHead: w.lmHead === w.embed ? embed : w.lmHead.map(g),
    dtype: 'f32',
  };
}
