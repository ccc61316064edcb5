// Launchers of the fused decode path (linear.wgsl, rope-kv.wgsl): a group of projections that share
// their input (q/k/v, gate/up; or o, down alone) as one matmul over their concatenated weights, with
// each sequence's LoRA expand, the bias and the block's epilogue (residual add, SwiGLU) in its threads,
// after one `groupPrologue` dispatch for the group's LoRA h; and RoPE with the q/k/v split and the
// KV-cache append in one dispatch. The prologue also folds in the RMSNorm before q/k/v and gate/up
// (each row's rstd; the matmul norms its input on the fly) where nothing needs the normed rows saved.
// They replace the unfused rmsnormForward + matmul + loraForward + addInto / swigluForward /
// ropeForward + kvAppend dispatches of src/model/decoder.ts.

import type { Gpu } from '../../src/gpu/gpu.ts';
import { shapeError } from '../../src/gpu/errors.ts';
import { grid1d, programFactory } from '../../src/gpu/program.ts';
import { type Tensor, is16, shapeStr } from '../../src/gpu/tensor.ts';
import { type WeightDType, fillTemplate, loadFn, noAlias, rowThreads } from '../common.ts';
import { type RopeFreq, invFreqOf } from '../rope/rope.ts';
import ropeSource from '../rope/rope.wgsl';
import { gemvRows } from '../matmul/gemv.ts';
import { type EntryOf, type KernelProgram, defineKernel } from '../program.ts';
import linearGemvSource from './linear-gemv.wgsl';
import shrinkGemvSource from './shrink-gemv.wgsl';
import linearSource from './linear.wgsl';
import ropeKvSource from './rope-kv.wgsl';

/** What follows the product: store it, add a residual, or SwiGLU the two halves (saving them into gu). */
export type Epilogue = { kind: 'store' } | { kind: 'residual'; res: Tensor } | { kind: 'swiglu'; gu?: Tensor };
type EpilogueKind = 'store' | 'residual' | 'swiglu' | 'swiglu-save';

/** `line` for each output (m, n) of the thread's 4 x 4 block inside the matrix; acc[q][c] its product. */
const STORE_BLOCK = (line: string) => `  for (var q = 0u; q < 4u; q++) {
    let m = m0 + q;
    if (m >= u.M) { break; }
    for (var c = 0u; c < 4u; c++) {
      let n = n0 + c;
      if (n >= u.NOUT) { break; }
${line}
    }
  }`;
const swiglu = (save: boolean) => `  var ag = dot44(m0, n0);
  var au = dot44(m0, n0 + u.NOUT);
${STORE_BLOCK(`      let g = finish(m, n, ag[q][c]);
      let up = finish(m, n + u.NOUT, au[q][c]);
      out[m * u.NOUT + n] = g * (1.0 / (1.0 + exp(-g))) * up;${save ? '\n      gu[m * u.NOUT + n] = g;\n      gu[(u.M + m) * u.NOUT + n] = up;' : ''}`)}`;
const EPILOGUES: Record<EpilogueKind, string> = {
  store: `  var acc = dot44(m0, n0);\n${STORE_BLOCK('      out[m * u.NOUT + n] = finish(m, n, acc[q][c]);')}`,
  residual: `  var acc = dot44(m0, n0);\n${STORE_BLOCK('      let i = m * u.NOUT + n;\n      out[i] = finish(m, n, acc[q][c]) + res[i];')}`,
  swiglu: swiglu(false),
  'swiglu-save': swiglu(true),
};

// The shrink's LoRA h (left out of a norm-only prologue, whose layout then lacks slots and A).
const SHRINK_H = (norm: boolean) => `  let j = i / per;
  let m = (i / u.R) % u.M;
  let s = slotOf(m);
  if (s < 0) { h[i] = 0.0; return; }
  let r = ${norm ? 'rowRstd(m)' : '1.0'};
  let aRow = u.aOff[j] + (u32(s) * u.R + i % u.R) * u.K;
  var acc = 0.0;
  for (var k = 0u; k < u.K; k++) { acc = fma(xIn(m, k, r), A[aRow + k], acc); }
  h[i] = acc;`;
const FINISH_BIAS = '  v += bias[n];';
/** The LoRA expand of output column n; `inl`: h comes from the gemv's own prologue (hS), else the h buffer. */
const finishLora = (inl: Inline | null, swi: boolean) => `  let j = select(0u, select(1u, 2u, n >= u.cols[2]), n >= u.cols[1]);
  let hj = u.hIdx[j];
  let s = slotOf(m);
  if (hj != NONE && s >= 0) {
    let outj = u.cols[j + 1u] - u.cols[j];
    let bRow = u.bOff[j] + (u32(s) * outj + n - u.cols[j]) * u.R;
    let hRow = ${inl ? `(${swi ? 'j' : '0u'} * MR + m % MR) * u.R` : '(hj * u.M + m) * u.R'};
    var a = 0.0;
    for (var r = 0u; r < u.R; r++) { a = fma(${inl ? 'hS' : 'h'}[hRow + r], Bl[bRow + r], a); }
    v += u.scale * a;
  }`;

