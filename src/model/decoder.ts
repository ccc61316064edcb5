// The Llama/Qwen2 decoder on WebGPU: forward over a batch of padded sequences, keeping what the backward
// needs, and a hand-written backward (llm.c style) to the LoRA adapters, to every weight in full-parameter
// mode, and to the final hidden state for a value head. The adapter set is an input of each forward (the
// decoder holds only the frozen weights), and each sequence carries its slot in that set; backward
// accumulates into the set its forward ran with.
// Legend: B batch, T time, N = B*T rows, C channels, I intermediate, V vocab, L layers, NH heads,
// NKV kv heads, HS head size, R LoRA rank.
// Backward rule: parameter grads accumulate (+=), activation grads assign (=), except the residual
// stream's gradient dx, which accumulates the two branches of every layer.
// The fused path (DecoderOptions.fused) runs each layer's projections as groups (kernels/fused): q/k/v
// and gate/up as one matmul each over weights concatenated at load, o and down alone, each with its
// LoRA expand, bias and epilogue (residual add, SwiGLU) inside, after one LoRA shrink per group; RoPE
// with the q/k/v split and the KV-cache append; without save, each RMSNorm folds into the group after it.
// It saves the same tensors for backward, which is shared.

import { addInto } from '../../kernels/elementwise/elementwise.ts';
import { attentionBackward, attentionForward } from '../../kernels/attention/attention.ts';
import { embeddingBackward, embeddingForward } from '../../kernels/embedding/embedding.ts';
import {
  FUSED_GEMV_ROWS, type Epilogue, type FusedForm, type LoraGroup, type RowNorm, catLoraGroup, fusedForm, fusedLinear, groupPrologue, inlinePrologue, prologueSize, releaseLoraGroup, ropeKv,
} from '../../kernels/fused/fused.ts';
import { kvAppend } from '../../kernels/kvcache/kvcache.ts';
import { loraBackward, loraForward } from '../../kernels/lora/lora.ts';
import { matmul, matmulBackward } from '../../kernels/matmul/matmul.ts';
import { rmsnormBackward, rmsnormForward } from '../../kernels/rmsnorm/rmsnorm.ts';
import { type RopeFreq, ropeBackward, ropeForward } from '../../kernels/rope/rope.ts';
import { swigluBackward, swigluForward } from '../../kernels/swiglu/swiglu.ts';
import type { Gpu } from '../gpu/gpu.ts';
import { shapeError } from '../gpu/errors.ts';
import { type Tensor, view } from '../gpu/tensor.ts';
import { type LinearModule, type ModelConfig, linearDims, ropeInvFreq } from './config.ts';
import { selectRows, selectRowsBackward } from './heads.ts';
import type { LoraSet } from './lora-set.ts';
import { type DecoderWeights, fuseWeights } from './weights.ts';

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

/**
 * Keys and values of earlier positions, per layer (B, Tcap, NKV, HS), for generation. mask (B, Tcap) marks
 * the real positions (prompt padding 0; every later position 1); `length` positions are filled.
 */
export interface KvCache {
  B: number;
  capacity: number;
  length: number;
  k: Tensor[];
  v: Tensor[];
  mask: Tensor;
  /**
   * `length` on the GPU, (1) i32, kept equal to it by its owner before each forward. Where given, the decode
   * kernels (RoPE + append, attention) read it instead of a uniform, so a decode step's dispatches are the
   * same at every step and a Gpu recording of one replays them (Decoder.replaysDecode).
   */
  lengthGpu?: Tensor;
}

export function createKvCache(gpu: Gpu, config: ModelConfig, B: number, capacity: number, promptMask: Int32Array, promptLen: number): KvCache {
  const { numKvHeads: NKV, headDim: HS, numLayers: L } = config;
  const mask = new Int32Array(B * capacity).fill(1);
  for (let b = 0; b < B; b++) for (let t = 0; t < promptLen; t++) mask[b * capacity + t] = promptMask[b * promptLen + t];
  return {
    B, capacity, length: 0,
    k: Array.from({ length: L }, (_, l) => gpu.tensor([B, capacity, NKV, HS], 'f32', `kv.k${l}`)),
    v: Array.from({ length: L }, (_, l) => gpu.tensor([B, capacity, NKV, HS], 'f32', `kv.v${l}`)),
    mask: gpu.upload(mask, [B, capacity], 'i32', 'kv.mask'),
  };
}

