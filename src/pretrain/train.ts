// Supervised full-parameter training of a tiny Llama-family model from random init, on the GPU: the base
// model the lab ships (public/models/<name>/) is made by this file. One step, as a flat list:
//   forward(save) -> logits (N, V) -> tokenLogprobs on the next-token targets (-1 on prompt and padding)
//   -> loss = mean NLL over completion tokens -> dlogp = -1/count on those rows -> tokenLogprobsBackward
//   (in place over the logits) -> decoder.backward into f32 grads of every weight -> optimizerStep (AdamW
//   with global-norm clipping, weight decay on matrices only), lr from a warmup + cosine schedule.
// Nothing is read back inside a step; the caller reads the (N) logp rows one step late for the loss.
// Then the model folder in Hugging Face format: config.json (llama), model.safetensors (F32 or BF16),
// the tokenizer files and generation_config.json, which loadDecoder reads back with identical logits.
// This module is data-agnostic: batches come from a callback (src/pretrain/data.ts makes them),
// evaluation is a callback too (layers: src/model does not import src/marft).
// Legend: B batch, T time, N = B*T rows, C channels, I intermediate, V vocab, L layers.

import type { Gpu } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { type ModelConfig, expectedWeights, parseModelConfig } from '../model/config.ts';
import { Decoder } from '../model/decoder.ts';
import { tokenLogprobs, tokenLogprobsBackward } from '../model/heads.ts';
import { type Optimizer, clearGrads, createOptimizer, optimizerStep, readOptimizerStats, releaseOptimizer } from '../model/optimizer.ts';
import { Rng } from '../common/rng.ts';
import { type FloatDType, type TensorView, writeSafetensors } from '../model/safetensors.ts';
import { type DecoderWeights, createWeightGrads, uploadWeights, weightTensors } from '../model/weights.ts';

export interface TinyDims {
  vocabSize: number;
  layers: number; // L
  hidden: number; // C
  heads: number; // NH
  kvHeads: number; // NKV
  intermediate: number; // I
  maxPositions: number;
  ropeTheta?: number;
  /** Special ids for config.json. */
  eosTokenId: number;
  padTokenId: number;
  bosTokenId?: number | null;
}

/** The recommended built-in size: about 4.6M parameters with a 512-token vocabulary. */
export const DEFAULT_TINY_DIMS = { layers: 6, hidden: 256, heads: 4, kvHeads: 2, intermediate: 688, maxPositions: 512 } as const;

/** config.json of a tiny Llama (tied embeddings, no biases, SiLU), as transformers writes it. */
export function tinyLlamaConfigJson(d: TinyDims): Record<string, unknown> {
  return {
    architectures: ['LlamaForCausalLM'],
    model_type: 'llama',
    vocab_size: d.vocabSize,
    hidden_size: d.hidden,
    intermediate_size: d.intermediate,
    num_hidden_layers: d.layers,
    num_attention_heads: d.heads,
    num_key_value_heads: d.kvHeads,
    head_dim: d.hidden / d.heads,
    hidden_act: 'silu',
    max_position_embeddings: d.maxPositions,
    rms_norm_eps: 1e-5,
    rope_theta: d.ropeTheta ?? 10000,
    rope_scaling: null,
    attention_bias: false,
    attention_dropout: 0,
    mlp_bias: false,
    tie_word_embeddings: true,
    initializer_range: 0.02,
    bos_token_id: d.bosTokenId ?? null,
    eos_token_id: d.eosTokenId,
    pad_token_id: d.padTokenId,
    torch_dtype: 'float32',
    use_cache: true,
  };
}

export const parameterCount = (config: ModelConfig): number =>
  expectedWeights(config).reduce((n, w) => n + w.shape.reduce((a, b) => a * b, 1), 0);

/**
 * Random init (GPT-2 style): matrices N(0, 0.02), the residual projections o_proj and down_proj scaled by
 * 1/sqrt(2L), norm weights 1. Seeded: the same seed gives the same model.
 */