/**
 * The gemv form with its prologue inside (decode on GPUs): the workgroup's K walk also sums each row's squares
 * (the RMSNorm folded in: the product is then of x * gamma, scaled by the row's rstd at the end) and the LoRA h
 * of the module(s) its columns belong to (one; gate and up with SwiGLU), R partial sums a row and module
 * in registers, so no prologue dispatch runs before it. Every workgroup computes those h again: G * MR * R
 * accumulators beside the MR * 4 of the product, hence the cap (inlinePrologue).
 */
export interface Inline {
  R: number;
  G: number;
  norm: boolean;
  lora: boolean;
}

/**
 * The gemv form's accumulation (linear-gemv.wgsl), unrolled: MR x CW partial sums in registers (a loop over
 * a private array would index it dynamically, which GPUs spill to memory), then their meeting in `red`.
 * Weight row of column c: o0 + c, or with SwiGLU (NC = 2) gate rows o0 + c and up rows NOUT + o0 + c - 2.
 */
function gemvBody(mr: number, swi: boolean, inl: Inline | null): string {
  const rows = [...Array(mr).keys()];
  const cols = [0, 1, 2, 3];
  const wRow = (c: number) => (swi && c >= 2 ? `u.NOUT + o0 + ${c - 2}u` : `o0 + ${c}u`);
  const each = (f: (m: number, c: number) => string) => rows.flatMap((m) => cols.map((c) => f(m, c))).join('\n');
  // accumulators in the order of their rows in `red`: the product (m, c), then the inline h (jj, m, r), then the squares (m)
  const accs = rows.flatMap((m) => cols.map((c) => `a${m}_${c}`));
  const mods = inl?.lora ? [...Array(inl.G).keys()] : [];
  const ranks = inl ? [...Array(inl.R).keys()] : [];
  const hAcc = mods.flatMap((jj) => rows.flatMap((m) => ranks.map((r) => `h${jj}_${m}_${r}`)));
  const sAcc = inl?.norm ? rows.map((m) => `s${m}`) : [];
  const all = [...accs, ...hAcc, ...sAcc];
  const modOf = (jj: number) => (swi ? `${jj}u` : 'select(0u, select(1u, 2u, o0 >= u.cols[2]), o0 >= u.cols[1])');
  const U = hAcc.length ? 2 : 4;
  /** One K step at `k` (variables suffixed `v`). */
  const step = (k: string, v: string): string =>
    [
      `    { let kk${v} = ${k};`,
      ...rows.map((m) => `    let x${m}${v} = getX(mb + ${m}u, kk${v}, r${m});`),
      ...cols.map((c) => `    let w${c}${v} = getW(${wRow(c)}, kk${v});`),
      each((m, c) => `    a${m}_${c} = fma(x${m}${v}, w${c}${v}, a${m}_${c});`),
      ...mods.flatMap((jj) => [
        `    if (hasA${jj}) {`,
        ...rows.flatMap((m) =>
          ranks.map((r) => `      h${jj}_${m}_${r} = fma(x${m}${v}, A[b${jj}_${m} + ${r}u * u.K + kk${v}], h${jj}_${m}_${r});`),
        ),
        '    }',
      ]),
      ...rows
        .filter(() => sAcc.length)
        .map((m) => `    let s${m}${v}x = rawX(mb + ${m}u, kk${v});\n    s${m} = fma(s${m}${v}x, s${m}${v}x, s${m});`),
      '    }',
    ].join('\n');
  return [
    ...rows.map((m) => `  let r${m} = rowR(mb + ${m}u);`),
    ...mods.flatMap((jj) => [
      `  let hasA${jj} = u.hIdx[${modOf(jj)}] != NONE;`,
      ...rows.map((m) => `  let b${jj}_${m} = aBase(${modOf(jj)}, rowSlot(mb + ${m}u));`),
    ]),
    ...all.map((a) => `  var ${a} = 0.0;`),
    // unrolled U times, so U steps' loads are in flight together (one step at a time waits a memory round trip per step)
    '  var k = t;',
    `  for (; k + ${U - 1}u * KT < u.K; k += ${U}u * KT) {`,
    ...[...Array(U).keys()].map((i) => step(`k + ${i}u * KT`, `_${i}`)),
    '  }',
    '  for (; k < u.K; k += KT) {',
    step('k', ''),
    '  }',
    '  let hh = t % HALF;',
    '  if (t >= HALF) {',
    ...all.map((a, i) => `    red[${i}u * RS + hh] = ${a};`),
    '  }',
    '  workgroupBarrier();',
    '  if (t < HALF) {',
    ...all.map((a, i) => `    red[${i}u * RS + hh] += ${a};`),
    '  }',
    '  workgroupBarrier();',
    ...(inl
      ? [
          // each row's rstd, then the h scaled by it (x * gamma was walked), in workgroup memory for the epilogue
          `  for (var o = t; o < MR; o += KT) { rS[o] = ${inl.norm ? `inverseSqrt(redSum(${accs.length + hAcc.length}u + o) / f32(u.K) + u.eps)` : '1.0'}; }`,
          '  workgroupBarrier();',
          ...(hAcc.length
            ? [
                `  for (var o = t; o < ${hAcc.length}u; o += KT) { hS[o] = rS[(o / u.R) % MR] * redSum(${accs.length}u + o); }`,
                '  workgroupBarrier();',
              ]
            : []),
        ]
      : []),
  ].join('\n');
}