export function releaseKvCache(gpu: Gpu, c: KvCache): void {
  gpu.release(...c.k, ...c.v, c.mask);
}

interface LayerSaved {
  rstd1: Tensor; h1: Tensor; // (N) (N, C)
  q: Tensor; k: Tensor; v: Tensor; // (B, T, NH|NKV, HS), q and k after RoPE
  att: Tensor; lse: Tensor; // (B, T, NH, HS) (B, NH, T)
  xMid: Tensor; rstd2: Tensor; h2: Tensor; // (N, C) (N) (N, C)
  g: Tensor; u: Tensor; a: Tensor; // (N, I)
  loraH: Partial<Record<LinearModule, Tensor>>; // (N, R) per adapted module
}

export interface ForwardState {
  B: number; T: number; N: number;
  idsHost: Int32Array;
  ids: Tensor; pos: Tensor; slots: Tensor; mask: Tensor | null;
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
function checkRows(op: string, name: string, rows: Int32Array, N: number): void {
  if (!rows.length || rows.some((r) => !Number.isInteger(r) || r < 0 || r >= N)) shapeError(op, `${name} must be a non-empty list of rows in 0..${N - 1}`);
}

/** The fused path's groups of projections: q/k/v and gate/up as one matmul each, o and down alone. */
const FUSED_GROUPS: ReadonlyArray<readonly LinearModule[]> = [['q_proj', 'k_proj', 'v_proj'], ['o_proj'], ['gate_proj', 'up_proj'], ['down_proj']];
const [QKV, O, GATE_UP, DOWN] = FUSED_GROUPS;

export interface DecoderOptions {
  /**
   * The fused path (kernels/fused): about a third of the dispatches per layer, and decode steps that a Gpu
   * recording replays (generate()). Default: on for GPU adapters, off on CPU adapters (Gpu.cpu), where the
   * unfused kernels give the same bits in less time. On a GPU it runs forwards of at most FUSED_GEMV_ROWS rows
   * (decode steps of up to 128 sequences, fusedForm 'gemv'); longer ones (prefill, scoring, training) go unfused, whose tiled
   * matmuls beat the fused kernel's barrier-free blocks there. It needs frozen weights, whose q/k/v and
   * gate/up it concatenates once (a second copy of those matrices in GPU memory: fused: false saves it);
   * full-parameter training (trainable weights) always runs unfused. On an H200 it took the 135M iteration
   * from 6.47 s to 3.14 s (BENCHMARKS.md, "Decode without the CPU in the loop").
   */
  fused?: boolean;
  /**
   * The fused kernels' form for forwards of at most FUSED_GEMV_ROWS rows (default fusedForm: 'gemv' on GPUs,
   * 'direct' on CPU adapters). 'gemv' on a CPU adapter lets the tests run the GPU's decode kernels, the
   * prologue inside the matmul included.
   */
  fusedForm?: FusedForm;
  /**
   * The gemv form computes each group's prologue (norm, LoRA h) inside its matmul where it fits
   * (inlinePrologue). Default true; false runs it as its own dispatch (bench/decode-step.ts compares them).
   */
  inlinePrologue?: boolean;
}

export class Decoder {
  readonly freq: RopeFreq;
  /** Whether forwards run the fused path. */
  readonly fused: boolean;
  private ones: Tensor | null = null;
  /** The fused path's LoRA groups of the pinned adapter sets (pinAdapters), by `layer:modules`. */
  private readonly pinned = new Map<LoraSet, Map<string, LoraGroup>>();
  private readonly form?: FusedForm;
  private readonly inline: boolean;

  constructor(
    readonly gpu: Gpu,
    readonly config: ModelConfig,
    readonly weights: DecoderWeights,
    opts: DecoderOptions = {},
  ) {
    const c = config;
    this.freq = c.ropeScaling ? gpu.upload(ropeInvFreq(c), [c.headDim / 2], 'f32', 'rope.inv_freq') : c.ropeTheta;
    if (opts.fused && weights.trainable) shapeError('Decoder', 'the fused path needs frozen weights; full-parameter training runs with fused: false');
    this.fused = (opts.fused ?? !gpu.cpu) && fuseWeights(gpu, weights);
    this.form = opts.fusedForm;
    this.inline = opts.inlinePrologue ?? true;
  }