export function initWeights(config: ModelConfig, seed: number, std = 0.02): Map<string, TensorView> {
  const rng = new Rng(seed);
  const out = new Map<string, TensorView>();
  const residual = std / Math.sqrt(2 * config.numLayers);
  for (const { name, shape } of expectedWeights(config)) {
    const n = shape.reduce((a, b) => a * b, 1);
    const v = new Float32Array(n);
    if (name.endsWith('norm.weight')) v.fill(1);
    else {
      const s = name.includes('o_proj') || name.includes('down_proj') ? residual : std;
      for (let i = 0; i < n; i++) v[i] = s * rng.normal();
    }
    out.set(name, { dtype: 'F32', shape, data: new Uint8Array(v.buffer) });
  }
  return out;
}

/** One training sequence: ids[promptLen..] are the completion, the only tokens with a loss. */
export interface PretrainExample {
  ids: readonly number[];
  promptLen: number;
}

export interface Batch {
  B: number;
  T: number;
  ids: Int32Array; // (B*T), right-padded
  mask: Int32Array; // (B*T) 1 real, 0 padding
  targets: Int32Array; // (B*T) the next token where it is a completion token, else -1
  /** Rows with a target. */
  count: number;
}

/**
 * Right-pads examples to one length T (the longest, rounded up to a multiple of `round` so few distinct
 * shapes reach the buffer pool, at most maxT; longer examples are cut at maxT). Position t predicts
 * ids[t + 1] when that token is part of the completion.
 */
export function makeBatch(examples: readonly PretrainExample[], padId: number, maxT: number, round = 16): Batch {
  if (examples.length === 0) throw new Error('makeBatch: no examples');
  const longest = Math.max(...examples.map((e) => e.ids.length));
  const T = Math.min(maxT, Math.ceil(longest / round) * round);
  const B = examples.length;
  const ids = new Int32Array(B * T).fill(padId);
  const mask = new Int32Array(B * T);
  const targets = new Int32Array(B * T).fill(-1);
  let count = 0;
  examples.forEach((e, b) => {
    const n = Math.min(e.ids.length, T);
    for (let t = 0; t < n; t++) {
      ids[b * T + t] = e.ids[t];
      mask[b * T + t] = 1;
      if (t + 1 < n && t + 1 >= e.promptLen) {
        targets[b * T + t] = e.ids[t + 1];
        count++;
      }
    }
  });
  return { B, T, ids, mask, targets, count };
}

export interface TrainHyper {
  lr: number;
  weightDecay?: number; // default 0.1, matrices only
  maxNorm?: number; // default 1
  beta1?: number; // default 0.9
  beta2?: number; // default 0.95
}

/** lr at `step` (0-based) of `total`: linear warmup, then cosine down to minFrac * peak. */
export function lrAt(step: number, total: number, peak: number, warmup: number, minFrac = 0.1): number {
  if (step < warmup) return (peak * (step + 1)) / warmup;
  const p = Math.min(1, (step - warmup) / Math.max(1, total - warmup));
  return peak * (minFrac + (1 - minFrac) * 0.5 * (1 + Math.cos(Math.PI * p)));
}

/** The model being trained: f32 weights, their grads and the optimiser (Adam moments and stats). */
export class Pretrainer {
  readonly decoder: Decoder;
  readonly grads: DecoderWeights;
  private readonly optim: Optimizer;
  step = 0;

  constructor(
    readonly gpu: Gpu,
    readonly config: ModelConfig,
    weights: Map<string, TensorView>,
  ) {
    this.decoder = new Decoder(
      gpu,
      config,
      uploadWeights(gpu, config, (n) => weights.get(n), { trainable: true }),
    );
    this.grads = createWeightGrads(gpu, this.decoder.weights);
    const ps = weightTensors(this.decoder.weights);
    const gs = weightTensors(this.grads);
    this.optim = createOptimizer(
      gpu,
      ps.map(({ name, t }, i) => {
        if (gs[i].name !== name) throw new Error(`Pretrainer: grads out of order at ${name}`);
        return { param: t, grad: gs[i].t, decay: t.shape.length > 1 };
      }),
    );
  }

