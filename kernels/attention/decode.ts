// The split-K decode forward (decode.wgsl): for a few query positions (decode steps), partial softmax sums
// per chunk of keys, then their combination; attentionForward takes it where it applies.

import type { Gpu } from '../../src/gpu/gpu.ts';
import { grid1d, programFactory } from '../../src/gpu/program.ts';
import type { Tensor } from '../../src/gpu/tensor.ts';
import { fillTemplate } from '../common.ts';
import { type KernelProgram, defineKernel } from '../program.ts';
import decodeSource from './decode.wgsl';
import { type AttentionOptions, type Dims, TYPES, UNIFORMS, VEC4, maskOf, uniforms } from './kernel.ts';

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

export interface DecodePrograms {
  partial: KernelProgram<'decodePartial'>;
  combine: KernelProgram<'decodeCombine'>;
  CH: number;
}
export const decodeProgramsFor = programFactory(
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

/** The split-K forward: partial (max, sum, acc) per chunk of keys, then their combination. */
export function decodeForward(
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
