// The Llama/Qwen2 decoder as an ONNX graph (opset 17), the same forward as src/model/decoder.ts and
// transformers: token embedding, per layer RMSNorm -> q/k/v (+ biases) -> RoPE (HF rotate_half) -> causal
// GQA attention -> o_proj, RMSNorm -> SwiGLU MLP, final RMSNorm and the LM head (the embedding, transposed
// by a node, when tied). A LoRA adapter is merged into the weights beforehand (merge.ts).
//   inputs:  input_ids int64 (B, T); attention_mask int64 (B, T) unless withAttentionMask is false
//   output:  logits float32 (B, T, V)
// RoPE: cos/sin tables (P, HS) as initializers, computed in f32 as transformers does (freqs = inv_freq * pos
// rounded to f32, emb = cat(freqs, freqs)), gathered by position: cumsum(mask) - 1 clamped at 0 with a mask
// (HF's left-padding convention), arange(T) without. Keys where the mask is 0 and future keys are masked
// with Where(-FLT_MAX) before the softmax, so a row with no visible key (left padding) stays finite.
// GQA: q is reshaped to (B, NKV, NH/NKV, T, HS) and k, v broadcast over the group axis (q head h uses kv
// head h / (NH/NKV), HF's repeat_kv order), so no kv copy is made.
// Linear weights are stored transposed, (IN, OUT), named "<HF name>.T" (MatMul(x, W^T) without a node).
// Legend: B batch, T time, C channels, I intermediate, V vocab, NH heads, NKV kv heads, HS head size, P positions.

import { LINEAR_MODULES, type LinearModule, type ModelConfig, linearDims, moduleParent, ropeInvFreq } from '../config.ts';
import { GraphBuilder } from './graph.ts';
import { loraFactors, mergeTransposed } from './merge.ts';
import type { PeftAdapter } from '../peft.ts';

export const ONNX_OPSET = 17;

export interface DecoderGraphOptions {
  /** Add the attention_mask input (default true). Without it positions are 0..T-1 and only causality masks. */
  withAttentionMask?: boolean;
  /** Rows of the RoPE tables: the longest sequence the graph accepts (default max_position_embeddings). */
  maxPositions?: number;
}

/** (P, HS) cos and sin tables in transformers' f32 arithmetic (attention_scaling 1 for default/linear/llama3). */
export function ropeTables(config: ModelConfig, P: number): { cos: Float32Array; sin: Float32Array } {
  const inv = ropeInvFreq(config);
  const HS = config.headDim;
  const half = HS / 2;
  const cos = new Float32Array(P * HS);
  const sin = new Float32Array(P * HS);
  for (let p = 0; p < P; p++) {
    for (let i = 0; i < half; i++) {
      const f = Math.fround(inv[i] * Math.fround(p));
      cos[p * HS + i] = cos[p * HS + half + i] = Math.cos(f);
      sin[p * HS + i] = sin[p * HS + half + i] = Math.sin(f);
    }
  }
  return { cos, sin };
}

const FLT_MAX = 3.4028234663852886e38;

/**
 * Builds the graph. `weight(name)` returns an HF tensor as f32 in its stored layout ((OUT, IN) for
 * linears); `adapter` (optional) is merged into the linear weights it targets.
 */