  /** The fused kernels' form for a forward of N rows. */
  private formOf(N: number): FusedForm {
    return this.form === 'gemv' && N <= FUSED_GEMV_ROWS ? 'gemv' : fusedForm(this.gpu, N);
  }

  /** Uploads a batch's ids, positions, slots and mask. */
  private inputs(inp: BatchInput): Pick<ForwardState, 'ids' | 'pos' | 'slots' | 'mask'> {
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
    const V = this.config.vocabSize;
    if (!inp.idsGpu) for (let i = 0; i < N; i++) if (inp.ids[i] < 0 || inp.ids[i] >= V) shapeError(op, `token id ${inp.ids[i]} at ${i} is outside the vocabulary (0..${V - 1})`);
    const S = inp.adapters?.spec.slots ?? 0;
    if (inp.slots) for (const s of inp.slots) if (s >= S || s < -1) shapeError(op, `adapter slot ${s} is outside -1..${S - 1}`);
    if (T > this.config.maxPositionEmbeddings) shapeError(op, `T = ${T} exceeds max_position_embeddings ${this.config.maxPositionEmbeddings}`);
    const g = this.gpu;
    const maskHost = inp.mask ?? new Int32Array(N).fill(1);
    const padded = maskHost.some((m) => m === 0);
    const onGpu = (t: Tensor | undefined, n: number, name: string): Tensor | null => {
      if (!t) return null;
      if (t.dtype !== 'i32' || t.shape.length !== 1 || t.shape[0] !== n) shapeError(op, `${name} must be (${n}) i32, got [${t.shape.join(', ')}] ${t.dtype}`);
      return { ...t, pooled: false };
    };
    return {
      ids: inp.idsGpu ? { ...inp.idsGpu, pooled: false } : g.upload(inp.ids, [N], 'i32', 'ids'),
      pos: onGpu(inp.posGpu, N, 'posGpu') ?? g.upload(inp.pos ?? defaultPositions(B, T, maskHost), [N], 'i32', 'pos'),
      slots: onGpu(inp.slotsGpu, B, 'slotsGpu') ?? g.upload(inp.slots ?? new Int32Array(B).fill(-1), [B], 'i32', 'slots'),
      mask: padded ? g.upload(maskHost, [B, T], 'i32', 'mask') : null,
    };
  }

  /** out (N, OUT) = x W^T (+ bias) (+= when accumulate) plus the LoRA update of module m; returns the saved LoRA h. */
  private linear(out: Tensor, x: Tensor, l: number, m: LinearModule, st: ForwardState, accumulate = false): Tensor | undefined {
    const w = this.weights.layers[l];
    matmul(this.gpu, out, x, w.linear[m], { transB: true, bias: w.bias[m], accumulate });
    const lora = st.adapters;
    const p = lora?.layers[l][m];
    if (!lora || !p) return undefined;
    const h = this.gpu.tensor([st.N, lora.spec.r], 'f32', `lora.h.${l}.${m}`);
    loraForward(this.gpu, out, h, x, st.slots, p.A, p.B, st.T, lora.scale);
    return h;
  }