  /**
   * One optimiser step on a batch. Returns the (N) logp rows (0 where no target) for the caller to read
   * and release; nothing is read back here.
   */
  trainStep(batch: Batch, hp: TrainHyper): Tensor {
    const g = this.gpu;
    const { B, T } = batch;
    const N = B * T;
    clearGrads(g, this.optim);
    const st = this.decoder.forward({ B, T, ids: batch.ids, mask: batch.mask }, { save: true });
    const logits = st.logits!; // (N, V)
    const targets = g.upload(batch.targets, [N], 'i32', 'pretrain.targets');
    const head = tokenLogprobs(g, logits, targets, 'pretrain');
    // loss = -(1/count) sum logp over target rows  =>  dlogp = -1/count there, 0 elsewhere
    const dl = new Float32Array(N);
    const inv = batch.count > 0 ? -1 / batch.count : 0;
    for (let i = 0; i < N; i++) if (batch.targets[i] >= 0) dl[i] = inv;
    tokenLogprobsBackward(g, head, logits, dl, null);
    this.decoder.backward(st, logits, null, this.grads);
    optimizerStep(g, this.optim, {
      lr: hp.lr,
      beta1: hp.beta1 ?? 0.9,
      beta2: hp.beta2 ?? 0.95,
      eps: 1e-8,
      weightDecay: hp.weightDecay ?? 0.1,
      maxNorm: hp.maxNorm ?? 1,
    });
    this.decoder.release(st);
    g.release(targets, head.entropy, head.lse);
    this.step++;
    return head.logp;
  }

  /** The optimiser's last gradient norm (before clipping) and the count of skipped (non-finite) steps. */
  async optimizerStats(): Promise<{ gradNorm: number; skipped: number }> {
    const s = await readOptimizerStats(this.gpu, this.optim);
    return { gradNorm: s.norm, skipped: s.skippedSteps };
  }

  release(): void {
    for (const grp of this.optim.groups) this.gpu.release(grp.params, grp.grads);
    releaseOptimizer(this.gpu, this.optim);
  }
}

/** Mean NLL of the target rows from a read-back (N) logp. */
export function meanNll(logp: Float32Array, batch: Pick<Batch, 'targets' | 'count'>): number {
  let s = 0;
  for (let i = 0; i < logp.length; i++) if (batch.targets[i] >= 0) s -= logp[i];
  return batch.count > 0 ? s / batch.count : 0;
}

export interface PretrainOptions extends TrainHyper {
  steps: number;
  /** Longest sequence in a batch (longer examples are cut). */
  seqLen: number;
  warmup?: number; // default min(100, steps / 10)
  minLrFrac?: number; // default 0.1
  padId: number;
  /** Batch lengths are rounded up to a multiple of this (fewer distinct buffer sizes). Default 32. */
  roundT?: number;
  /** Called every `logEvery` steps (and at the last) with the mean loss since the previous call. */
  logEvery?: number;
  onLog?: (p: PretrainProgress) => void;
  /** Evaluation every `evalEvery` steps (0 = only at the end), e.g. held-out accuracy. */
  evalEvery?: number;
  evaluate?: (decoder: Decoder, step: number) => Promise<Record<string, number>>;
  onEval?: (step: number, metrics: Record<string, number>) => void;
}

export interface PretrainProgress {
  step: number;
  steps: number;
  loss: number;
  lr: number;
  gradNorm: number;
  tokensPerSec: number; // all tokens (prompt included) of the batches, per wall-clock second
  etaSec: number;
  elapsedSec: number;
}

export interface PretrainResult {
  losses: number[]; // per step
  evals: Array<{ step: number; metrics: Record<string, number> }>;
  seconds: number;
}

