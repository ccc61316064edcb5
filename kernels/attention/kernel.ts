// What every attention kernel shares: the launch options, the uniforms and binding types of every module
// (struct Params), the kernel of attention.wgsl and direct.wgsl, and the checks that derive the
// dims from q, k and v before anything is dispatched.

import type { Gpu } from '../../src/gpu/gpu.ts';
import { shapeError } from '../../src/gpu/errors.ts';
import { type Tensor, shapeStr } from '../../src/gpu/tensor.ts';
import { defineKernel } from '../program.ts';
import realRangeSource from './real-range.wgsl';
import type { BackwardVariant, ForwardVariant } from './variants.ts';

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
   * workgroup memory, no barriers) or 'regs' (direct.wgsl's kernels with the head's vectors in named
   * registers instead of indexed arrays). Default: 'regs' on CPU adapters (Gpu.cpu), 'tiled' elsewhere.
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
export const UNIFORMS = {
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

export const TYPES = {
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

/** attention.wgsl (tiled) and direct.wgsl (the 'direct' and 'regs' paths). */
export const main = defineKernel({
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

/** The path when none is asked: the barrier-free registers on a CPU adapter, the tiles on a GPU. */
export const defaultPath = (gpu: Gpu): AttentionPath => (gpu.cpu ? 'regs' : 'tiled');

/** Storage buffers of the direct and register backwards' dk/dv kernel (it reads out and lse itself, no prep). */
const DIRECT_DKDV_BUFFERS = 9;
/**
 * The backward's path: the one asked for, but the tiled one where the direct and register kernels bind more
 * storage buffers than the device allows (WebGPU's default limit is 8): its prep pass leaves 8.
 */
export const backwardPath = (asked: AttentionPath, limits: Pick<GPUSupportedLimits, 'maxStorageBuffersPerShaderStage'>): AttentionPath =>
  asked !== 'tiled' && limits.maxStorageBuffersPerShaderStage < DIRECT_DKDV_BUFFERS ? 'tiled' : asked;

/** Bytes of a vec4f. */
export const VEC4 = 16;

/** A module's source with realRange (real-range.wgsl: the batch's span of real keys) appended. */
export const withRealRange = (code: string): string => `${code}\n${realRangeSource}`;

/** A call's dims, checked (attentionDims): q (B, Tq, NH, HS), k and v (B, Tcap, NKV, HS), Tk keys in use, a mask (B, Tm). */
export interface Dims {
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
export function maskOf(gpu: Gpu, opts: AttentionOptions): Tensor {
  if (opts.mask) return opts.mask;
  let t = dummyMasks.get(gpu);
  if (!t) {
    t = gpu.upload([1], [1], 'i32', 'attention.nomask');
    dummyMasks.set(gpu, t);
  }
  return t;
}

const dimsStr = (...xs: Array<number | string>) => `(${xs.join(', ')})`;

export function expectShape(op: string, name: string, t: Tensor, shape: number[], dtype = 'f32'): void {
  if (t.dtype !== dtype || t.shape.length !== shape.length || t.shape.some((s, i) => s !== shape[i])) {
    shapeError(op, `${name} must be ${dimsStr(...shape)} ${dtype}, got ${shapeStr(t)}`);
  }
}

/** Checks q, k, v (and the mask) and derives the dims; throws a SHAPE error before anything is dispatched. */
export function attentionDims(op: string, q: Tensor, k: Tensor, v: Tensor, opts: AttentionOptions): Dims {
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

/** A dispatch's uniforms (UNIFORMS); NS the decode's key chunks or the blocked backward's row splits. */
export const uniforms = (d: Dims, NS = 0) => ({
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
