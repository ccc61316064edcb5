// Launchers for causal flash attention (forward saving the log-sum-exp, and its deterministic backward)
// with grouped-query heads, a key padding mask and KV caches of larger capacity. Layouts in attention.wgsl;
// the register-blocked backward variants in backward.wgsl; the tiled path's forward and backward variants
// are picked per sequence length by FORWARD_CHOICE and BACKWARD_CHOICE (variants.ts).

import type { Gpu } from '../../src/gpu/gpu.ts';
import { GpuError, shapeError } from '../../src/gpu/errors.ts';
import { grid1d, programFactory } from '../../src/gpu/program.ts';
import { type Tensor, shapeStr } from '../../src/gpu/tensor.ts';
import { fillTemplate } from '../common.ts';
import { type KernelProgram, defineKernel } from '../program.ts';
import { LSE_MASKED } from './attention.ref.ts';
import source from './attention.wgsl';
import backwardSource from './backward.wgsl';
import decodeSource from './decode.wgsl';
import directSource from './direct.wgsl';
import regsSource from './regs.wgsl';
import realRangeSource from './real-range.wgsl';
import {
  type BackwardVariant,
  type BlockedBackward,
  type ForwardVariant,
  backwardChoice,
  backwardName,
  blockedUnfit,
  forwardChoice,
  forwardName,
  forwardSharedBytes,
  forwardUnfit,
  parseBackward,
  parseForward,
} from './variants.ts';

export { LSE_MASKED };
export * from './variants.ts';

export interface AttentionOptions {
  /** Key padding mask (B, Tm) i32 with Tm >= Tk: 1 = real token, 0 = padding. Default: every key is real. */
  mask?: Tensor;
  /** Keys in use, <= the time dim of k and v (a KV cache's capacity). Default: that time dim. */
  Tk?: number;
  /**
   * The split decode path only: (1) i32 on the GPU holding Tk - Tq (a KV cache's filled length before this
   * step), read by the kernel instead of Tk, whose grid then covers the whole capacity, so the dispatch is
   * the same at every decode step (Gpu recordings replay it). Tk must still be given, for the checks.
   */
  TkGpu?: Tensor;
  /** Score scale; default 1 / sqrt(HS). */
  scale?: number;
  /**
   * Forward only: the split-K decode path (decode.wgsl) instead of the one-pass kernel. Default: when
   * Tq <= DECODE_TQ and the Tq * NH / NKV rows of a kv head fit DECODE_RMAX (and its tiles fit the device).
   */
  split?: boolean;
  /**
   * 'tiled' (attention.wgsl; the split decode forward where it applies), 'direct' (direct.wgsl: no
   * workgroup memory, no barriers) or 'regs' (regs.wgsl: direct.wgsl's kernels with the head's vectors in
   * named registers instead of indexed arrays). Default: 'regs' on CPU adapters (Gpu.cpu), 'tiled' elsewhere.
   */
  path?: AttentionPath;
  /**
   * Backward only, 'tiled' path: the variant (a BackwardVariant or its name, e.g. 'v1',
   * 'blocked:k32x32:q32x32:s2:fused'). Default: backwardChoice(Tq, HS); one this device cannot fit runs 'v1'.
   */
  backward?: BackwardVariant | string;
  /** Forward only, 'tiled' path: the variant (a ForwardVariant or its name, e.g. 'f16x32:pf'). Default: forwardChoice(Tq, HS). */
  forward?: ForwardVariant | string;
}

export type AttentionPath = 'tiled' | 'direct' | 'regs';

/** The uniforms of every attention module (struct Params). */
const UNIFORMS = {
  B: 'u32',
  Tq: 'u32',
  Tk: 'u32',
  Tcap: 'u32',
  NH: 'u32',
  NKV: 'u32',
  G: 'u32',
  Tm: 'u32',
  scale2: 'f32', // scale * log2(e)
  scale: 'f32',
  hasMask: 'u32', // 0: every key is real (mask is a dummy binding)
  NS: 'u32', // key chunks (decode), row splits (blocked backward's dk/dv); 0 elsewhere
} as const;

/** The WGSL types of attention's bindings; layouts in attention.wgsl's header. */
const TYPES = {
  q: 'read array<vec4f>',
  k: 'read array<vec4f>',
  v: 'read array<vec4f>',
  mask: 'read array<i32>',
  out: 'read_write array<vec4f>',
  lse: 'read_write array<f32>',
  dout: 'read array<vec4f>',
  ld: 'read_write array<vec2f>',
  dq: 'read_write array<vec4f>',
  dk: 'read_write array<vec4f>',
  dv: 'read_write array<vec4f>',
  pk: 'read_write array<vec4f>',
  pv: 'read_write array<vec4f>',
  dsg: 'read_write array<f32>',
  pml: 'read_write array<vec2f>',
  pacc: 'read_write array<vec4f>',
  klen: 'read array<i32>',
} as const;