/** The gemv form's epilogue for output (m, n), column c of the workgroup (redSum(m * CW + c) its product). */
const gemvOut = (e: EpilogueKind, scaled: boolean): string => {
  const sum = (o: string) => `${scaled ? 'rS[lm] * ' : ''}redSum(${o})`;
  const v = `      let v = finish(m, n, ${sum('lm * CW + c')});`;
  if (e === 'store') return `${v}\n      out[m * u.NOUT + n] = v;`;
  if (e === 'residual') return `${v}\n      let i = m * u.NOUT + n;\n      out[i] = v + res[i];`;
  return `      let g = finish(m, n, ${sum('lm * CW + c')});
      let up = finish(m, n + u.NOUT, ${sum('lm * CW + NC + c')});
      out[m * u.NOUT + n] = g * (1.0 / (1.0 + exp(-g))) * up;${e === 'swiglu-save' ? '\n      gu[m * u.NOUT + n] = g;\n      gu[(u.M + m) * u.NOUT + n] = up;' : ''}`;
};

/** The inline prologue's workgroup memory and helpers (linear-gemv.wgsl's INLINE_DECL). */
const inlineDecl = (mr: number, inl: Inline): string =>
  [
    `var<workgroup> rS: array<f32, ${mr}>;`,
    ...(inl.lora
      ? [
          `var<workgroup> hS: array<f32, ${inl.G * mr * inl.R}>;`,
          'fn rowSlot(m: u32) -> i32 { if (m < u.M) { return slotOf(m); } return -1; }',
          "/** Module j's lora_A row 0 for slot s (slot 0's for s < 0 or no adapter: read, never used). */",
          'fn aBase(j: u32, s: i32) -> u32 { let hj = u.hIdx[j]; if (hj == NONE) { return 0u; } return u.aOff[hj] + u32(max(s, 0)) * u.R * u.K; }',
        ]
      : []),
    ...(inl.norm ? ['fn rawX(m: u32, k: u32) -> f32 { if (m < u.M) { return x[m * u.K + k]; } return 0.0; }'] : []),
  ].join('\n');

/**
 * shrink_gemv's body (shrink-gemv.wgsl) for a workgroup (output o, row m): x (and its squares, with the
 * norm) against lora_A's row of o for the row's slot; rows without adapter sum only the squares, in the
 * workgroup of o = 0 (the others write their 0 at once).
 */
function shrinkGemvBody(norm: boolean, lora: boolean): string {
  const hOut = '((o / u.R) * u.M + m) * u.R + o % u.R';
  if (!lora) {
    return `  var acc = vec2f(0.0);
  for (var k = t; k < u.K; k += KT) { let v = x[m * u.K + k]; acc.x = fma(v, v, acc.x); }
  let sum = sumAll(t, acc);
  if (t == 0u) { h[u.rOff + m] = inverseSqrt(sum.x / f32(u.K) + u.eps); }`;
  }
  const term = norm ? 'acc = fma(vec2f(v, v * gamma[k]), vec2f(v, a), acc);' : 'acc.y = fma(v, a, acc.y);';
  return `  let s = slotOf(m);
  if (s < 0 && ${norm ? 'o != 0u' : 'true'}) {
    if (t == 0u) { h[${hOut}] = 0.0; }
    return;
  }
  var acc = vec2f(0.0);
  if (s >= 0) {
    let aRow = u.aOff[o / u.R] + (u32(s) * u.R + o % u.R) * u.K;
    for (var k = t; k < u.K; k += KT) { let v = x[m * u.K + k]; let a = A[aRow + k]; ${term} }
  }${
    norm
      ? `
  else {
    for (var k = t; k < u.K; k += KT) { let v = x[m * u.K + k]; acc.x = fma(v, v, acc.x); }
  }`
      : ''
  }
  let sum = sumAll(t, acc);
  if (t == 0u) {${
    norm
      ? `
    let r = inverseSqrt(sum.x / f32(u.K) + u.eps);
    if (o == 0u) { h[u.rOff + m] = r; }
    h[${hOut}] = select(0.0, r * sum.y, s >= 0);`
      : `
    h[${hOut}] = sum.y;`
  }
  }`;
}

/**
 * The entry points: the LoRA/norm prologue and the fused matmul, each in the 'direct' form (barrier-free,
 * CPU adapters, any M: shrink, linear) or the gemv form (GPUs, M <= FUSED_GEMV_ROWS: shrink_gemv, gemv).
 */
