// The decoder's fused path (DecoderOptions.fused): each layer's projections as groups (kernels/fused), with
// the LoRA groups of pinned adapter sets built once. Legend as in decoder.ts.

import { attentionForward } from '../../kernels/attention/attention.ts';
import {
  FUSED_GEMV_ROWS,
  type Epilogue,
  type FusedForm,
  type LoraGroup,
  type RowNorm,
  catLoraGroup,
  fusedForm,
  fusedLinear,
  groupPrologue,
  inlinePrologue,
  prologueSize,
  releaseLoraGroup,
  ropeKv,
} from '../../kernels/fused/fused.ts';
import { rmsnormForward } from '../../kernels/rmsnorm/rmsnorm.ts';
import type { RopeFreq } from '../../kernels/rope/rope.ts';
import type { Gpu } from '../gpu/gpu.ts';
import { type Tensor, view } from '../gpu/tensor.ts';
import type { ForwardState, LayerSaved } from './batch.ts';
import { type LinearModule, type ModelConfig, linearDims } from './config.ts';
import type { KvCache } from './kv-cache.ts';
import type { LoraSet } from './lora-set.ts';
import type { DecoderWeights } from './weights.ts';

/** The fused path's groups of projections: q/k/v and gate/up as one matmul each, o and down alone. */
const FUSED_GROUPS: ReadonlyArray<readonly LinearModule[]> = [
  ['q_proj', 'k_proj', 'v_proj'],
  ['o_proj'],
  ['gate_proj', 'up_proj'],
  ['down_proj'],
];
const [QKV, O, GATE_UP, DOWN] = FUSED_GROUPS;

export class FusedLayers {
  /** The LoRA groups of the pinned adapter sets (pin), by `layer:modules`. */
  private readonly pinned = new Map<LoraSet, Map<string, LoraGroup>>();

  /** form and inline: DecoderOptions.fusedForm and inlinePrologue. */
  constructor(
    private readonly gpu: Gpu,
    private readonly config: ModelConfig,
    private readonly weights: DecoderWeights,
    private readonly freq: RopeFreq,
    private readonly form: FusedForm | undefined,
    private readonly inline: boolean,
  ) {}

  /** The fused kernels' form for a forward of N rows. */
  private formOf(N: number): FusedForm {
    return this.form === 'gemv' && N <= FUSED_GEMV_ROWS ? 'gemv' : fusedForm(this.gpu, N);
  }

  /**
   * One group of projections on the fused path: its prologue (the LoRA shrink of its adapted modules, and
   * the RMSNorm when `norm` folds it in), then the fused matmul with its epilogue. With `saveH`, each
   * adapted module's h lands there as its own (N, R) tensor, as the backward reads it.
   */
  private group(
    l: number,
    mods: readonly LinearModule[],
    out: Tensor,
    x: Tensor,
    w: Tensor,
    st: ForwardState,
    opts: { bias?: Tensor; norm?: RowNorm; epilogue: Epilogue },
    saveH: LayerSaved['loraH'] | null,
  ): void {
    const g = this.gpu;
    const set = st.adapters;
    const pinned = set ? this.pinned.get(set) : undefined;
    const group = pinned
      ? (pinned.get(`${l}:${mods.join('+')}`) ?? null)
      : set &&
        catLoraGroup(
          g,
          mods.map((m) => set.layers[l][m]),
          `lora.${l}.${mods.join('+')}`,
        );
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
   * Builds the fused path's concatenated LoRA groups of `set` (catLoraGroup: up to 10 buffer copies a layer,
   * each ending the compute pass) once, now, and keeps them until the returned release, instead of building
   * them every forward: a generation's decode steps then reuse them. The caller promises that the set's
   * values do not change meanwhile; generate() pins for one call, which writes no adapter (the optimizer,
   * checkpoint loads and adapter initialisation write them in place between generations).
   */
  pin(set: LoraSet): () => void {
    if (this.pinned.has(set)) return () => {};
    const groups = new Map<string, LoraGroup>();
    // built now, not at first use: a recorded decode step may be the first fused forward, and holds no copies
    for (let l = 0; l < this.config.numLayers; l++) {
      for (const mods of FUSED_GROUPS) {
        const grp = catLoraGroup(
          this.gpu,
          mods.map((m) => set.layers[l][m]),
          `lora.${l}.${mods.join('+')}`,
        );
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
   * Decoder's layer() on the fused path: the same math and saved tensors in fewer dispatches. Without save,
   * the RMSNorms fold into the q/k/v and gate/up groups (nothing keeps the normed rows).
   */
  layer(l: number, x: Tensor, st: ForwardState, save: boolean, cache?: KvCache): { xNext: Tensor; saved: LayerSaved | null } {
    const g = this.gpu;
    const c = this.config;
    const { B, T, N } = st;
    const { hiddenSize: C, intermediateSize: I, numHeads: NH, numKvHeads: NKV, headDim: HS } = c;
    const drop = (...ts: Array<Tensor | undefined>): void => {
      if (!save) g.release(...ts);
    };
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
    if (save) {
      s.h1 = n1.h!;
      s.rstd1 = n1.rstd!;
    }
    const qkv = g.tensor([N, (NH + 2 * NKV) * HS], 'f32', 'qkv');
    this.group(l, QKV, qkv, n1.input, fw.qkv, st, { bias: fw.qkvBias, norm: n1.norm, epilogue: { kind: 'store' } }, saveH);
    s.q = g.tensor([B, T, NH, HS], 'f32', 'q');
    const att2 = g.tensor([N, NH * HS], 'f32', 'att');
    s.att = view(att2, [B, T, NH, HS]);
    s.lse = g.tensor([B, NH, T], 'f32', 'lse');
    if (cache) {
      const len = cache.lengthGpu;
      ropeKv(g, s.q, cache.k[l], cache.v[l], qkv, st.pos, this.freq, cache.length, len);
      attentionForward(g, s.att, s.lse, s.q, cache.k[l], cache.v[l], {
        mask: cache.mask,
        Tk: cache.length + T,
        ...(len ? { TkGpu: len, split: true } : {}),
      });
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
    if (save) {
      s.h2 = n2.h!;
      s.rstd2 = n2.rstd!;
    }
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
}