  forward(inp: BatchInput, opts: ForwardOptions = {}): ForwardState {
    const g = this.gpu;
    const c = this.config;
    const { B, T } = inp;
    const N = B * T;
    const C = c.hiddenSize;
    const save = opts.save ?? false;
    const cache = opts.cache;
    if (cache && save) shapeError('Decoder.forward', 'a cached (generation) forward cannot be saved for backward');
    if (cache && (cache.B !== B || cache.length + T > cache.capacity)) {
      shapeError('Decoder.forward', `the KV cache holds ${cache.B} sequences with ${cache.capacity - cache.length} free positions; the batch has ${B} x ${T}`);
    }
    const rows = opts.logitRows;
    if (rows && (opts.logits ?? 'all') !== 'all') shapeError('Decoder.forward', `logitRows needs logits 'all', got '${opts.logits}'`);
    if (rows) checkRows('Decoder.forward', 'logitRows', rows, N);
    const st: ForwardState = {
      B, T, N, idsHost: inp.ids, ...this.inputs(inp), adapters: inp.adapters ?? null, xs: [], layers: [],
      rstdF: null as unknown as Tensor, hN: null as unknown as Tensor, logits: null, logitRows: null, hRows: null, saved: save !== false,
    };
    let x = g.tensor([N, C], 'f32', 'x0');
    embeddingForward(g, x, st.ids, this.weights.embed);
    st.xs.push(x);
    for (let l = 0; l < c.numLayers; l++) {
      // Checkpointed runs keep only the residual stream; backward() recomputes each layer from it.
      const { xNext, saved } = this.layer(l, x, st, save === true, cache);
      if (saved) st.layers.push(saved);
      if (save) st.xs.push(xNext);
      else if (l > 0) g.release(x);
      x = xNext;
    }
    if (!save) { if (c.numLayers > 0) g.release(st.xs[0]); st.xs = [x]; }
    if (cache) cache.length += T;
    st.rstdF = g.tensor([N], 'f32', 'rstdF');
    st.hN = g.tensor([N, C], 'f32', 'hN');
    rmsnormForward(g, st.hN, st.rstdF, x, this.weights.norm, c.rmsNormEps);
    const mode = opts.logits ?? 'all';
    if (mode === 'all' && rows) {
      const r = this.logitsAt(st, rows);
      st.logitRows = rows;
      st.hRows = r.hRows;
      st.logits = r.logits;
    } else if (mode === 'all') {
      st.logits = g.tensor([N, c.vocabSize], 'f32', 'logits');
      matmul(g, st.logits, st.hN, this.weights.lmHead, { transB: true });
    } else if (mode === 'last') {
      // the last position of each sequence: (B, C); with T = 1 (a decode step) that is every row, and
      // skipping the row selection keeps the step free of uploads
      const hLast = T === 1 ? st.hN : selectRows(g, st.hN, Int32Array.from({ length: B }, (_, b) => b * T + T - 1), 'hN.last');
      st.logits = g.tensor([B, c.vocabSize], 'f32', 'logits.last');
      matmul(g, st.logits, hLast, this.weights.lmHead, { transB: true });
      if (hLast !== st.hN) g.release(hLast);
    }
    return st;
  }

  /**
   * The LM head on hN's rows `rows` of a forward (any forward, e.g. one run with logits 'none'): new (M, V)
   * logits and their (M, C) input rows, the caller's to release. Scoring takes the policy's and the
   * reference's logits this way from one forward over both (marft/score.ts).
   */
  logitsAt(st: ForwardState, rows: Int32Array): { logits: Tensor; hRows: Tensor } {
    checkRows('Decoder.logitsAt', 'rows', rows, st.N);
    const hRows = selectRows(this.gpu, st.hN, rows, 'hN.rows');
    const logits = this.gpu.tensor([rows.length, this.config.vocabSize], 'f32', 'logits');
    matmul(this.gpu, logits, hRows, this.weights.lmHead, { transB: true });
    return { logits, hRows };
  }

