// A forward's input batch, its options, and the state it leaves for the backward; the batch's checks and
// upload. Legend as in decoder.ts.

import type { Gpu } from '../gpu/gpu.ts';
import { shapeError } from '../gpu/errors.ts';
import type { Tensor } from '../gpu/tensor.ts';
import type { LinearModule, ModelConfig } from './config.ts';
import type { KvCache } from './kv-cache.ts';
import type { LoraSet } from './lora-set.ts';

export interface BatchInput {
  B: number;
  T: number;
  /** (B*T) token ids, row-major by sequence. */
  ids: Int32Array;
  /** (B*T) 1 = real token, 0 = padding (left or right). Default: all real. */
  mask?: Int32Array;
  /** (B*T) RoPE positions. Default: the count of real tokens before each one (HF's cumsum(mask) - 1). */
  pos?: Int32Array;
  /** The LoRA adapters `slots` index (e.g. one slot per agent). Default: none. */
  adapters?: LoraSet | null;
  /** (B) adapter slot of each sequence; -1 = no adapter (the reference policy). Default: all -1. */
  slots?: Int32Array;
  /** The ids already on the GPU, (B*T) i32 (generation feeds sampled tokens back without a readback). */
  idsGpu?: Tensor;
  /**
   * Positions and slots already on the GPU, (B*T) and (B) i32, used instead of uploading `pos` / `slots`
   * (which are still given for checking): generation's decode steps then write nothing to the queue, so
   * the steps between two readbacks go to the GPU in one submit. The caller keeps ownership.
   */
  posGpu?: Tensor;
  slotsGpu?: Tensor;
}

/** What a layer's backward needs of its forward. */
export interface LayerSaved {
  rstd1: Tensor;
  h1: Tensor; // (N) (N, C)
  q: Tensor;
  k: Tensor;
  v: Tensor; // (B, T, NH|NKV, HS), q and k after RoPE
  att: Tensor;
  lse: Tensor; // (B, T, NH, HS) (B, NH, T)
  xMid: Tensor;
  rstd2: Tensor;
  h2: Tensor; // (N, C) (N) (N, C)
  g: Tensor;
  u: Tensor;
  a: Tensor; // (N, I)
  loraH: Partial<Record<LinearModule, Tensor>>; // (N, R) per adapted module
}

export interface ForwardState {
  B: number;
  T: number;
  N: number;
  idsHost: Int32Array;
  ids: Tensor;
  pos: Tensor;
  slots: Tensor;
  mask: Tensor | null;
  /** The adapters this forward ran with; backward accumulates their gradients. */
  adapters: LoraSet | null;
  /** Residual stream before each layer and after the last: xs[l] (N, C), L + 1 of them (saved runs). */
  xs: Tensor[];
  layers: LayerSaved[];
  rstdF: Tensor;
  /** Final normed hidden state (N, C): the value head's input. */
  hN: Tensor;
  /** (N, V), (M, V) at logitRows, (B, V) when only the last position's logits were asked for, or null. */
  logits: Tensor | null;
  /** ForwardOptions.logitRows, and hN's rows there (M, C), the LM head's input: kept for backward. */
  logitRows: Int32Array | null;
  hRows: Tensor | null;
  /** Run with save (layers kept, or recomputed from xs by backward when save was 'checkpoint'). */
  saved: boolean;
}

export interface ForwardOptions {
  /**
   * Keep activations for backward(). Default false: temporaries go back to the pool as soon as used.
   * 'checkpoint' keeps only the residual stream entering each layer (N*C per layer instead of about
   * 8*N*C + 3*N*I) and backward() recomputes one layer at a time: one more forward per update step
   * (an estimated third more update compute, not measured on its own) for a fraction of the memory.
   */
  save?: boolean | 'checkpoint';
  /** 'all' positions (training), 'last' position of each sequence (sampling), or 'none' (value head only). */
  logits?: 'all' | 'last' | 'none';
  /**
   * With logits 'all': only these rows of the B*T (e.g. a batch's action rows), in this order, so logits
   * are (M, V). The LM head's work and the logits' memory then scale with the rows scored, not the tokens.
   */
  logitRows?: Int32Array;
  /** Generation: append this batch's keys and values to the cache and attend over all cached positions. */
  cache?: KvCache;
}

