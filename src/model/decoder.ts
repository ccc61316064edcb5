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
// It saves the same tensors for backward, which is shared (fused-layers.ts). The batch, the forward's
// options and state are in batch.ts, the KV cache in kv-cache.ts.

import { addInto } from '../../kernels/elementwise/elementwise.ts';
import { attentionBackward, attentionForward } from '../../kernels/attention/attention.ts';
import { embeddingBackward } from '../../kernels/embedding/embedding.ts';
import { FUSED_GEMV_ROWS, type FusedForm } from '../../kernels/fused/fused.ts';
import { kvAppend } from '../../kernels/kvcache/kvcache.ts';
import { loraBackward, loraForward } from '../../kernels/lora/lora.ts';
import { matmul, matmulBackward } from '../../kernels/matmul/matmul.ts';
import { rmsnormBackward, rmsnormForward } from '../../kernels/rmsnorm/rmsnorm.ts';
import { type RopeFreq, ropeBackward, ropeForward } from '../../kernels/rope/rope.ts';
import { swigluBackward, swigluForward } from '../../kernels/swiglu/swiglu.ts';
import type { Gpu } from '../gpu/gpu.ts';
import { shapeError } from '../gpu/errors.ts';
import { type Tensor, view } from '../gpu/tensor.ts';
import { type BatchInput, type ForwardOptions, type ForwardState, type LayerSaved, checkRows, uploadInputs } from './batch.ts';
import { type LinearModule, type ModelConfig, ropeInvFreq } from './config.ts';
import { embedTokens, lmHeadBackward, lmHeadForward } from './lm-head.ts';
import { whole } from './row-chunks.ts';
import { FusedLayers } from './fused-layers.ts';
import type { KvCache } from './kv-cache.ts';
import { selectRows, selectRowsBackward } from './heads.ts';
import type { LoraSet } from './lora-set.ts';
import { type DecoderWeights, fuseWeights } from './weights.ts';

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
  /** The fused path's layers, when forwards run it. */
  private readonly fusedLayers: FusedLayers | null;

  constructor(
    readonly gpu: Gpu,
    readonly config: ModelConfig,
    readonly weights: DecoderWeights,
    opts: DecoderOptions = {},
  ) {
    const c = config;
    this.freq = c.ropeScaling ? gpu.upload(ropeInvFreq(c), [c.headDim / 2], 'f32', 'rope.inv_freq') : c.ropeTheta;
    if (opts.fused && weights.trainable)
      shapeError('Decoder', 'the fused path needs frozen weights; full-parameter training runs with fused: false');
    this.fused = (opts.fused ?? !gpu.cpu) && fuseWeights(gpu, weights);
    this.fusedLayers = this.fused ? new FusedLayers(gpu, config, weights, this.freq, opts.fusedForm, opts.inlinePrologue ?? true) : null;
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
      shapeError(
        'Decoder.forward',
        `the KV cache holds ${cache.B} sequences with ${cache.capacity - cache.length} free positions; the batch has ${B} x ${T}`,
      );
    }
    const rows = opts.logitRows;
    if (rows && (opts.logits ?? 'all') !== 'all') shapeError('Decoder.forward', `logitRows needs logits 'all', got '${opts.logits}'`);
    if (rows) checkRows('Decoder.forward', 'logitRows', rows, N);
    const st: ForwardState = {
      B,
      T,
      N,
      idsHost: inp.ids,
      ...uploadInputs(g, c, inp),
      adapters: inp.adapters ?? null,
      xs: [],
      layers: [],
      rstdF: null as unknown as Tensor,
      hN: null as unknown as Tensor,
      logits: null,
      logitRows: null,
      hRows: null,
      saved: save !== false,
    };
    let x = g.tensor([N, C], 'f32', 'x0');
    embedTokens(g, x, st.ids, this.weights.embed);
    st.xs.push(x);
    for (let l = 0; l < c.numLayers; l++) {
      // Checkpointed runs keep only the residual stream; backward() recomputes each layer from it.
      const { xNext, saved } = this.layer(l, x, st, save === true, cache);
      if (saved) st.layers.push(saved);
      if (save) st.xs.push(xNext);
      else if (l > 0) g.release(x);
      x = xNext;
    }
    if (!save) {
      if (c.numLayers > 0) g.release(st.xs[0]);
      st.xs = [x];
    }
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
      lmHeadForward(g, st.logits, st.hN, this.weights.lmHead);
    } else if (mode === 'last') {
      // the last position of each sequence: (B, C); with T = 1 (a decode step) that is every row, and
      // skipping the row selection keeps the step free of uploads
      const hLast =
        T === 1
          ? st.hN
          : selectRows(
              g,
              st.hN,
              Int32Array.from({ length: B }, (_, b) => b * T + T - 1),
              'hN.last',
            );
      st.logits = g.tensor([B, c.vocabSize], 'f32', 'logits.last');
      lmHeadForward(g, st.logits, hLast, this.weights.lmHead);
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
    lmHeadForward(this.gpu, logits, hRows, this.weights.lmHead);
    return { logits, hRows };
  }

  /**
   * One decoder layer on the residual stream x (N, C) -> xNext. With `save`, returns what its backward needs
   * (x itself stays the caller's); without, every temporary goes back to the pool as soon as it is used.
   */
  private layer(l: number, x: Tensor, st: ForwardState, save: boolean, cache?: KvCache): { xNext: Tensor; saved: LayerSaved | null } {
    if (this.fusedLayers && (this.gpu.cpu || st.N <= FUSED_GEMV_ROWS)) return this.fusedLayers.layer(l, x, st, save, cache);
    const g = this.gpu;
    const c = this.config;
    const { B, T, N } = st;
    const { hiddenSize: C, intermediateSize: I, numHeads: NH, numKvHeads: NKV, headDim: HS } = c;
    const drop = (...ts: Array<Tensor | undefined>): void => {
      if (!save) g.release(...ts);
    };
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
      attentionForward(g, s.att, s.lse, s.q, cache.k[l], cache.v[l], {
        mask: cache.mask,
        Tk: cache.length + T,
        ...(len ? { TkGpu: len, split: true } : {}),
      });
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
   * Whether a decode step (T = 1, a KvCache with lengthGpu) can be recorded and replayed as the next one
   * (generate() does): on GPU adapters always, every decode kernel reading the cache's length from
   * lengthGpu; on CPU adapters on the fused path only (the unfused 'direct' attention there has no such form).
   */
  get replaysDecode(): boolean {
    return !this.gpu.cpu || this.fused;
  }

  /**
   * On the fused path, builds the concatenated LoRA groups of `set` once and keeps them until the returned
   * release (FusedLayers.pin); the caller promises that the set's values do not change meanwhile.
   */
  pinAdapters(set: LoraSet | null | undefined): () => void {
    return set && this.fusedLayers ? this.fusedLayers.pin(set) : () => {};
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
    const dHead = grads ? whole(grads.lmHead, 'Decoder.backward') : null;
    if (dlogits && st.hRows) {
      // the head ran on hN's rows at logitRows: its gradient lands there, zero elsewhere
      const dRows = g.tensor(st.hRows.shape, 'f32', 'dhN.rows');
      lmHeadBackward(g, dRows, dHead, dlogits, st.hRows, W.lmHead);
      g.fill(dhN, 0);
      selectRowsBackward(g, dhN, dRows, st.logitRows!);
      g.release(dRows);
    } else if (dlogits) {
      lmHeadBackward(g, dhN, dHead, dlogits, st.hN, W.lmHead);
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
    if (grads) embeddingBackward(g, whole(grads.embed, 'Decoder.backward'), dx, st.idsHost);
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