  /**
   * One decoder layer on the residual stream x (N, C) -> xNext. With `save`, returns what its backward needs
   * (x itself stays the caller's); without, every temporary goes back to the pool as soon as it is used.
   */
  private layer(l: number, x: Tensor, st: ForwardState, save: boolean, cache?: KvCache): { xNext: Tensor; saved: LayerSaved | null } {
    if (this.fused && (this.gpu.cpu || st.N <= FUSED_GEMV_ROWS)) return this.fusedLayer(l, x, st, save, cache);
    const g = this.gpu;
    const c = this.config;
    const { B, T, N } = st;
    const { hiddenSize: C, intermediateSize: I, numHeads: NH, numKvHeads: NKV, headDim: HS } = c;
    const drop = (...ts: Array<Tensor | undefined>): void => { if (!save) g.release(...ts); };
    const w = this.weights.layers[l];
    const s = {} as LayerSaved;
    s.loraH = {};
    // attention block: xMid = x + o(attention(rope(q), rope(k), v))
    s.rstd1 = g.tensor([N], 'f32', 'rstd1');
    s.h1 = g.tensor([N, C], 'f32', 'h1');
    rmsnormForward(g, s.h1, s.rstd1, x, w.inNorm, c.rmsNormEps);
    const q2 = g.tensor([N, NH * HS], 'f32', 'q');
    const k2 = g.tensor([N, NKV * HS], 'f32', 'k');
    const v2 = g.tensor([N, NKV * HS], 'f32', 'v');
    s.loraH.q_proj = this.linear(q2, s.h1, l, 'q_proj', st);
    s.loraH.k_proj = this.linear(k2, s.h1, l, 'k_proj', st);
    s.loraH.v_proj = this.linear(v2, s.h1, l, 'v_proj', st);
    s.q = view(q2, [B, T, NH, HS]);
    s.k = view(k2, [B, T, NKV, HS]);
    s.v = view(v2, [B, T, NKV, HS]);
    ropeForward(g, s.q, s.k, s.q, s.k, st.pos, this.freq);
    const att2 = g.tensor([N, NH * HS], 'f32', 'att');
    s.att = view(att2, [B, T, NH, HS]);
    s.lse = g.tensor([B, NH, T], 'f32', 'lse');
    if (cache) {
      const len = cache.lengthGpu;
      kvAppend(g, cache.k[l], s.k, cache.length, len);
      kvAppend(g, cache.v[l], s.v, cache.length, len);
      attentionForward(g, s.att, s.lse, s.q, cache.k[l], cache.v[l], { mask: cache.mask, Tk: cache.length + T, ...(len ? { TkGpu: len, split: true } : {}) });
    } else {
      attentionForward(g, s.att, s.lse, s.q, s.k, s.v, { mask: st.mask ?? undefined });
    }
    drop(s.h1, q2, k2, v2, s.rstd1, s.loraH.q_proj, s.loraH.k_proj, s.loraH.v_proj);
    s.xMid = g.tensor([N, C], 'f32', 'xMid');
    s.loraH.o_proj = this.linear(s.xMid, att2, l, 'o_proj', st);
    addInto(g, s.xMid, x);
    drop(att2, s.lse, s.loraH.o_proj);
    // MLP block: xNext = xMid + down(silu(gate(h2)) * up(h2))
    s.rstd2 = g.tensor([N], 'f32', 'rstd2');
    s.h2 = g.tensor([N, C], 'f32', 'h2');
    rmsnormForward(g, s.h2, s.rstd2, s.xMid, w.postNorm, c.rmsNormEps);
    s.g = g.tensor([N, I], 'f32', 'gate');
    s.u = g.tensor([N, I], 'f32', 'up');
    s.loraH.gate_proj = this.linear(s.g, s.h2, l, 'gate_proj', st);
    s.loraH.up_proj = this.linear(s.u, s.h2, l, 'up_proj', st);
    s.a = g.tensor([N, I], 'f32', 'act');
    swigluForward(g, s.a, s.g, s.u);
    drop(s.h2, s.rstd2, s.g, s.u, s.loraH.gate_proj, s.loraH.up_proj);
    const xNext = g.tensor([N, C], 'f32', `x${l + 1}`);
    s.loraH.down_proj = this.linear(xNext, s.a, l, 'down_proj', st);
    addInto(g, xNext, s.xMid);
    drop(s.a, s.xMid, s.loraH.down_proj);
    return { xNext, saved: save ? s : null };
  }

  /**
   * One group of projections on the fused path: its prologue (the LoRA shrink of its adapted modules, and
   * the RMSNorm when `norm` folds it in), then the fused matmul with its epilogue. With `saveH`, each
   * adapted module's h lands there as its own (N, R) tensor, as the backward reads it.
   */
  private group(
    l: number, mods: readonly LinearModule[], out: Tensor, x: Tensor, w: Tensor, st: ForwardState,
    opts: { bias?: Tensor; norm?: RowNorm; epilogue: Epilogue }, saveH: LayerSaved['loraH'] | null,
  ): void {
    const g = this.gpu;
    const set = st.adapters;
    const pinned = set ? this.pinned.get(set) : undefined;
    const group = pinned ? pinned.get(`${l}:${mods.join('+')}`) ?? null : set && catLoraGroup(g, mods.map((m) => set.layers[l][m]), `lora.${l}.${mods.join('+')}`);
    const lora = set && group ? { group, slots: st.slots, T: st.T, scale: set.scale } : undefined;
    const form = this.formOf(st.N);
    const outs = mods.map((m) => linearDims(this.config, m).out);
    const lin = { ...opts, lora, form };
    // the gemv form computes the prologue inside its matmul where it fits (not when h is saved for the backward)
    const inline = this.inline && form === 'gemv' && !saveH && inlinePrologue(g, st.N, outs, lin) !== null;
    const size = inline ? 0 : prologueSize(st.N, lin);
    const h = size ? g.tensor([size], 'f32', `prologue.${l}`) : undefined;
    if (h) groupPrologue(g, h, x, lin, form);
    fusedLinear(g, out, x, w, outs, { ...lin, h, inline });
    if (saveH && group && h) {
      const { N } = st;
      const { R } = group;
      mods.forEach((m, j) => {
        const i = group.hIdx[j];
        if (i < 0) return;
        saveH[m] = g.tensor([N, R], 'f32', `lora.h.${l}.${m}`);
        g.copy(h, saveH[m], N * R * 4, i * N * R * 4, 0);
      });
    }
    g.release(h);
    if (group && !pinned) releaseLoraGroup(g, group);
  }