export function buildDecoderGraph(
  config: ModelConfig,
  weight: (name: string) => Float32Array,
  adapter: PeftAdapter | null,
  opts: DecoderGraphOptions = {},
): GraphBuilder {
  const { vocabSize: V, hiddenSize: C, numHeads: NH, numKvHeads: NKV, headDim: HS } = config;
  const REP = NH / NKV;
  const withMask = opts.withAttentionMask ?? true;
  const P = opts.maxPositions ?? config.maxPositionEmbeddings;
  const g = new GraphBuilder(`${config.architecture}${adapter ? '+lora-merged' : ''}`);

  const ids = g.input({ name: 'input_ids', type: 'int64', shape: ['batch', 'sequence'] });
  const mask = withMask ? g.input({ name: 'attention_mask', type: 'int64', shape: ['batch', 'sequence'] }) : null;
  g.output({ name: 'logits', type: 'float32', shape: ['batch', 'sequence', V] });

  // ---- positions, RoPE tables, attention mask ----
  const T = g.op('Gather', [g.op('Shape', [ids]), g.int64([1], [])], { axis: 0 }); // scalar
  const zero = g.int64([0], []);
  const one = g.int64([1], []);
  const range = g.op('Range', [zero, T, one]); // (T)
  const pos = mask
    ? g.op('Max', [g.op('Sub', [g.op('CumSum', [mask, g.int64([1], [])]), one]), zero]) // (B, T)
    : g.op('Unsqueeze', [range, g.int64([0])]); // (1, T)
  const tables = ropeTables(config, P);
  const cosT = g.weight('rope.cos', 'float32', [P, HS], tables.cos);
  const sinT = g.weight('rope.sin', 'float32', [P, HS], tables.sin);
  const axis1 = g.int64([1]);
  const cos = g.op('Unsqueeze', [g.op('Gather', [cosT, pos], { axis: 0 }), axis1]); // (B|1, 1, T, HS)
  const sin = g.op('Unsqueeze', [g.op('Gather', [sinT, pos], { axis: 0 }), axis1]);
  // allowed[i, j] = j <= i (and mask[b, j]), broadcast against scores (B, NKV, REP, T, T)
  const causal = g.op('LessOrEqual', [g.op('Unsqueeze', [range, g.int64([0])]), g.op('Unsqueeze', [range, g.int64([1])])]); // (T, T)
  const allowed = mask
    ? g.op('And', [causal, g.op('Unsqueeze', [g.op('Cast', [mask], { to: 9 /* BOOL */ }), g.int64([1, 2, 3])])]) // (B, 1, 1, T, T)
    : causal;
  const negInf = g.float(-FLT_MAX);
  const scale = g.float(1 / Math.sqrt(HS));
  const epsilon = g.float(config.rmsNormEps);

  const rmsnorm = (x: string, w: string): string => {
    const ms = g.op('ReduceMean', [g.op('Mul', [x, x])], { axes: [-1], keepdims: 1 });
    const inv = g.op('Reciprocal', [g.op('Sqrt', [g.op('Add', [ms, epsilon])])]);
    return g.op('Mul', [g.weight(w, 'float32', [C], weight(w)), g.op('Mul', [x, inv])]);
  };
  const linear = (x: string, l: number, m: LinearModule): string => {
    const p = `model.layers.${l}.${moduleParent(m)}.${m}`;
    const d = linearDims(config, m);
    const wT = mergeTransposed(weight(`${p}.weight`), d.out, d.in, loraFactors(adapter, l, m));
    let y = g.op('MatMul', [x, g.weight(`${p}.weight.T`, 'float32', [d.in, d.out], wT)]);
    const hasBias = m === 'o_proj' ? config.oBias : moduleParent(m) === 'mlp' ? config.mlpBias : config.qkvBias;
    if (hasBias) y = g.op('Add', [y, g.weight(`${p}.bias`, 'float32', [d.out], weight(`${p}.bias`))]);
    return y;
  };
  const heads = (x: string, n: number): string => g.op('Transpose', [g.op('Reshape', [x, g.int64([0, 0, n, HS])])], { perm: [0, 2, 1, 3] }); // (B, n, T, HS)
  const rope = (x: string): string => {
    const [x1, x2] = g.node('Split', [x], { axis: -1 }, 2);
    const rot = g.op('Concat', [g.op('Neg', [x2]), x1], { axis: -1 });
    return g.op('Add', [g.op('Mul', [x, cos]), g.op('Mul', [rot, sin])]);
  };

  let x = g.op('Gather', [g.weight('model.embed_tokens.weight', 'float32', [V, C], weight('model.embed_tokens.weight')), ids], { axis: 0 }); // (B, T, C)
  for (let l = 0; l < config.numLayers; l++) {
    const p = `model.layers.${l}`;
    // attention block
    const h = rmsnorm(x, `${p}.input_layernorm.weight`);
    const q = rope(heads(linear(h, l, 'q_proj'), NH)); // (B, NH, T, HS)
    const k = rope(heads(linear(h, l, 'k_proj'), NKV)); // (B, NKV, T, HS)
    const v = heads(linear(h, l, 'v_proj'), NKV);
    const q5 = g.op('Reshape', [q, g.int64([0, NKV, REP, -1, HS])]); // (B, NKV, REP, T, HS)
    const kT = g.op('Transpose', [g.op('Unsqueeze', [k, g.int64([2])])], { perm: [0, 1, 2, 4, 3] }); // (B, NKV, 1, HS, T)
    const v5 = g.op('Unsqueeze', [v, g.int64([2])]); // (B, NKV, 1, T, HS)
    const scores = g.op('Where', [allowed, g.op('Mul', [g.op('MatMul', [q5, kT]), scale]), negInf]); // (B, NKV, REP, T, T)
    const att5 = g.op('MatMul', [g.op('Softmax', [scores], { axis: -1 }), v5]); // (B, NKV, REP, T, HS)
    const att = g.op('Reshape', [
      g.op('Transpose', [g.op('Reshape', [att5, g.int64([0, NH, -1, HS])])], { perm: [0, 2, 1, 3] }),
      g.int64([0, 0, NH * HS]),
    ]); // (B, T, NH*HS)
    x = g.op('Add', [x, linear(att, l, 'o_proj')]);
    // MLP block
    const h2 = rmsnorm(x, `${p}.post_attention_layernorm.weight`);
    const gate = linear(h2, l, 'gate_proj');
    const act = g.op('Mul', [g.op('Mul', [gate, g.op('Sigmoid', [gate])]), linear(h2, l, 'up_proj')]);
    x = g.op('Add', [x, linear(act, l, 'down_proj')]);
  }
  const hN = rmsnorm(x, 'model.norm.weight');
  const lmT = config.tieWordEmbeddings
    ? g.op('Transpose', ['model.embed_tokens.weight'], { perm: [1, 0] })
    : g.weight('lm_head.weight.T', 'float32', [C, V], mergeTransposed(weight('lm_head.weight'), V, C, null));
  g.op('MatMul', [hN, lmT], {}, 'logits');
  return g;
}

/** The linear modules an adapter touches, for messages. */
export const adaptedModules = (adapter: PeftAdapter): LinearModule[] =>
  LINEAR_MODULES.filter((m) => adapter.layers.some((layer) => layer[m]));