const linear = defineKernel({
  name: 'fused',
  bindings: ['x', 'slots', 'A', 'h', 'w', 'bias', 'Bl', 'res', 'out', 'gu', 'gamma'],
  uniforms: {
    M: 'u32',
    K: 'u32',
    T: 'u32',
    R: 'u32',
    S: 'u32',
    NW: 'u32',
    NOUT: 'u32',
    scale: 'f32',
    cols: 'u32[4]',
    hIdx: 'u32[4]',
    aOff: 'u32[4]',
    bOff: 'u32[4]',
    rOff: 'u32',
    eps: 'f32',
  },
  entries: {
    shrink: ['x', 'slots?', 'A?', 'h', 'gamma?'],
    shrink_gemv: ['x', 'slots?', 'A?', 'h', 'gamma?'],
    // A: the gemv form's inline prologue; h: the prologue's output (LoRA h, or a norm's rstd)
    linear: ['x', 'slots?', 'A?', 'h?', 'w', 'bias?', 'Bl?', 'res?', 'out', 'gu?', 'gamma?'],
    gemv: ['x', 'slots?', 'A?', 'h?', 'w', 'bias?', 'Bl?', 'res?', 'out', 'gu?', 'gamma?'],
  },
});
type Entry = EntryOf<typeof linear>;
const EXTRA: Partial<Record<Entry, string>> = { gemv: linearGemvSource, shrink_gemv: shrinkGemvSource };

/** wg: rmsnorm's lanes for a row of K (rowThreads(K, 4)) with the RMSNorm folded in, 0 without; mr: the gemv form's rows (gemvRows), else 0. */
const inlineKey = (i: Inline | null): string => (i ? `:inline${i.lora ? `${i.G}x${i.R}` : ''}${i.norm ? 'n' : ''}` : '');
const program = programFactory(
  (w: WeightDType, bias: boolean, lora: boolean, e: EpilogueKind, wg: number, entryPoint: Entry, mr: number, inl: Inline | null = null) =>
    `${entryPoint}:${w}:${bias}:${lora}:${e}:${wg}:${mr}${inlineKey(inl)}`,
  (w: WeightDType, bias: boolean, lora: boolean, e: EpilogueKind, wg: number, entryPoint: Entry, mr: number, inl: Inline | null = null) =>
    linear.program(
      `fused:${entryPoint}${mr ? `_m${mr}` : ''}:${w}:${bias ? 'bias' : 'nobias'}:${lora ? 'lora' : 'nolora'}:${e}:${wg ? `norm${wg}` : 'nonorm'}${inlineKey(inl)}`,
      () =>
        fillTemplate(`${linearSource}\n${EXTRA[entryPoint] ?? ''}`, {
          W_ELEM: w === 'f32' ? 'f32' : 'u32',
          LOAD_W: loadFn('ldW', 'w', w),
          FINISH: [...(bias ? [FINISH_BIAS] : []), ...(lora ? [finishLora(inl, e.startsWith('swiglu'))] : [])].join('\n'),
          EPILOGUE: EPILOGUES[e],
          WG: String(Math.max(1, wg)),
          X_IN: wg ? '  return x[m * u.K + k] * r * gamma[k];' : '  return x[m * u.K + k];',
          NORM_ROWS: wg ? 'u.M' : '0u',
          SHRINK_H: lora ? SHRINK_H(wg > 0) : '',
          SAVED_RSTD: wg && !inl ? 'h[u.rOff + m]' : '1.0',
          ...(entryPoint === 'shrink_gemv' ? { BODY: shrinkGemvBody(wg > 0, lora) } : {}),
          ...(entryPoint === 'gemv'
            ? {
                MR: String(mr),
                KT: String(GEMV_KT),
                NC: e.startsWith('swiglu') ? '2' : '4',
                GEMV_BODY: gemvBody(mr, e.startsWith('swiglu'), inl),
                GEMV_OUT: gemvOut(e, Boolean(inl?.norm)),
                NACC: String(mr * 4 + (inl ? (inl.lora ? inl.G * mr * inl.R : 0) + (inl.norm ? mr : 0) : 0)),
                INLINE_DECL: inl ? inlineDecl(mr, inl) : '',
              }
            : {}),
        }),
      entryPoint,
    ),
) as <E extends Entry>(
  w: WeightDType,
  bias: boolean,
  lora: boolean,
  e: EpilogueKind,
  wg: number,
  entryPoint: E,
  mr: number,
  inl?: Inline | null,
) => KernelProgram<E>;

const ropeKvKernel = defineKernel({
  name: 'fused.rope_kv',
  bindings: ['pos', 'inv_freq', 'qkv', 'qo', 'ko', 'vo', 'klen'],
  uniforms: { BT: 'u32', T: 'u32', NH: 'u32', NKV: 'u32', HALF: 'u32', Tcap: 'u32', t0: 'u32' },
  entries: { rope_kv: ['pos', 'inv_freq', 'qkv', 'qo', 'ko', 'vo', 'klen?'] },
});