/** The training loop: `nextBatch(step)` gives each step's examples. The loss of step s is read at step s + 1. */
export async function pretrain(
  trainer: Pretrainer,
  nextBatch: (step: number) => readonly PretrainExample[],
  o: PretrainOptions,
): Promise<PretrainResult> {
  const g = trainer.gpu;
  const warmup = o.warmup ?? Math.min(100, Math.floor(o.steps / 10));
  const logEvery = o.logEvery ?? 10;
  const losses: number[] = [];
  const evals: PretrainResult['evals'] = [];
  const t0 = performance.now();
  let tokens = 0;
  let windowLoss = 0;
  let windowN = 0;
  let pending: Promise<void> | null = null;
  const maxPos = trainer.config.maxPositionEmbeddings;
  for (let s = 0; s < o.steps; s++) {
    const batch = makeBatch(nextBatch(s), o.padId, Math.min(o.seqLen, maxPos), o.roundT ?? 32);
    const lr = lrAt(s, o.steps, o.lr, warmup, o.minLrFrac ?? 0.1);
    const logp = trainer.trainStep(batch, { ...o, lr });
    tokens += batch.mask.reduce((a, b) => a + b, 0);
    const read = g.readF32(logp); // the copy is recorded and submitted now; the buffer can go back
    g.release(logp);
    if (pending) await pending;
    pending = read.then((lp) => {
      const l = meanNll(lp, batch);
      losses.push(l);
      windowLoss += l;
      windowN++;
    });
    const last = s === o.steps - 1;
    if (last) await pending;
    if (o.onLog && ((s + 1) % logEvery === 0 || last)) {
      await pending;
      const { gradNorm } = await trainer.optimizerStats();
      const el = (performance.now() - t0) / 1000;
      o.onLog({
        step: s + 1,
        steps: o.steps,
        loss: windowN ? windowLoss / windowN : NaN,
        lr,
        gradNorm,
        tokensPerSec: tokens / el,
        etaSec: (el / (s + 1)) * (o.steps - s - 1),
        elapsedSec: el,
      });
      windowLoss = 0;
      windowN = 0;
    }
    if (o.evaluate && (last || (o.evalEvery && (s + 1) % o.evalEvery === 0))) {
      await pending;
      const metrics = await o.evaluate(trainer.decoder, s + 1);
      evals.push({ step: s + 1, metrics });
      o.onEval?.(s + 1, metrics);
    }
  }
  return { losses, evals, seconds: (performance.now() - t0) / 1000 };
}

export interface ModelFolderInput {
  config: Record<string, unknown>;
  tokenizerJson: object;
  tokenizerConfig: object;
  dtype?: FloatDType; // default F32
  /** Extra __metadata__ strings for model.safetensors (e.g. the training command). */
  metadata?: Record<string, string>;
}

/** The Hugging Face folder of a decoder's weights, as path -> contents (write it with node:fs or OPFS). */
export async function modelFolderFiles(
  gpu: Gpu,
  weights: DecoderWeights,
  input: ModelFolderInput,
): Promise<Record<string, Uint8Array | string>> {
  const config = parseModelConfig(input.config);
  const dtype = input.dtype ?? 'F32';
  const tensors = [];
  for (const { name, t } of weightTensors(weights)) tensors.push({ name, dtype, shape: t.shape, data: await gpu.readF32(t) });
  const names = new Set(tensors.map((t) => t.name));
  for (const w of expectedWeights(config)) if (!names.has(w.name)) throw new Error(`modelFolderFiles: no tensor for ${w.name}`);
  const json = (o: unknown): string => `${JSON.stringify(o, null, 2)}\n`;
  return {
    'config.json': json({ ...input.config, torch_dtype: dtype === 'F32' ? 'float32' : dtype === 'BF16' ? 'bfloat16' : 'float16' }),
    'model.safetensors': writeSafetensors(tensors, { format: 'pt', ...input.metadata }),
    'tokenizer.json': json(input.tokenizerJson),
    'tokenizer_config.json': json(input.tokenizerConfig),
    'generation_config.json': json({
      eos_token_id: config.eosTokenIds,
      pad_token_id: config.padTokenId,
      bos_token_id: config.bosTokenId,
      do_sample: true,
      temperature: 1.0,
      max_new_tokens: 128,
    }),
  };
}