/** attention.wgsl (tiled), direct.wgsl and regs.wgsl. */
const main = defineKernel({
  name: 'attention',
  bindings: ['q', 'k', 'v', 'mask', 'out', 'lse', 'dout', 'ld', 'dq', 'dk', 'dv'],
  uniforms: UNIFORMS,
  types: TYPES,
  entries: {
    forward: ['q', 'k', 'v', 'mask', 'out', 'lse'],
    forwardDirect: ['q', 'k', 'v', 'mask', 'out', 'lse'],
    forwardRegs: ['q', 'k', 'v', 'mask', 'out', 'lse'],
    backwardPrep: ['out', 'lse', 'dout', 'ld'],
    backwardDkDv: ['q', 'k', 'v', 'mask', 'dout', 'ld', 'dk', 'dv'],
    backwardDq: ['q', 'k', 'v', 'mask', 'dout', 'ld', 'dq'],
    backwardDkDvDirect: ['q', 'k', 'v', 'mask', 'out', 'lse', 'dout', 'dk', 'dv'],
    backwardDkDvRegs: ['q', 'k', 'v', 'mask', 'out', 'lse', 'dout', 'dk', 'dv'],
    backwardDqDirect: ['q', 'k', 'v', 'mask', 'out', 'lse', 'dout', 'dq'],
    backwardDqRegs: ['q', 'k', 'v', 'mask', 'out', 'lse', 'dout', 'dq'],
  },
});

/** backward.wgsl: the blocked backward (out and lse only read, by the fused prep). */
const blocked = defineKernel({
  name: 'attention.blocked',
  bindings: ['q', 'k', 'v', 'mask', 'out', 'lse', 'dout', 'ld', 'dq', 'pk', 'pv', 'dk', 'dv', 'dsg'],
  uniforms: UNIFORMS,
  types: { ...TYPES, out: 'read array<vec4f>', lse: 'read array<f32>' },
  entries: {
    backwardDkDvBlocked: ['q', 'k', 'v', 'mask', 'dout', 'ld', 'pk', 'pv', 'dsg?'],
    backwardDkDvReduce: ['pk', 'pv', 'dk', 'dv'],
    backwardDqBlocked: ['q', 'k', 'v', 'mask', 'out?', 'lse?', 'dout', 'ld', 'dq'],
    backwardDqFromDs: ['k', 'v', 'mask', 'dq', 'dsg'],
  },
});

/** decode.wgsl: the split-K decode forward. */
const decode = defineKernel({
  name: 'attention.decode',
  bindings: ['q', 'k', 'v', 'mask', 'out', 'lse', 'pml', 'pacc', 'klen'],
  uniforms: UNIFORMS,
  types: TYPES,
  entries: {
    decodePartial: ['q', 'k', 'v', 'mask', 'pml', 'pacc', 'klen?'],
    decodeCombine: ['out', 'lse', 'pml', 'pacc'],
  },
});
const defaultPath = (gpu: Gpu): AttentionPath => (gpu.cpu ? 'regs' : 'tiled');

/** Storage buffers of the direct and register backwards' dk/dv kernel (it reads out and lse itself, no prep). */
const DIRECT_DKDV_BUFFERS = 9;
/**
 * The backward's path: the one asked for, but the tiled one where the direct and register kernels bind more
 * storage buffers than the device allows (WebGPU's default limit is 8): its prep pass leaves 8.
 */
const backwardPath = (asked: AttentionPath, limits: Pick<GPUSupportedLimits, 'maxStorageBuffersPerShaderStage'>): AttentionPath =>
  asked !== 'tiled' && limits.maxStorageBuffersPerShaderStage < DIRECT_DKDV_BUFFERS ? 'tiled' : asked;

/** The split-K decode forward serves up to this many query positions, and this many rows per kv head. */
export const DECODE_TQ = 4;
export const DECODE_RMAX = 16;

/** Bytes of workgroup memory of the decode kernel with CH keys per chunk (mirrors decode.wgsl). */
export const decodeSharedBytes = (HS: number, CH: number): number =>
  DECODE_RMAX * (HS / 4) * VEC4 + 2 * CH * (HS / 4 + 1) * VEC4 + DECODE_RMAX * (CH + 1) * 4 + CH * 4;

/** Keys per chunk of the decode kernel: the largest of 32, 16, 8 that fits `limit`; null if none does. */
export function decodeChunk(HS: number, limit: number): number | null {
  for (const ch of [32, 16, 8]) if (decodeSharedBytes(HS, ch) <= limit) return ch;
  return null;
}

interface DecodePrograms {
  partial: KernelProgram<'decodePartial'>;
  combine: KernelProgram<'decodeCombine'>;
  CH: number;
}
const decodeProgramsFor = programFactory(
  (gpu: Gpu, HS: number, tkGpu: boolean) => `${HS}:${gpu.limits.maxComputeWorkgroupStorageSize}:${tkGpu}`,
  (gpu: Gpu, HS: number, tkGpu: boolean): DecodePrograms | null => {
    const CH = decodeChunk(HS, gpu.limits.maxComputeWorkgroupStorageSize);
    if (CH === null) return null;
    const code = () =>
      fillTemplate(decodeSource, {
        HEADER: decode.header(),
        HS4: String(HS / 4),
        CH: String(CH),
        RMAX: String(DECODE_RMAX),
        TK: tkGpu ? 'u32(klen[0]) + u.Tq' : 'u.Tk',
      });
    const key = `attention:decode:hs${HS}:c${CH}:r${DECODE_RMAX}${tkGpu ? ':tkgpu' : ''}`;
    return { partial: decode.program(key, code, 'decodePartial'), combine: decode.program(key, code, 'decodeCombine'), CH };
  },
);