/** rope_kv with t0 from the uniforms or (t0Gpu) from the GPU. */
const ropeKvProgram = programFactory(
  (t0Gpu: boolean) => String(t0Gpu),
  (t0Gpu: boolean) =>
    ropeKvKernel.program(
      `fused:rope_kv${t0Gpu ? ':t0gpu' : ''}`,
      () => fillTemplate(ropeKvSource, { COS_SIN: ropeSource.match(/fn cosSin[\s\S]*?\n}\n/)![0], T0: t0Gpu ? 'u32(klen[0])' : 'u.t0' }),
      'rope_kv',
    ),
);

/**
 * The LoRA adapters of a group's modules (undefined: not adapted) laid out for one forward: lora_A of the
 * adapted ones concatenated (S, R, IN each), lora_B likewise (S, OUT_j, R each). A group of one module
 * uses its tensors as they are; larger groups copy them (copies, not dispatches), since the optimizer
 * updates each module's tensors in place. Release with releaseLoraGroup.
 */
export interface LoraGroup {
  A: Tensor;
  B: Tensor;
  /** Adapted modules; hIdx[j] module j's block in h (-1: none); aOff/bOff element offsets in A and B. */
  GL: number;
  hIdx: number[];
  aOff: number[];
  bOff: number[];
  S: number;
  R: number;
  IN: number;
  owned: boolean;
}

export function catLoraGroup(gpu: Gpu, mods: ReadonlyArray<{ A: Tensor; B: Tensor } | undefined>, label: string): LoraGroup | null {
  const used = mods.filter((p) => p !== undefined);
  if (!used.length) return null;
  const [S, R, IN] = used[0].A.shape;
  for (const p of used) {
    if (
      p.A.shape.length !== 3 ||
      p.A.shape[0] !== S ||
      p.A.shape[1] !== R ||
      p.A.shape[2] !== IN ||
      p.B.shape.length !== 3 ||
      p.B.shape[0] !== S ||
      p.B.shape[2] !== R
    ) {
      shapeError(
        'catLoraGroup',
        `${label}: every module needs A (${S}, ${R}, ${IN}) and B (${S}, OUT, ${R}), got ${shapeStr(p.A)} and ${shapeStr(p.B)}`,
      );
    }
  }
  const hIdx: number[] = [];
  const aOff: number[] = [];
  const bOff: number[] = [];
  let a = 0;
  let b = 0;
  for (const p of mods) {
    hIdx.push(p ? aOff.length : -1);
    bOff.push(p ? b : 0);
    if (p) {
      aOff.push(a);
      a += S * R * IN;
      b += p.B.shape[0] * p.B.shape[1] * R;
    }
  }
  const base = { GL: used.length, hIdx, aOff, bOff, S, R, IN };
  if (used.length === 1) return { ...base, A: used[0].A, B: used[0].B, owned: false };
  const A = gpu.tensor([a], 'f32', `${label}.lora_A`);
  const B = gpu.tensor([b], 'f32', `${label}.lora_B`);
  let ao = 0;
  let bo = 0;
  for (const p of used) {
    gpu.copy(p.A, A, S * R * IN * 4, 0, ao * 4);
    gpu.copy(p.B, B, p.B.shape[0] * p.B.shape[1] * R * 4, 0, bo * 4);
    ao += S * R * IN;
    bo += p.B.shape[0] * p.B.shape[1] * R;
  }
  return { ...base, A, B, owned: true };
}

export function releaseLoraGroup(gpu: Gpu, g: LoraGroup | null): void {
  if (g?.owned) gpu.release(g.A, g.B);
}

/** One forward's LoRA inputs for a group: its adapters, the sequences' slots, T rows a sequence, the scale. */
export interface FusedLora {
  group: LoraGroup;
  slots: Tensor;
  T: number;
  scale: number;
}
/** The RMSNorm folded into the group: out = matmul(x * rstd * gamma), gamma (K) f32, as rmsnormForward. */
export interface RowNorm {
  gamma: Tensor;
  eps: number;
}
/** The prologue's work for a group: its LoRA and/or its RMSNorm. */
export interface Prologue {
  lora?: FusedLora;
  norm?: RowNorm;
}

/** Elements of the prologue's output h: the LoRA h (G', M, R), then with a norm each row's rstd (M). */
export const prologueSize = (M: number, p: Prologue): number => (p.lora ? p.lora.group.GL * M * p.lora.group.R : 0) + (p.norm ? M : 0);

const NONE = 0xffffffff;
const vec4 = (a: readonly number[], fill: number): number[] => [0, 1, 2, 3].map((i) => a[i] ?? fill);

function uniforms(M: number, K: number, NW: number, NOUT: number, cols: readonly number[], p: Prologue) {
  const g = p.lora?.group;
  return {
    M,
    K,
    T: p.lora?.T ?? 1,
    R: g?.R ?? 0,
    S: g?.S ?? 0,
    NW,
    NOUT,
    scale: p.lora?.scale ?? 0,
    cols: vec4(cols, NW),
    hIdx: vec4(g ? g.hIdx.map((i) => (i < 0 ? NONE : i)) : [], NONE),
    aOff: vec4(g?.aOff ?? [], 0),
    bOff: vec4(g?.bOff ?? [], 0),
    rOff: g ? g.GL * M * g.R : 0,
    eps: p.norm?.eps ?? 0,
  };
}