/** Default RoPE positions: the number of real tokens before each token, clamped at 0 (as the fixtures' HF call). */
export function defaultPositions(B: number, T: number, mask: Int32Array): Int32Array {
  const pos = new Int32Array(B * T);
  for (let b = 0; b < B; b++) {
    let c = 0;
    for (let t = 0; t < T; t++) {
      c += mask[b * T + t] ? 1 : 0;
      pos[b * T + t] = Math.max(0, c - 1);
    }
  }
  return pos;
}

/** Checks a list of rows of a forward's N = B*T: non-empty, each an integer in 0..N-1. */
export function checkRows(op: string, name: string, rows: Int32Array, N: number): void {
  if (!rows.length || rows.some((r) => !Number.isInteger(r) || r < 0 || r >= N))
    shapeError(op, `${name} must be a non-empty list of rows in 0..${N - 1}`);
}

/** Checks a batch against the model and uploads its ids, positions, slots and mask (those not already on the GPU). */
export function uploadInputs(g: Gpu, config: ModelConfig, inp: BatchInput): Pick<ForwardState, 'ids' | 'pos' | 'slots' | 'mask'> {
  const { B, T } = inp;
  const N = B * T;
  const op = 'Decoder.forward';
  if (!Number.isInteger(B) || !Number.isInteger(T) || B < 1 || T < 1) shapeError(op, `B and T must be positive integers, got ${B}, ${T}`);
  if (!inp.idsGpu && inp.ids.length !== N) shapeError(op, `ids has ${inp.ids.length} values, B*T = ${N}`);
  if (inp.idsGpu && (inp.idsGpu.dtype !== 'i32' || inp.idsGpu.shape.length !== 1 || inp.idsGpu.shape[0] !== N)) {
    shapeError(op, `idsGpu must be (${N}) i32, got [${inp.idsGpu.shape.join(', ')}] ${inp.idsGpu.dtype}`);
  }
  if (inp.mask && inp.mask.length !== N) shapeError(op, `mask has ${inp.mask.length} values, B*T = ${N}`);
  if (inp.pos && inp.pos.length !== N) shapeError(op, `pos has ${inp.pos.length} values, B*T = ${N}`);
  if (inp.slots && inp.slots.length !== B) shapeError(op, `slots has ${inp.slots.length} values, B = ${B}`);
  const V = config.vocabSize;
  if (!inp.idsGpu)
    for (let i = 0; i < N; i++)
      if (inp.ids[i] < 0 || inp.ids[i] >= V) shapeError(op, `token id ${inp.ids[i]} at ${i} is outside the vocabulary (0..${V - 1})`);
  const S = inp.adapters?.spec.slots ?? 0;
  if (inp.slots) for (const s of inp.slots) if (s >= S || s < -1) shapeError(op, `adapter slot ${s} is outside -1..${S - 1}`);
  if (T > config.maxPositionEmbeddings) shapeError(op, `T = ${T} exceeds max_position_embeddings ${config.maxPositionEmbeddings}`);
  const maskHost = inp.mask ?? new Int32Array(N).fill(1);
  const padded = maskHost.some((m) => m === 0);
  const onGpu = (t: Tensor | undefined, n: number, name: string): Tensor | null => {
    if (!t) return null;
    if (t.dtype !== 'i32' || t.shape.length !== 1 || t.shape[0] !== n)
      shapeError(op, `${name} must be (${n}) i32, got [${t.shape.join(', ')}] ${t.dtype}`);
    return { ...t, pooled: false };
  };
  return {
    ids: inp.idsGpu ? { ...inp.idsGpu, pooled: false } : g.upload(inp.ids, [N], 'i32', 'ids'),
    pos: onGpu(inp.posGpu, N, 'posGpu') ?? g.upload(inp.pos ?? defaultPositions(B, T, maskHost), [N], 'i32', 'pos'),
    slots: onGpu(inp.slotsGpu, B, 'slotsGpu') ?? g.upload(inp.slots ?? new Int32Array(B).fill(-1), [B], 'i32', 'slots'),
    mask: padded ? g.upload(maskHost, [B, T], 'i32', 'mask') : null,
  };
}