/** Tile sizes, chosen per head size so each kernel's workgroup memory fits the device's limit. */
export interface AttentionTiles {
  lanes: number;
  /** forward: query rows per workgroup, keys per tile */
  fBR: number;
  fBC: number;
  /** dk/dv: keys per workgroup, query rows per tile */
  kBK: number;
  kBQ: number;
  /** dq: query rows per workgroup, keys per tile */
  qBR: number;
  qBC: number;
}

const VEC4 = 16;

/** Bytes of workgroup memory each kernel uses with these tiles (mirrors the var<workgroup> in the WGSL). */
export function attentionSharedBytes(HS: number, t: AttentionTiles): { fwd: number; dkdv: number; dq: number } {
  const RS = HS / 4 + 1;
  return {
    fwd: forwardSharedBytes(HS, t.fBR, t.fBC),
    dkdv: 2 * (t.kBK + t.kBQ) * RS * VEC4 + 2 * t.kBK * (t.kBQ + 1) * 4 + t.kBQ * 8 + t.kBK * 4,
    dq: 2 * (t.qBR + t.qBC) * RS * VEC4 + t.qBR * (t.qBC + 1) * 4 + t.qBC * 4,
  };
}

/** The largest tiles (first in each preference list) that fit `limit` bytes of workgroup memory; null if none does. */
export function attentionTiles(HS: number, limit: number, maxThreads = 256): AttentionTiles | null {
  const HS4 = HS / 4;
  const lanes = HS4 % 4 === 0 ? 4 : HS4 % 2 === 0 ? 2 : 1;
  const rows = 128 / lanes; // 128 threads for any head size
  const pairs: Array<[number, number]> = [
    [rows, 32],
    [rows, 16],
    [rows, 8],
    [32, 16],
    [16, 16],
    [16, 8],
    [8, 8],
    [4, 4],
  ];
  const pick = (bytes: (a: number, b: number) => number): [number, number] | null => {
    for (const [a, b] of pairs) if (a * lanes <= maxThreads && bytes(a, b) <= limit) return [a, b];
    return null;
  };
  const probe = (a: number, b: number): AttentionTiles => ({ lanes, fBR: a, fBC: b, kBK: a, kBQ: b, qBR: a, qBC: b });
  const f = pick((a, b) => attentionSharedBytes(HS, probe(a, b)).fwd);
  const k = pick((a, b) => attentionSharedBytes(HS, probe(a, b)).dkdv);
  const q = pick((a, b) => attentionSharedBytes(HS, probe(a, b)).dq);
  if (!f || !k || !q) return null;
  return { lanes, fBR: f[0], fBC: f[1], kBK: k[0], kBQ: k[1], qBR: q[0], qBC: q[1] };
}

/** A module's source with realRange (real-range.wgsl: the batch's span of real keys) appended. */
const withRealRange = (code: string): string => `${code}\n${realRangeSource}`;

interface AttentionPrograms {
  fwd: KernelProgram<'forward'>;
  prep: KernelProgram<'backwardPrep'>;
  dkdv: KernelProgram<'backwardDkDv'>;
  dq: KernelProgram<'backwardDq'>;
  tiles: AttentionTiles;
}
const attentionPrograms = programFactory(
  (gpu: Gpu, HS: number) => `${HS}:${gpu.limits.maxComputeWorkgroupStorageSize}:${gpu.limits.maxComputeInvocationsPerWorkgroup}`,
  (gpu: Gpu, HS: number): AttentionPrograms => {
    const limit = gpu.limits.maxComputeWorkgroupStorageSize;
    const t = attentionTiles(HS, limit, gpu.limits.maxComputeInvocationsPerWorkgroup);
    if (!t) throw new GpuError('LIMIT', `attention: head size ${HS} needs more than this device's ${limit} bytes of workgroup memory`);
    const code = () =>
      fillTemplate(withRealRange(source), {
        HEADER: main.header(),
        HS4: String(HS / 4),
        LANES: String(t.lanes),
        F_BR: String(t.fBR),
        F_BC: String(t.fBC),
        F_PF: 'false',
        K_BK: String(t.kBK),
        K_BQ: String(t.kBQ),
        Q_BR: String(t.qBR),
        Q_BC: String(t.qBC),
      });
    const key = `attention:hs${HS}:f${t.fBR}x${t.fBC}:k${t.kBK}x${t.kBQ}:q${t.qBR}x${t.qBC}`;
    return {
      fwd: main.program(key, code, 'forward'),
      prep: main.program(key, code, 'backwardPrep'),
      dkdv: main.program(key, code, 'backwardDkDv'),
      dq: main.program(key, code, 'backwardDq'),
      tiles: t,
    };
  },
);