/** `h` 'inline': the matmul computes the prologue itself (no h buffer). */
function checkPrologue(op: string, M: number, K: number, h: Tensor | undefined | 'inline', p: Prologue): void {
  if (p.lora) {
    const { group: g, slots, T } = p.lora;
    if (slots.dtype !== 'i32' || slots.shape.length !== 1 || slots.shape[0] * T !== M) {
      shapeError(op, `slots must be (B) i32 with B * T = ${M} rows (T = ${T}), got ${shapeStr(slots)}`);
    }
    if (g.IN !== K) shapeError(op, `the adapters take ${g.IN} inputs, x has ${K}`);
  }
  if (p.norm && (p.norm.gamma.dtype !== 'f32' || p.norm.gamma.shape.length !== 1 || p.norm.gamma.shape[0] !== K)) {
    shapeError(op, `the norm weight must be (${K}) f32, got ${shapeStr(p.norm.gamma)}`);
  }
  const n = prologueSize(M, p);
  if (h === 'inline') return;
  if (n && (!h || h.dtype !== 'f32' || h.shape.length !== 1 || h.shape[0] !== n))
    shapeError(op, `h must be (${n}) f32 (prologueSize), got ${h ? shapeStr(h) : 'none'}`);
}

function checkX(op: string, x: Tensor): [number, number] {
  if (x.dtype !== 'f32' || x.shape.length !== 2) shapeError(op, `x must be (M, K) f32, got ${shapeStr(x)}`);
  return [x.shape[0], x.shape[1]];
}

const lanes = (K: number, norm?: RowNorm): number => (norm ? rowThreads(K, 4) : 0);

/**
 * The fused kernels' thread layout: 'direct' (a thread per output, 4x4 blocks in the matmul, barrier-free: CPU
 * adapters, any M) or 'gemv' (threads along K, coalesced rows: GPUs, M <= FUSED_GEMV_ROWS, i.e. decode).
 */
export type FusedForm = 'direct' | 'gemv';
export const fusedForm = (gpu: Gpu, M: number): FusedForm => (!gpu.cpu && M <= FUSED_GEMV_ROWS ? 'gemv' : 'direct');

/**
 * The most rows the gemv form takes (in blocks of up to GEMV.maxM, one a workgroup): decode steps of up to 128
 * sequences (the built-in presets' batches), where the tiled matmuls' few 64 x 64 tiles leave the GPU idle.
 */
export const FUSED_GEMV_ROWS = 128;

/**
 * The group's prologue, one dispatch: h = for each adapted module j' of the group x' A_j'[slot]^T (0 for
 * rows of slot -1), x' = x, or x normed when p.norm (whose rstd per row follows in h).
 */
export function groupPrologue(gpu: Gpu, h: Tensor, x: Tensor, p: Prologue, form: FusedForm = fusedForm(gpu, x.shape[0])): void {
  const op = 'groupPrologue';
  const [M, K] = checkX(op, x);
  checkPrologue(op, M, K, h, p);
  if (!p.lora && !p.norm) shapeError(op, 'nothing to do: the group has neither LoRA nor a folded norm');
  noAlias(op, { x, h, slots: p.lora?.slots ?? null, A: p.lora?.group.A ?? null, gamma: p.norm?.gamma ?? null });
  const g = p.lora?.group;
  if (form === 'gemv' && M > FUSED_GEMV_ROWS) shapeError(op, `the gemv form takes at most ${FUSED_GEMV_ROWS} rows, got ${M}`);
  const gemv = form === 'gemv';
  linear.run(gpu, {
    program: program('f32', false, Boolean(g), 'store', lanes(K, p.norm), gemv ? 'shrink_gemv' : 'shrink', 0),
    // gamma only norms the LoRA input: the rstd rows need x alone
    bindings: { x, slots: p.lora?.slots, A: g?.A, h, gamma: g ? p.norm?.gamma : null },
    uniforms: uniforms(M, K, g?.GL ?? 0, 0, [], p),
    workgroups: gemv ? [Math.max(1, (g?.GL ?? 0) * (g?.R ?? 0)), M] : grid1d(Math.ceil(prologueSize(M, p) / 64)),
  });
}

/** linear-gemv.wgsl's threads a workgroup (its KT). */
const GEMV_KT = 64;
/** The inline prologue's LoRA h accumulators a thread may keep (G * MR * R) before a separate dispatch is chosen. */
export const INLINE_MAX_H = 64;

type LinearOpts = Prologue & { bias?: Tensor; h?: Tensor; epilogue: Epilogue; form?: FusedForm; inline?: boolean };

/**
 * Whether the gemv form can run the group's prologue inside its matmul (fusedLinear's `inline`), and how:
 * a group with the RMSNorm folded in (its rstd is then nearly free; without one, the h walk costs more than
 * the dispatch it saves), M <= FUSED_GEMV_ROWS, each workgroup's 4 columns inside one module (module boundaries multiples of 4; SwiGLU reads
 * gate and up, G = 2), at most INLINE_MAX_H h accumulators, and the device's workgroup memory and storage
 * buffers enough. Null: nothing to inline, or run groupPrologue first.
 */
