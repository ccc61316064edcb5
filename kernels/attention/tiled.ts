// The tiled path (attention.wgsl): tile sizes per head size that fit the device's workgroup memory, the
// programs of those tiles, and the forward of a ForwardVariant (variants.ts).

import type { Gpu } from '../../src/gpu/gpu.ts';
import { GpuError } from '../../src/gpu/errors.ts';
import { programFactory } from '../../src/gpu/program.ts';
import { fillTemplate } from '../common.ts';
import type { KernelProgram } from '../program.ts';
import source from './attention.wgsl';
import { VEC4, main, withRealRange } from './kernel.ts';
import { type ForwardVariant, forwardName, forwardSharedBytes } from './variants.ts';

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

/** attention.wgsl for head size HS with tiles t, the forward's as f (a ForwardVariant's, or t's without prefetch). */
const tiledSource = (HS: number, t: AttentionTiles, f: ForwardVariant): string =>
  fillTemplate(withRealRange(source), {
    HEADER: main.header(),
    HS4: String(HS / 4),
    LANES: String(t.lanes),
    F_BR: String(f.fBR),
    F_BC: String(f.fBC),
    F_PF: String(f.pf),
    K_BK: String(t.kBK),
    K_BQ: String(t.kBQ),
    Q_BR: String(t.qBR),
    Q_BC: String(t.qBC),
  });

export interface AttentionPrograms {
  fwd: KernelProgram<'forward'>;
  prep: KernelProgram<'backwardPrep'>;
  dkdv: KernelProgram<'backwardDkDv'>;
  dq: KernelProgram<'backwardDq'>;
  tiles: AttentionTiles;
}
export const attentionPrograms = programFactory(
  (gpu: Gpu, HS: number) => `${HS}:${gpu.limits.maxComputeWorkgroupStorageSize}:${gpu.limits.maxComputeInvocationsPerWorkgroup}`,
  (gpu: Gpu, HS: number): AttentionPrograms => {
    const limit = gpu.limits.maxComputeWorkgroupStorageSize;
    const t = attentionTiles(HS, limit, gpu.limits.maxComputeInvocationsPerWorkgroup);
    if (!t) throw new GpuError('LIMIT', `attention: head size ${HS} needs more than this device's ${limit} bytes of workgroup memory`);
    const code = () => tiledSource(HS, t, { fBR: t.fBR, fBC: t.fBC, pf: false });
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
export const forwardPrograms = programFactory(
  (gpu: Gpu, HS: number, v: ForwardVariant) =>
    `${HS}:${forwardName(v)}:${gpu.limits.maxComputeWorkgroupStorageSize}:${gpu.limits.maxComputeInvocationsPerWorkgroup}`,
  (gpu: Gpu, HS: number, v: ForwardVariant): KernelProgram<'forward'> => {
    const t = attentionPrograms(gpu, HS).tiles;
    const code = () => tiledSource(HS, t, v);
    return main.program(`attention:hs${HS}:${forwardName(v)}`, code, 'forward');
  },
);