/** The forward of a ForwardVariant (attention.wgsl with its tiles; the other entry points' tiles as attentionTiles). */
const forwardPrograms = programFactory(
  (gpu: Gpu, HS: number, v: ForwardVariant) =>
    `${HS}:${forwardName(v)}:${gpu.limits.maxComputeWorkgroupStorageSize}:${gpu.limits.maxComputeInvocationsPerWorkgroup}`,
  (gpu: Gpu, HS: number, v: ForwardVariant): KernelProgram<'forward'> => {
    const t = attentionPrograms(gpu, HS).tiles;
    const code = () =>
      fillTemplate(withRealRange(source), {
        HEADER: main.header(),
        HS4: String(HS / 4),
        LANES: String(t.lanes),
        F_BR: String(v.fBR),
        F_BC: String(v.fBC),
        F_PF: String(v.pf),
        K_BK: String(t.kBK),
        K_BQ: String(t.kBQ),
        Q_BR: String(t.qBR),
        Q_BC: String(t.qBC),
      });
    return main.program(`attention:hs${HS}:${forwardName(v)}`, code, 'forward');
  },
);

interface BlockedPrograms {
  dkdv: KernelProgram<'backwardDkDvBlocked'>;
  reduce: KernelProgram<'backwardDkDvReduce'>;
  dq: KernelProgram<'backwardDqBlocked'>;
  dqFromDs: KernelProgram<'backwardDqFromDs'>;
}

const DS_STORE = [
  'if (r < rB) {',
  '  let a = (((b * u.NKV + kvh) * R + r) * u.Tk + jA);',
  '  if (jA < u.Tk) { dsg[a] = ds.x; }',
  '  if (jA + 1u < u.Tk) { dsg[a + 1u] = ds.y; }',
  '  if (jA + 2u < u.Tk) { dsg[a + 2u] = ds.z; }',
  '  if (jA + 3u < u.Tk) { dsg[a + 3u] = ds.w; }',
  '}',
];
const blockedPrograms = programFactory(
  (HS: number, v: BlockedBackward) => `${HS}:${backwardName({ ...v, split: 1 })}`,
  (HS: number, v: BlockedBackward): BlockedPrograms => {
    const prep = v.fusePrep
      ? [
          'let L = lse[hIndex(b, kvh, r)];',
          'let a = qIndex(b, kvh, r);',
          'var acc = vec4f(0.0);',
          'for (var d = 0u; d < HS4; d++) { acc = fma(dout[a + d], out[a + d], acc); }',
          '// A fully masked row keeps a huge lse: every p it produces is masked to 0 anyway.',
          'let x = vec2f(select(L * LOG2E, LSE_MASKED, L <= NEG_HALF), (acc.x + acc.y) + (acc.z + acc.w));',
          'qLD[lr] = x;',
          'if (r0 + lr < R) { ld[hIndex(b, kvh, r)] = x; }',
        ]
      : ['qLD[lr] = ld[hIndex(b, kvh, r)];'];
    const code = () =>
      fillTemplate(withRealRange(backwardSource), {
        HEADER: blocked.header(),
        HS4: String(HS / 4),
        K_BK: String(v.kBK),
        K_BQ: String(v.kBQ),
        K_W: String(v.kW),
        Q_BR: String(v.qBR),
        Q_BC: String(v.qBC),
        Q_W: String(v.qW),
        PREP: prep.map((l) => `    ${l}`).join('\n'),
        DS_STORE: v.ds ? DS_STORE.map((l) => `      ${l}`).join('\n') : '',
        PF: String(Boolean(v.pf)),
      });
    const key = `attention:bwd:hs${HS}:${backwardName({ ...v, split: 1 })
      .slice('blocked:'.length)
      .replace(':s1', '')}`;
    return {
      dkdv: blocked.program(key, code, 'backwardDkDvBlocked'),
      reduce: blocked.program(key, code, 'backwardDkDvReduce'),
      dq: blocked.program(key, code, 'backwardDqBlocked'),
      dqFromDs: blocked.program(key, code, 'backwardDqFromDs'),
    };
  },
);

/** The barrier-free kernels of direct.wgsl, for CPU adapters (Gpu.cpu). */
const directPrograms = programFactory(
  (HS: number) => `${HS}`,
  (HS: number) => {
    const key = `attention:direct:hs${HS}`;
    const code = () => fillTemplate(directSource, { HEADER: main.header(), HS4: String(HS / 4) });
    return {
      fwd: main.program(key, code, 'forwardDirect'),
      dkdv: main.program(key, code, 'backwardDkDvDirect'),
      dq: main.program(key, code, 'backwardDqDirect'),
    };
  },
);