export function inlinePrologue(gpu: Gpu, M: number, outs: readonly number[], o: LinearOpts): Inline | null {
  if (!o.norm) return null; // a LoRA h alone costs more inline than as its own dispatch (o, down at 135M on an H200: BENCHMARKS)
  if (M > FUSED_GEMV_ROWS) return null;
  const swi = o.epilogue.kind === 'swiglu';
  const mr = gemvRows(M);
  const R = o.lora?.group.R ?? 0;
  const G = o.lora ? (swi ? 2 : 1) : 0;
  if (o.lora && !swi && outs.slice(0, -1).some((w) => w % 4 !== 0)) return null; // a module boundary inside a workgroup's 4 columns
  if (G * mr * R > INLINE_MAX_H) return null;
  const acc = mr * 4 + G * mr * R + (o.norm ? mr : 0);
  const shared = 4 * (acc * (GEMV_KT / 2 + 1) + mr + G * mr * R);
  if (shared > gpu.limits.maxComputeWorkgroupStorageSize) return null;
  const buffers =
    3 +
    [o.bias, o.epilogue.kind === 'residual', o.epilogue.kind === 'swiglu' && o.epilogue.gu, o.norm].filter(Boolean).length +
    (o.lora ? 3 : 0);
  if (buffers > gpu.limits.maxStorageBuffersPerShaderStage) return null;
  return { R, G, norm: Boolean(o.norm), lora: Boolean(o.lora) };
}

/**
 * The group's projections of x (M, K) through w (NW, K) (rows: the modules' weights one after another,
 * widths `outs`), plus bias (NW) and each row's LoRA, the input normed when `norm` (h: the groupPrologue
 * output), then the epilogue: 'store' out (M, NW); 'residual' out (M, NW) = that + res; 'swiglu' (two
 * modules of I rows each) out (M, I) = silu(gate) * up, with gu (2, M, I) = gate then up when given.
 */
export function fusedLinear(gpu: Gpu, out: Tensor, x: Tensor, w: Tensor, outs: readonly number[], opts: LinearOpts): void {
  const op = 'fusedLinear';
  const [M, K] = checkX(op, x);
  const NW = outs.reduce((a, b) => a + b, 0);
  if (outs.length < 1 || outs.length > 3 || outs.some((o) => !Number.isInteger(o) || o < 1))
    shapeError(op, `outs must be 1 to 3 positive widths, got [${outs.join(', ')}]`);
  const wd = w.dtype;
  if ((wd !== 'f32' && !is16(wd)) || w.shape.length !== 2 || w.shape[0] !== NW || w.shape[1] !== K) {
    shapeError(op, `w must be (${NW}, ${K}) f32/bf16/f16 for outs [${outs.join(', ')}] and x ${shapeStr(x)}, got ${shapeStr(w)}`);
  }
  const { bias, lora, norm, h, epilogue: e } = opts;
  const inl = opts.inline ? inlinePrologue(gpu, M, outs, opts) : null;
  if (opts.inline && !inl) shapeError(op, `this group's prologue cannot run inside the matmul (inlinePrologue): run groupPrologue`);
  if (inl && h) shapeError(op, 'an inline prologue takes no h');
  checkPrologue(op, M, K, inl ? 'inline' : h, opts);
  if (bias && (bias.dtype !== 'f32' || bias.shape.length !== 1 || bias.shape[0] !== NW))
    shapeError(op, `bias must be (${NW}) f32, got ${shapeStr(bias)}`);
  if (lora && lora.group.hIdx.length !== outs.length)
    shapeError(op, `the LoRA group has ${lora.group.hIdx.length} modules, outs ${outs.length}`);
  const swi = e.kind === 'swiglu';
  if (swi && (outs.length !== 2 || outs[0] !== outs[1]))
    shapeError(op, `swiglu needs two modules of equal width (gate, up), got [${outs.join(', ')}]`);
  const NOUT = swi ? NW / 2 : NW;
  const want = (name: string, t: Tensor, shape: number[]) => {
    if (t.dtype !== 'f32' || t.shape.length !== shape.length || shape.some((d, i) => t.shape[i] !== d))
      shapeError(op, `${name} must be (${shape.join(', ')}) f32, got ${shapeStr(t)}`);
  };
  want('out', out, [M, NOUT]);
  if (e.kind === 'residual') want('res', e.res, [M, NOUT]);
  if (e.kind === 'swiglu' && e.gu) want('gu', e.gu, [2, M, NOUT]);
  if (Math.ceil(M / 32) > 65535 || Math.ceil(NOUT / 32) > 65535)
    shapeError(op, `at most ${65535 * 32} rows and outputs, got ${M} and ${NOUT}`);
  const res = e.kind === 'residual' ? e.res : undefined;
  const gu = e.kind === 'swiglu' ? e.gu : undefined;
  noAlias(op, {
    out,
    x,
    w,
    bias: bias ?? null,
    res: res ?? null,
    gu: gu ?? null,
    h: h ?? null,
    B: lora?.group.B ?? null,
    gamma: norm?.gamma ?? null,
  });
  const kind: EpilogueKind = e.kind === 'swiglu' ? (gu ? 'swiglu-save' : 'swiglu') : e.kind;
  const cols = [0];
  for (const o of outs) cols.push(cols[cols.length - 1] + o);
  const bindings = {
    x,
    slots: lora?.slots,
    A: inl ? lora?.group.A : null,
    h,
    w,
    bias,
    Bl: lora?.group.B,
    res,
    out,
    gu,
    gamma: norm?.gamma,
  };
  const used = Object.values(bindings).filter((b) => b).length;
  if (used > gpu.limits.maxStorageBuffersPerShaderStage)
    shapeError(op, `${used} storage buffers, over this device's ${gpu.limits.maxStorageBuffersPerShaderStage}; run the group unfused`);
  const form = inl ? 'gemv' : (opts.form ?? fusedForm(gpu, M));
  if (form === 'gemv' && M > FUSED_GEMV_ROWS) shapeError(op, `the gemv form takes at most ${FUSED_GEMV_ROWS} rows, got ${M}`);
  const gemv = form === 'gemv';
  linear.run(gpu, {
    program: program(wd, Boolean(bias), Boolean(lora), kind, lanes(K, norm), gemv ? 'gemv' : 'linear', gemv ? gemvRows(M) : 0, inl),
    bindings,
    uniforms: uniforms(M, K, NW, NOUT, cols, opts),
    workgroups: gemv ? [...grid1d(Math.ceil(NOUT / (swi ? 2 : 4))), Math.ceil(M / gemvRows(M))] : [Math.ceil(NOUT / 32), Math.ceil(M / 32)],
  });
}