  /**
   * Whether a decode step (T = 1, a KvCache with lengthGpu) can be recorded and replayed as the next one
   * (generate() does): on GPU adapters always, every decode kernel reading the cache's length from
   * lengthGpu; on CPU adapters on the fused path only (the unfused 'direct' attention there has no such form).
   */
  get replaysDecode(): boolean {
    return !this.gpu.cpu || this.fused;
  }

  /**
   * Builds the fused path's concatenated LoRA groups of `set` (catLoraGroup: up to 10 buffer copies a layer,
   * each ending the compute pass) once, now, and keeps them until the returned release, instead of building
   * them every forward: a generation's decode steps then reuse them. The caller promises that the set's
   * values do not change meanwhile; generate() pins for one call, which writes no adapter (the optimizer,
   * checkpoint loads and adapter initialisation write them in place between generations).
   */
  pinAdapters(set: LoraSet | null | undefined): () => void {
    if (!set || !this.fused || this.pinned.has(set)) return () => {};
    const groups = new Map<string, LoraGroup>();
    // built now, not at first use: a recorded decode step may be the first fused forward, and holds no copies
    for (let l = 0; l < this.config.numLayers; l++) {
      for (const mods of FUSED_GROUPS) {
        const grp = catLoraGroup(this.gpu, mods.map((m) => set.layers[l][m]), `lora.${l}.${mods.join('+')}`);
        if (grp) groups.set(`${l}:${mods.join('+')}`, grp);
      }
    }
    this.pinned.set(set, groups);
    return () => {
      this.pinned.delete(set);
      for (const grp of groups.values()) releaseLoraGroup(this.gpu, grp);
    };
  }

  /**
   * layer() on the fused path: the same math and saved tensors in fewer dispatches. Without save, the
   * RMSNorms fold into the q/k/v and gate/up groups (nothing keeps the normed rows).
   */
  private fusedLayer(l: number, x: Tensor, st: ForwardState, save: boolean, cache?: KvCache): { xNext: Tensor; saved: LayerSaved | null } {
    const g = this.gpu;
    const c = this.config;
    const { B, T, N } = st;
    const { hiddenSize: C, intermediateSize: I, numHeads: NH, numKvHeads: NKV, headDim: HS } = c;
    const drop = (...ts: Array<Tensor | undefined>): void => { if (!save) g.release(...ts); };
    const w = this.weights.layers[l];
    const fw = this.weights.fused![l];
    const s = {} as LayerSaved;
    s.loraH = {};
    const saveH = save ? s.loraH : null;
    /** A norm's input and its folding: kept (saved runs) or folded into the next group. */
    const normed = (xIn: Tensor, gamma: Tensor): { input: Tensor; norm?: RowNorm; h?: Tensor; rstd?: Tensor } => {
      if (!save) return { input: xIn, norm: { gamma, eps: c.rmsNormEps } };
      const h = g.tensor([N, C], 'f32', 'hNorm');
      const rstd = g.tensor([N], 'f32', 'rstd');
      rmsnormForward(g, h, rstd, xIn, gamma, c.rmsNormEps);
      return { input: h, h, rstd };
    };
    // attention block: xMid = x + o(attention(rope(q), rope(k), v))
    const n1 = normed(x, w.inNorm);
    if (save) { s.h1 = n1.h!; s.rstd1 = n1.rstd!; }
    const qkv = g.tensor([N, (NH + 2 * NKV) * HS], 'f32', 'qkv');
    this.group(l, QKV, qkv, n1.input, fw.qkv, st, { bias: fw.qkvBias, norm: n1.norm, epilogue: { kind: 'store' } }, saveH);
    s.q = g.tensor([B, T, NH, HS], 'f32', 'q');
    const att2 = g.tensor([N, NH * HS], 'f32', 'att');
    s.att = view(att2, [B, T, NH, HS]);
    s.lse = g.tensor([B, NH, T], 'f32', 'lse');
    if (cache) {
      const len = cache.lengthGpu;
      ropeKv(g, s.q, cache.k[l], cache.v[l], qkv, st.pos, this.freq, cache.length, len);
      attentionForward(g, s.att, s.lse, s.q, cache.k[l], cache.v[l], { mask: cache.mask, Tk: cache.length + T, ...(len ? { TkGpu: len, split: true } : {}) });
    } else {
      s.k = g.tensor([B, T, NKV, HS], 'f32', 'k');
      s.v = g.tensor([B, T, NKV, HS], 'f32', 'v');
      ropeKv(g, s.q, s.k, s.v, qkv, st.pos, this.freq, 0);
      attentionForward(g, s.att, s.lse, s.q, s.k, s.v, { mask: st.mask ?? undefined });
    }
    g.release(qkv);
    drop(s.q, s.k, s.v);
    s.xMid = g.tensor([N, C], 'f32', 'xMid');
    this.group(l, O, s.xMid, att2, w.linear.o_proj, st, { bias: w.bias.o_proj, epilogue: { kind: 'residual', res: x } }, saveH);
    drop(att2, s.lse);
    // MLP block: xNext = xMid + down(silu(gate(h2)) * up(h2))
    const n2 = normed(s.xMid, w.postNorm);
    if (save) { s.h2 = n2.h!; s.rstd2 = n2.rstd!; }
    s.a = g.tensor([N, I], 'f32', 'act');
    const gu = save ? g.tensor([2, N, I], 'f32', 'gate_up') : undefined;
    this.group(l, GATE_UP, s.a, n2.input, fw.gateUp, st, { bias: fw.gateUpBias, norm: n2.norm, epilogue: { kind: 'swiglu', gu } }, saveH);
    if (gu) {
      s.g = g.tensor([N, I], 'f32', 'gate');
      s.u = g.tensor([N, I], 'f32', 'up');
      g.copy(gu, s.g, N * I * 4, 0, 0);
      g.copy(gu, s.u, N * I * 4, N * I * 4, 0);
      g.release(gu);
    }
    const xNext = g.tensor([N, C], 'f32', `x${l + 1}`);
    this.group(l, DOWN, xNext, s.a, w.linear.down_proj, st, { bias: w.bias.down_proj, epilogue: { kind: 'residual', res: s.xMid } }, saveH);
    drop(s.a, s.xMid);
    return { xNext, saved: save ? s : null };
  }