/** Generates regs.wgsl for head size HS: every loop over the HS / 4 vec4s of a row unrolled. */
export function regsSourceOf(HS: number): string {
  const n = HS / 4;
  const ds = Array.from({ length: n }, (_, d) => d);
  const ind = (w: number, lines: string[]) => lines.map((l) => ' '.repeat(w) + l).join('\n');
  const dot = (x: string, y: string) => [
    `var ${x}${y}4 = ${x}0 * ${y}0;`,
    ...ds.slice(1).map((d) => `${x}${y}4 = fma(${x}${d}, ${y}${d}, ${x}${y}4);`),
  ];
  const load = (name: string, buf: string, base: string) => ds.map((d) => `let ${name}${d} = ${buf}[${base} + ${d}u];`);
  return fillTemplate(regsSource, {
    HEADER: main.header(),
    HS4: String(n),
    FWD_INIT: ind(2, [...load('q', 'q', 'qb'), ...ds.map((d) => `var o${d} = vec4f(0.0);`)]),
    FWD_SCORE: ind(4, [...load('k', 'k', 'kb'), ...dot('q', 'k'), 'let s = hsum(qk4) * u.scale2;']),
    FWD_ACC: ind(
      4,
      ds.map((d) => `o${d} = fma(vec4f(p), v[kb + ${d}u], o${d} * alpha);`),
    ),
    FWD_STORE: ind(
      2,
      ds.map((d) => `out[qb + ${d}u] = o${d} * inv;`),
    ),
    // D = rowsum(dout * out) of the thread's own query row, as direct.wgsl's rowLd.
    DQ_INIT: ind(2, [
      ...load('q', 'q', 'qb'),
      ...load('e', 'dout', 'qb'),
      ...load('f', 'out', 'qb'),
      ...dot('e', 'f'),
      'let D = hsum(ef4);',
      ...ds.map((d) => `var g${d} = vec4f(0.0);`),
    ]),
    DQ_KEY: ind(4, [
      ...load('k', 'k', 'kb'),
      ...load('w', 'v', 'kb'),
      ...dot('q', 'k'),
      ...dot('e', 'w'),
      'let p = exp2(hsum(qk4) * u.scale2 - L2);',
      'let ds = p * (hsum(ew4) - D);',
      ...ds.map((d) => `g${d} = fma(vec4f(ds), k${d}, g${d});`),
    ]),
    DQ_STORE: ind(
      2,
      ds.map((d) => `dq[qb + ${d}u] = g${d} * u.scale;`),
    ),
    KV_INIT: ind(
      2,
      ds.flatMap((d) => [`var gk${d} = vec4f(0.0);`, `var gv${d} = vec4f(0.0);`]),
    ),
    KV_LOAD: ind(4, [...load('k', 'k', 'kb'), ...load('w', 'v', 'kb')]),
    KV_QUERY: ind(8, [
      ...load('q', 'q', 'qb'),
      ...load('e', 'dout', 'qb'),
      ...load('f', 'out', 'qb'),
      ...dot('e', 'f'),
      ...dot('q', 'k'),
      ...dot('e', 'w'),
      'let p = exp2(hsum(qk4) * u.scale2 - lse2(b, h, i));',
      'let ds = p * (hsum(ew4) - hsum(ef4));',
      ...ds.flatMap((d) => [`gv${d} = fma(vec4f(p), e${d}, gv${d});`, `gk${d} = fma(vec4f(ds), q${d}, gk${d});`]),
    ]),
    KV_STORE: ind(
      2,
      ds.flatMap((d) => [`dk[kb + ${d}u] = gk${d} * u.scale;`, `dv[kb + ${d}u] = gv${d};`]),
    ),
  });
}

const regsPrograms = programFactory(
  (HS: number) => `${HS}`,
  (HS: number) => {
    const key = `attention:regs:hs${HS}`;
    const code = () => regsSourceOf(HS);
    return {
      fwd: main.program(key, code, 'forwardRegs'),
      dkdv: main.program(key, code, 'backwardDkDvRegs'),
      dq: main.program(key, code, 'backwardDqRegs'),
    };
  },
);

interface Dims {
  B: number;
  Tq: number;
  Tk: number;
  Tcap: number;
  NH: number;
  NKV: number;
  HS: number;
  Tm: number;
  scale: number;
}

const dummyMasks = new WeakMap<Gpu, Tensor>();
/** The mask to bind: the caller's, or a one-element stand-in the kernels never read (u.hasMask = 0). */
function maskOf(gpu: Gpu, opts: AttentionOptions): Tensor {
  if (opts.mask) return opts.mask;
  let t = dummyMasks.get(gpu);
  if (!t) {
    t = gpu.upload([1], [1], 'i32', 'attention.nomask');
    dummyMasks.set(gpu, t);
  }
  return t;
}

const dimsStr = (...xs: Array<number | string>) => `(${xs.join(', ')})`;

function expectShape(op: string, name: string, t: Tensor, shape: number[], dtype = 'f32'): void {
  if (t.dtype !== dtype || t.shape.length !== shape.length || t.shape.some((s, i) => s !== shape[i])) {
    shapeError(op, `${name} must be ${dimsStr(...shape)} ${dtype}, got ${shapeStr(t)}`);
  }
}