/**
 * q (B, T, NH, HS) = rope(q part of qkv); k, v (B, Tcap, NKV, HS) rows t0 .. t0 + T-1 = rope(k part), v part:
 * the KV cache (Tcap its capacity, t0 its length; or t0Gpu, (1) i32 read on the GPU: the same dispatch at every
 * step) or plain (B, T, NKV, HS) tensors with t0 = 0.
 * qkv (B*T, (NH + 2 NKV) * HS) is the fused q/k/v projection; pos (B*T) i32.
 */
export function ropeKv(
  gpu: Gpu,
  q: Tensor,
  k: Tensor,
  v: Tensor,
  qkv: Tensor,
  pos: Tensor,
  freq: RopeFreq,
  t0: number,
  t0Gpu?: Tensor,
): void {
  const op = 'ropeKv';
  if (q.dtype !== 'f32' || q.shape.length !== 4) shapeError(op, `q must be (B, T, NH, HS) f32, got ${shapeStr(q)}`);
  const [B, T, NH, HS] = q.shape;
  if (HS % 2 !== 0) shapeError(op, `head size must be even, got q ${shapeStr(q)}`);
  if (k.dtype !== 'f32' || k.shape.length !== 4 || k.shape[0] !== B || k.shape[3] !== HS)
    shapeError(op, `k must be (${B}, Tcap, NKV, ${HS}) f32, got ${shapeStr(k)}`);
  const [, Tcap, NKV] = k.shape;
  if (v.dtype !== 'f32' || v.shape.some((d, i) => d !== k.shape[i]))
    shapeError(op, `v must be shaped as k ${shapeStr(k)}, got ${shapeStr(v)}`);
  if (!Number.isInteger(t0) || t0 < 0 || t0 + T > Tcap)
    shapeError(op, `positions ${t0}..${t0 + T - 1} do not fit ${Tcap} cached positions`);
  const W = (NH + 2 * NKV) * HS;
  if (qkv.dtype !== 'f32' || qkv.shape.length !== 2 || qkv.shape[0] !== B * T || qkv.shape[1] !== W)
    shapeError(op, `qkv must be (${B * T}, ${W}) f32, got ${shapeStr(qkv)}`);
  if (pos.dtype !== 'i32' || pos.shape.length !== 1 || pos.shape[0] !== B * T)
    shapeError(op, `pos must be (${B * T}) i32, got ${shapeStr(pos)}`);
  if (t0Gpu && (t0Gpu.dtype !== 'i32' || t0Gpu.shape.length !== 1 || t0Gpu.shape[0] !== 1))
    shapeError(op, `t0Gpu must be (1) i32, got ${shapeStr(t0Gpu)}`);
  noAlias(op, { q, k, v, qkv });
  const invFreq = invFreqOf(op, gpu, HS, freq);
  ropeKvKernel.run(gpu, {
    program: ropeKvProgram(Boolean(t0Gpu)),
    bindings: { pos, inv_freq: invFreq, qkv, qo: q, ko: k, vo: v, klen: t0Gpu },
    uniforms: { BT: B * T, T, NH, NKV, HALF: HS / 2, Tcap, t0 },
    workgroups: grid1d(Math.ceil((B * T * (NH + 2 * NKV) * (HS / 2)) / 64)),
  });
}