  /**
   * Backpropagates dlogits (N, V) ((M, V) at the forward's logitRows) and/or dhidden (N, C) (the value head's
   * gradient on hN) through a saved forward. LoRA gradients accumulate into the forward's adapters; weight gradients into `grads` (full-parameter mode).
   */
  backward(st: ForwardState, dlogits: Tensor | null, dhidden: Tensor | null, grads: DecoderWeights | null = null): void {
    if (!st.saved) shapeError('Decoder.backward', 'the forward was run without save');
    const g = this.gpu;
    const c = this.config;
    const W = this.weights;
    const { B, T, N } = st;
    const { hiddenSize: C, intermediateSize: I, numHeads: NH, numKvHeads: NKV, headDim: HS } = c;
    const L = c.numLayers;
    const dhN = g.tensor([N, C], 'f32', 'dhN');
    if (dlogits && st.hRows) {
      // the head ran on hN's rows at logitRows: its gradient lands there, zero elsewhere
      const dRows = g.tensor(st.hRows.shape, 'f32', 'dhN.rows');
      matmulBackward(g, dRows, grads ? grads.lmHead : null, dlogits, st.hRows, W.lmHead, { transB: true, accumulateDB: true });
      g.fill(dhN, 0);
      selectRowsBackward(g, dhN, dRows, st.logitRows!);
      g.release(dRows);
    } else if (dlogits) {
      matmulBackward(g, dhN, grads ? grads.lmHead : null, dlogits, st.hN, W.lmHead, { transB: true, accumulateDB: true });
    } else {
      g.fill(dhN, 0);
    }
    if (dhidden) addInto(g, dhN, dhidden);
    const dx = g.tensor([N, C], 'f32', 'dx');
    rmsnormBackward(g, dx, grads ? grads.norm : null, dhN, st.xs[L], W.norm, st.rstdF);
    g.release(dhN);
    const tmp = g.tensor([N, C], 'f32', 'dtmp');
    const checkpointed = st.layers.length === 0 && L > 0;
    for (let l = L - 1; l >= 0; l--) {
      let s = st.layers[l];
      if (checkpointed) {
        const r = this.layer(l, st.xs[l], st, true);
        g.release(r.xNext);
        s = r.saved!;
      }
      const w = W.layers[l];
      const gw = grads?.layers[l];
      const lin = (dIn: Tensor, dOut: Tensor, x: Tensor, m: LinearModule, accumulateDA: boolean): void => {
        matmulBackward(g, dIn, gw ? gw.linear[m] : null, dOut, x, w.linear[m], { transB: true, accumulateDA, accumulateDB: true });
        const db = gw?.bias[m];
        if (db) matmul(g, view(db, [1, db.shape[0]]), this.onesRow(N), dOut, { accumulate: true });
        const p = st.adapters?.layers[l][m];
        if (p) loraBackward(g, dIn, p.dA, p.dB, dOut, x, s.loraH[m]!, st.slots, p.A, p.B, T, st.adapters!.scale);
      };
      // MLP block
      const da = g.tensor([N, I], 'f32', 'da');
      lin(da, dx, s.a, 'down_proj', false);
      const dg = g.tensor([N, I], 'f32', 'dgate');
      const du = g.tensor([N, I], 'f32', 'dup');
      swigluBackward(g, dg, du, da, s.g, s.u);
      g.release(da);
      const dh2 = g.tensor([N, C], 'f32', 'dh2');
      lin(dh2, dg, s.h2, 'gate_proj', false);
      lin(dh2, du, s.h2, 'up_proj', true);
      g.release(dg, du);
      rmsnormBackward(g, tmp, gw ? gw.postNorm : null, dh2, s.xMid, w.postNorm, s.rstd2);
      addInto(g, dx, tmp);
      g.release(dh2);
      // attention block
      const datt = g.tensor([N, NH * HS], 'f32', 'datt');
      lin(datt, dx, view(s.att, [N, NH * HS]), 'o_proj', false);
      const dq = g.tensor([B, T, NH, HS], 'f32', 'dq');
      const dk = g.tensor([B, T, NKV, HS], 'f32', 'dk');
      const dv = g.tensor([B, T, NKV, HS], 'f32', 'dv');
      attentionBackward(g, dq, dk, dv, view(datt, [B, T, NH, HS]), s.q, s.k, s.v, s.att, s.lse, { mask: st.mask ?? undefined });
      g.release(datt);
      ropeBackward(g, dq, dk, dq, dk, st.pos, this.freq);
      const dh1 = g.tensor([N, C], 'f32', 'dh1');
      lin(dh1, view(dq, [N, NH * HS]), s.h1, 'q_proj', false);
      lin(dh1, view(dk, [N, NKV * HS]), s.h1, 'k_proj', true);
      lin(dh1, view(dv, [N, NKV * HS]), s.h1, 'v_proj', true);
      g.release(dq, dk, dv);
      rmsnormBackward(g, tmp, gw ? gw.inNorm : null, dh1, st.xs[l], w.inNorm, s.rstd1);
      addInto(g, dx, tmp);
      g.release(dh1);
      if (checkpointed) this.releaseLayer(s);
    }
    if (grads) embeddingBackward(g, grads.embed, dx, st.idsHost);
    g.release(dx, tmp);
  }

  /** A (1, N) row of ones: column sums (bias gradients) as a matmul. */
  private onesRow(N: number): Tensor {
    if (this.ones?.shape[1] !== N) {
      if (this.ones) this.gpu.release(this.ones);
      this.ones = this.gpu.upload(new Float32Array(N).fill(1), [1, N], 'f32', 'ones');
    }
    return this.ones;
  }

  private releaseLayer(s: LayerSaved): void {
    this.gpu.release(s.rstd1, s.h1, s.xMid, s.rstd2, s.h2, s.g, s.u, s.a, s.lse, ...Object.values(s.loraH));
    // q, k, v, att are views of pooled (N, ·) tensors: release their buffers through pooled twins.
    for (const t of [s.q, s.k, s.v, s.att]) this.gpu.release({ ...t, pooled: true });
  }

  /** Returns every tensor a forward made to the pool. */
  release(st: ForwardState): void {
    const g = this.gpu;
    g.release(st.ids, st.pos, st.slots, st.mask ?? undefined, st.rstdF, st.hN, st.logits ?? undefined, st.hRows ?? undefined, ...st.xs);
    for (const s of st.layers) this.releaseLayer(s);
    st.layers = [];
    st.xs = [];
  }
}