/** Checks q, k, v (and the mask) and derives the dims; throws a SHAPE error before anything is dispatched. */
function attentionDims(op: string, q: Tensor, k: Tensor, v: Tensor, opts: AttentionOptions): Dims {
  if (q.dtype !== 'f32' || q.shape.length !== 4) shapeError(op, `q must be (B, Tq, NH, HS) f32, got ${shapeStr(q)}`);
  if (k.dtype !== 'f32' || k.shape.length !== 4) shapeError(op, `k must be (B, Tk, NKV, HS) f32, got ${shapeStr(k)}`);
  const [B, Tq, NH, HS] = q.shape;
  const [Bk, Tcap, NKV, HSk] = k.shape;
  if (Bk !== B || HSk !== HS) shapeError(op, `k must be (${B}, Tk, NKV, ${HS}) f32 to match q ${shapeStr(q)}, got ${shapeStr(k)}`);
  expectShape(op, 'v', v, [B, Tcap, NKV, HS]);
  if (NKV < 1 || NH % NKV !== 0)
    shapeError(op, `NH = ${NH} query heads must be a multiple of NKV = ${NKV} kv heads (q ${shapeStr(q)}, k ${shapeStr(k)})`);
  if (HS % 4 !== 0 || HS < 4 || HS > 256) shapeError(op, `head size HS = ${HS} must be a multiple of 4 in [4, 256] (q ${shapeStr(q)})`);
  const Tk = opts.Tk ?? Tcap;
  if (!Number.isInteger(Tk) || Tk < 1 || Tk > Tcap) shapeError(op, `Tk = ${Tk} must be in [1, ${Tcap}] (the time dim of k ${shapeStr(k)})`);
  if (Tq > Tk) shapeError(op, `q has Tq = ${Tq} positions, more than the Tk = ${Tk} keys (causal alignment puts queries at the end)`);
  let Tm = 0;
  if (opts.mask) {
    const m = opts.mask;
    if (m.dtype !== 'i32' || m.shape.length !== 2 || m.shape[0] !== B || m.shape[1] < Tk) {
      shapeError(op, `mask must be (${B}, Tm >= ${Tk}) i32, got ${shapeStr(m)}`);
    }
    Tm = m.shape[1];
  }
  return { B, Tq, Tk, Tcap, NH, NKV, HS, Tm, scale: opts.scale ?? 1 / Math.sqrt(HS) };
}

const uniforms = (d: Dims, NS = 0) => ({
  B: d.B,
  Tq: d.Tq,
  Tk: d.Tk,
  Tcap: d.Tcap,
  NH: d.NH,
  NKV: d.NKV,
  G: d.NH / d.NKV,
  Tm: d.Tm,
  scale2: d.scale * Math.LOG2E,
  scale: d.scale,
  hasMask: d.Tm > 0 ? 1 : 0,
  NS,
});

/**
 * out (B, Tq, NH, HS) = softmax(q k^T * scale, causal + padding mask) v, and lse (B, NH, Tq) its log-sum-exp
 * (LSE_MASKED for a row that sees no key; its out is 0). q (B, Tq, NH, HS), k and v (B, Tcap, NKV, HS).
 */
export function attentionForward(gpu: Gpu, out: Tensor, lse: Tensor, q: Tensor, k: Tensor, v: Tensor, opts: AttentionOptions = {}): void {
  const op = 'attentionForward';
  const d = attentionDims(op, q, k, v, opts);
  expectShape(op, 'out', out, [d.B, d.Tq, d.NH, d.HS]);
  expectShape(op, 'lse', lse, [d.B, d.NH, d.Tq]);
  const R = d.Tq * (d.NH / d.NKV);
  const fits = d.Tq <= DECODE_TQ && R <= DECODE_RMAX;
  const path = opts.path ?? defaultPath(gpu);
  const direct = path !== 'tiled';
  const tkGpu = opts.TkGpu;
  if (tkGpu && (tkGpu.dtype !== 'i32' || tkGpu.shape.length !== 1 || tkGpu.shape[0] !== 1))
    shapeError(op, `TkGpu must be (1) i32, got ${shapeStr(tkGpu)}`);
  if (opts.split ?? (fits && !direct)) {
    if (!fits)
      shapeError(
        op,
        `split: the decode path takes Tq <= ${DECODE_TQ} and Tq * NH / NKV <= ${DECODE_RMAX} rows per kv head, got Tq = ${d.Tq}, ${R} rows`,
      );
    const dp = decodeProgramsFor(gpu, d.HS, Boolean(tkGpu));
    if (dp) {
      decodeForward(gpu, dp, out, lse, q, k, v, opts, d);
      return;
    }
  }
  if (tkGpu) shapeError(op, 'TkGpu needs the split decode path (a GPU adapter, Tq <= 4, and its tiles fitting the device)');
  if (direct) {
    main.run(gpu, {
      program: (path === 'regs' ? regsPrograms : directPrograms)(d.HS).fwd,
      bindings: { q, k, v, mask: maskOf(gpu, opts), out, lse },
      uniforms: uniforms(d),
      workgroups: grid1d(Math.ceil((d.B * d.Tq * d.NH) / 64)),
    });
    return;
  }
  const p = attentionPrograms(gpu, d.HS);
  const asked = opts.forward ?? forwardChoice(d.Tq, d.HS);
  const fv = typeof asked === 'string' ? parseForward(asked) : asked;
  const own = fv !== null && forwardUnfit(d.HS, p.tiles.lanes, fv, gpu.limits) === null ? fv : null;
  main.run(gpu, {
    program: own ? forwardPrograms(gpu, d.HS, own) : p.fwd,
    bindings: { q, k, v, mask: maskOf(gpu, opts), out, lse },
    uniforms: uniforms(d),
    workgroups: [Math.ceil(R / (own ? own.fBR : p.tiles.fBR)), d.NKV, d.B],
  });
}

type BackwardLimits = Parameters<typeof blockedUnfit>[2] & Pick<GPUSupportedLimits, 'maxStorageBufferBindingSize' | 'maxBufferSize'>;

/**
 * The backward variant that runs: without dS scratch past DS_SCRATCH_MAX (a browser's GPU memory) or the
 * binding limits, and 'v1' where the blocked variant does not fit the device.
 */
function settleBackward(v: BackwardVariant, dsBytes: number, HS: number, limits: BackwardLimits): BackwardVariant {
  if (v === 'v1') return v;
  const fits =
    v.ds && dsBytes > Math.min(DS_SCRATCH_MAX, limits.maxStorageBufferBindingSize, limits.maxBufferSize) ? { ...v, ds: false } : v;
  return blockedUnfit(HS, fits, limits) === null ? fits : 'v1';
}

/**
 * Bytes of each scratch tensor attentionBackward takes from the pool for these dims (self-attention, T
 * queries and keys) on a device, with the choices it makes: the tiled path's ld, and the blocked variant's
 * split partials of dk and dv and its dS scratch. For a memory plan of what a training step holds at once.
 */
export function backwardScratch(
  d: { B: number; NH: number; NKV: number; T: number; HS: number },
  device: { cpu: boolean; limits: BackwardLimits },
): number[] {
  // the direct and register paths (defaultPath) take none
  if (device.cpu && backwardPath('regs', device.limits) !== 'tiled') return [];
  const dsBytes = d.B * d.NH * d.T * d.T * 4;
  const variant = settleBackward(backwardChoice(d.T, d.HS), dsBytes, d.HS, device.limits);
  const out = [d.B * d.NH * d.T * 2 * 4];
  if (variant === 'v1') return out;
  if (variant.split > 1) out.push(...[0, 1].map(() => variant.split * d.B * d.T * d.NKV * d.HS * 4));
  if (variant.ds) out.push(dsBytes);
  return out;
}

/** The split-K forward: partial (max, sum, acc) per chunk of keys, then their combination. */
function decodeForward(
  gpu: Gpu,
  p: DecodePrograms,
  out: Tensor,
  lse: Tensor,
  q: Tensor,
  k: Tensor,
  v: Tensor,
  opts: AttentionOptions,
  d: Dims,
): void {
  const NS = Math.ceil((opts.TkGpu ? d.Tcap : d.Tk) / p.CH);
  const R = d.Tq * (d.NH / d.NKV);
  const u = uniforms(d, NS);
  const pml = gpu.tensor([d.B, d.NKV, NS, R, 2], 'f32', 'attention.pml');
  const pacc = gpu.tensor([d.B, d.NKV, NS, R, d.HS], 'f32', 'attention.pacc');
  decode.run(gpu, {
    program: p.partial,
    bindings: { q, k, v, mask: maskOf(gpu, opts), pml, pacc, klen: opts.TkGpu },
    uniforms: u,
    workgroups: [NS, d.NKV, d.B],
  });
  decode.run(gpu, {
    program: p.combine,
    bindings: { out, lse, pml, pacc },
    uniforms: u,
    workgroups: grid1d(Math.ceil((d.B * d.Tq * d.NH * (d.HS / 4)) / 64)),
  });
  gpu.release(pml, pacc); // later users of these pooled buffers are ordered after the dispatches
}

/** The most scratch (B*NH*T*T floats) a backward's 'ds' variant may take; past it the no-scratch kernel runs. */
export const DS_SCRATCH_MAX = 512 * 2 ** 20;

/**
 * dq (B, Tq, NH, HS), dk and dv (B, Tcap, NKV, HS) = gradients of sum(out * dout), written (=), not
 * accumulated; dk/dv rows >= Tk are 0. Uses the forward's out and lse; deterministic (no atomics).
 */
export function attentionBackward(
  gpu: Gpu,
  dq: Tensor,
  dk: Tensor,
  dv: Tensor,
  dout: Tensor,
  q: Tensor,
  k: Tensor,
  v: Tensor,
  out: Tensor,
  lse: Tensor,
  opts: AttentionOptions = {},
): void {
  const op = 'attentionBackward';
  const d = attentionDims(op, q, k, v, opts);
  const qShape = [d.B, d.Tq, d.NH, d.HS];
  const kShape = [d.B, d.Tcap, d.NKV, d.HS];
  expectShape(op, 'dout', dout, qShape);
  expectShape(op, 'out', out, qShape);
  expectShape(op, 'lse', lse, [d.B, d.NH, d.Tq]);
  expectShape(op, 'dq', dq, qShape);
  expectShape(op, 'dk', dk, kShape);
  expectShape(op, 'dv', dv, kShape);
  const u = uniforms(d);
  const path = backwardPath(opts.path ?? defaultPath(gpu), gpu.limits);
  if (path !== 'tiled') {
    const p = (path === 'regs' ? regsPrograms : directPrograms)(d.HS);
    const mask = maskOf(gpu, opts);
    main.run(gpu, {
      program: p.dkdv,
      bindings: { q, k, v, mask, out, lse, dout, dk, dv },
      uniforms: u,
      workgroups: grid1d(Math.ceil((d.B * d.Tcap * d.NKV) / 64)),
    });
    main.run(gpu, {
      program: p.dq,
      bindings: { q, k, v, mask, out, lse, dout, dq },
      uniforms: u,
      workgroups: grid1d(Math.ceil((d.B * d.Tq * d.NH) / 64)),
    });
    return;
  }
  const p = attentionPrograms(gpu, d.HS);
  const R = d.Tq * (d.NH / d.NKV);
  const ld = gpu.tensor([d.B, d.NH, d.Tq, 2], 'f32', 'attention.ld');
  const asked = opts.backward ?? backwardChoice(d.Tq, d.HS);
  const variant = settleBackward(typeof asked === 'string' ? parseBackward(asked) : asked, d.B * d.NH * d.Tq * d.Tk * 4, d.HS, gpu.limits);
  if (variant !== 'v1') {
    blockedBackward(gpu, p, variant, d, { dq, dk, dv, dout, q, k, v, out, lse, ld, mask: maskOf(gpu, opts) });
    gpu.release(ld);
    return;
  }
  main.run(gpu, {
    program: p.prep,
    bindings: { out, lse, dout, ld },
    uniforms: u,
    workgroups: grid1d(Math.ceil((d.B * d.Tq * d.NH) / 64)),
  });
  main.run(gpu, {
    program: p.dkdv,
    bindings: { q, k, v, mask: maskOf(gpu, opts), dout, ld, dk, dv },
    uniforms: u,
    workgroups: [Math.ceil(d.Tcap / p.tiles.kBK), d.NKV, d.B],
  });
  main.run(gpu, {
    program: p.dq,
    bindings: { q, k, v, mask: maskOf(gpu, opts), dout, ld, dq },
    uniforms: u,
    workgroups: [Math.ceil(R / p.tiles.qBR), d.NKV, d.B],
  });
  // Back to the pool once these dispatches are recorded: later writes to it are ordered after them.
  gpu.release(ld);
}

interface BackwardTensors {
  dq: Tensor;
  dk: Tensor;
  dv: Tensor;
  dout: Tensor;
  q: Tensor;
  k: Tensor;
  v: Tensor;
  out: Tensor;
  lse: Tensor;
  ld: Tensor;
  mask: Tensor;
}

/** The blocked backward: [prep,] dq (which computes ld when fused), dk/dv [, the sum of its splits]; with ds: prep, dk/dv (storing dS) [, sum], dq. */
function blockedBackward(gpu: Gpu, v1: AttentionPrograms, v: BlockedBackward, d: Dims, t: BackwardTensors): void {
  const p = blockedPrograms(d.HS, v);
  const u = uniforms(d, v.split);
  const R = d.Tq * (d.NH / d.NKV);
  if (!v.fusePrep) {
    main.run(gpu, {
      program: v1.prep,
      bindings: { out: t.out, lse: t.lse, dout: t.dout, ld: t.ld },
      uniforms: u,
      workgroups: grid1d(Math.ceil((d.B * d.Tq * d.NH) / 64)),
    });
  }
  const dqGrid: [number, number, number] = [Math.ceil(R / v.qBR), d.NKV, d.B];
  if (!v.ds) {
    blocked.run(gpu, {
      program: p.dq,
      bindings: {
        q: t.q,
        k: t.k,
        v: t.v,
        mask: t.mask,
        out: v.fusePrep ? t.out : null,
        lse: v.fusePrep ? t.lse : null,
        dout: t.dout,
        ld: t.ld,
        dq: t.dq,
      },
      uniforms: u,
      workgroups: dqGrid,
    });
  }
  const kShape = [v.split, d.B, d.Tcap, d.NKV, d.HS];
  const pk = v.split > 1 ? gpu.tensor(kShape, 'f32', 'attention.pdk') : t.dk;
  const pv = v.split > 1 ? gpu.tensor(kShape, 'f32', 'attention.pdv') : t.dv;
  const ds = v.ds ? gpu.tensor([d.B, d.NKV, R, d.Tk], 'f32', 'attention.ds') : undefined;
  blocked.run(gpu, {
    program: p.dkdv,
    bindings: { q: t.q, k: t.k, v: t.v, mask: t.mask, dout: t.dout, ld: t.ld, pk, pv, dsg: ds },
    uniforms: u,
    workgroups: [Math.ceil(d.Tcap / v.kBK) * v.split, d.NKV, d.B],
  });
  if (v.split > 1) {
    blocked.run(gpu, {
      program: p.reduce,
      bindings: { pk, pv, dk: t.dk, dv: t.dv },
      uniforms: u,
      workgroups: grid1d(Math.ceil((d.B * d.Tcap * d.NKV * (d.HS / 4)) / 64)),
    });
    gpu.release(pk, pv);
  }
  if (ds) {
    blocked.run(gpu, {
      program: p.dqFromDs,
      bindings: { k: t.k, v: t.v, mask: t.mask, dq: t.dq, dsg: ds },
      uniforms: u,
      workgroups: dqGrid,
    });
    gpu.release(ds);
  }
}
