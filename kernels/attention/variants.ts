// The tiled path's kernel variants (tiled.ts and blocked.ts launch them): their names, the device limits each needs,
// and the per-sequence-length choice tables measured with bench/attention-sweep.ts. No GPU work here.

import { shapeError } from '../../src/gpu/errors.ts';

const VEC4 = 16;
/** Bytes of the workgroup range of real keys (two atomics and their uniform copy) each tiled kernel keeps. */
const RANGE_BYTES = 16;

type Limits = Pick<
  GPUSupportedLimits,
  'maxComputeWorkgroupStorageSize' | 'maxComputeInvocationsPerWorkgroup' | 'maxComputeWorkgroupSizeX' | 'maxStorageBuffersPerShaderStage'
>;

/**
 * A forward of the tiled path (attention.wgsl's `forward`): fBR query rows (of the G heads sharing a kv
 * head) per workgroup, fBC keys per streamed tile, and `pf`: the next K/V tile loaded into registers before
 * the current one's math. Smaller fBR: more workgroups for short sequences.
 */
export interface ForwardVariant {
  fBR: number;
  fBC: number;
  pf: boolean;
}

/** 'f<BR>x<BC>[:pf]'. */
export const forwardName = (v: ForwardVariant): string => `f${v.fBR}x${v.fBC}${v.pf ? ':pf' : ''}`;

export function parseForward(name: string): ForwardVariant {
  const m = /^f(\d+)x(\d+)(:pf)?$/.exec(name);
  if (!m) shapeError('attentionForward', `unknown forward variant '${name}': use one like 'f32x32' or 'f16x32:pf'`);
  return { fBR: Number(m[1]), fBC: Number(m[2]), pf: Boolean(m[3]) };
}

/** Bytes of workgroup memory of the forward (mirrors the var<workgroup> in attention.wgsl). */
export const forwardSharedBytes = (HS: number, fBR: number, fBC: number): number =>
  (fBR + 2 * fBC) * (HS / 4 + 1) * VEC4 + fBR * (fBC + 1) * 4 + fBC * 4 + RANGE_BYTES;

/** Why a forward variant cannot run with `lanes` threads a row on this device; null when it can. */
export function forwardUnfit(HS: number, lanes: number, v: ForwardVariant, lim: Limits): string | null {
  const threads = Math.min(lim.maxComputeInvocationsPerWorkgroup, lim.maxComputeWorkgroupSizeX);
  if (!(v.fBR >= 1) || !(v.fBC >= lanes) || v.fBC % lanes) return `fBC must be a multiple of the ${lanes} threads a row`;
  if (v.fBR * lanes > threads) return `more than ${threads} threads a workgroup`;
  const bytes = forwardSharedBytes(HS, v.fBR, v.fBC);
  if (bytes > lim.maxComputeWorkgroupStorageSize)
    return `needs ${bytes} bytes of workgroup memory, the device has ${lim.maxComputeWorkgroupStorageSize}`;
  return null;
}

/**
 * The forward the launcher runs at head size 64, by query length Tq: the first row with Tq <= maxT
 * (bench/attention-sweep.ts prints the rows; H200, 2026-11-27: 32 rows x 16 keys with the prefetch the fastest
 * at T 336-2048, padded or not, 1.2-1.4x the former 32 x 32; 16 x 16 by a little at T 168, where the grid is
 * small). Other head sizes, and a variant the device cannot fit, run the tiles attentionTiles picks.
 */
export const FORWARD_CHOICE: ReadonlyArray<{ maxT: number; variant: string }> = [
  { maxT: 252, variant: 'f16x16:pf' },
  { maxT: Infinity, variant: 'f32x16:pf' },
];

export function forwardChoice(T: number, HS: number): ForwardVariant | null {
  if (HS !== 64) return null;
  return parseForward((FORWARD_CHOICE.find((r) => T <= r.maxT) ?? FORWARD_CHOICE[FORWARD_CHOICE.length - 1]).variant);
}

/**
 * A backward of the 'tiled' path: 'v1' (attention.wgsl: a thread per key or row, LANES threads sharing its
 * head dim) or a register-blocked one (backward.wgsl) with its tiles: dk/dv keys per workgroup x query rows
 * per tile, dq rows per workgroup x keys per tile, the vec4 columns of dk/dv (kW) and dq (qW) per thread,
 * `split` workgroups sharing each key block's query rows (partial dk/dv summed in a second pass),
 * `fusePrep`: dq computes ld itself (no prep dispatch), and `ds`: dk/dv store dS (B * NH * Tq * Tk floats)
 * and dq reads it instead of recomputing S and dP (not with fusePrep; without ds where it is too large);
 * `pf`: each kernel loads its next streamed tile into registers before the current one's math.
 */
export interface BlockedBackward {
  kBK: number;
  kBQ: number;
  kW: number;
  qBR: number;
  qBC: number;
  qW: number;
  split: number;
  fusePrep: boolean;
  ds?: boolean;
  pf?: boolean;
}
export type BackwardVariant = 'v1' | BlockedBackward;

/** 'v1' or 'blocked:k<BK>x<BQ>[w<kW>]:q<BR>x<BC>[w<qW>]:s<split>[:fused][:ds][:pf]' (w1 is left out). */
export function backwardName(v: BackwardVariant): string {
  if (v === 'v1') return 'v1';
  const w = (n: number) => (n === 1 ? '' : `w${n}`);
  return `blocked:k${v.kBK}x${v.kBQ}${w(v.kW)}:q${v.qBR}x${v.qBC}${w(v.qW)}:s${v.split}${v.fusePrep ? ':fused' : ''}${v.ds ? ':ds' : ''}${v.pf ? ':pf' : ''}`;
}

export function parseBackward(name: string): BackwardVariant {
  if (name === 'v1') return 'v1';
  const m = /^blocked:k(\d+)x(\d+)(?:w(\d+))?:q(\d+)x(\d+)(?:w(\d+))?:s(\d+)(:fused)?(:ds)?(:pf)?$/.exec(name);
  if (!m) shapeError('attentionBackward', `unknown backward variant '${name}': use 'v1' or one like 'blocked:k32x32:q32x32:s2:fused'`);
  const [kBK, kBQ, kW, qBR, qBC, qW, split] = m.slice(1, 8).map((x) => Number(x ?? 1));
  return { kBK, kBQ, kW, qBR, qBC, qW, split, fusePrep: Boolean(m[8]), ds: Boolean(m[9]), pf: Boolean(m[10]) };
}

/** Bytes of workgroup memory of the blocked kernels (mirrors the var<workgroup> in backward.wgsl). */
export function blockedSharedBytes(HS: number, v: BlockedBackward): { dkdv: number; dq: number } {
  const RS = HS / 4 + 1;
  return {
    dkdv: (2 * HS * (v.kBK / 4) + 2 * v.kBQ * RS + 2 * v.kBQ * (v.kBK / 4 + 1)) * VEC4 + v.kBQ * 8 + RANGE_BYTES,
    dq:
      (v.ds
        ? (v.qBC * RS + v.qBC * (v.qBR / 4 + 1)) * VEC4
        : (2 * HS * (v.qBR / 4) + 2 * v.qBC * RS + v.qBC * (v.qBR / 4 + 1)) * VEC4 + v.qBR * 8) + RANGE_BYTES,
  };
}

/** Why a blocked variant cannot run at head size HS on a device with these limits; null when it can. */
export function blockedUnfit(HS: number, v: BlockedBackward, lim: Limits): string | null {
  const HS4 = HS / 4;
  const threads = Math.min(lim.maxComputeInvocationsPerWorkgroup, lim.maxComputeWorkgroupSizeX);
  if (v.kBK % 4 || v.qBR % 4) return 'kBK and qBR must be multiples of 4';
  if (HS4 % v.kW || HS4 % v.qW) return `kW and qW must divide HS / 4 = ${HS4}`;
  if (v.kBQ % (HS4 / v.kW) || v.qBC % (HS4 / v.qW))
    return `kBQ and qBC must be multiples of HS / 4 / kW = ${HS4 / v.kW} and HS / 4 / qW = ${HS4 / v.qW}`;
  if (!(v.split >= 1)) return 'split must be >= 1';
  if ((v.kBK / 4) * (HS4 / v.kW) > threads || (v.qBR / 4) * (HS4 / v.qW) > threads) return `more than ${threads} threads a workgroup`;
  const b = blockedSharedBytes(HS, v);
  if (Math.max(b.dkdv, b.dq) > lim.maxComputeWorkgroupStorageSize)
    return `needs ${Math.max(b.dkdv, b.dq)} bytes of workgroup memory, the device has ${lim.maxComputeWorkgroupStorageSize}`;
  if (v.fusePrep && v.ds) return 'ds runs dq after dk/dv, so its prep cannot be fused into dq';
  if ((v.fusePrep || v.ds) && lim.maxStorageBuffersPerShaderStage < 9) return 'the fused prep and ds bind 9 storage buffers';
  return null;
}

/**
 * The backward the launcher runs at head size 64, by sequence length (Tq): the first row with T <= maxT.
 * Measured with bench/attention-sweep.ts, which prints the rows to put here (H200, 2026-11-27, after the
 * fixed-count inner loops and the 'pf' prefetch: 1.9-3.4x v1 at T 170-2048). Other head sizes, and a variant
 * the device cannot fit, run 'v1'.
 */
export const BACKWARD_CHOICE: ReadonlyArray<{ maxT: number; variant: string }> = [
  { maxT: 341, variant: 'blocked:k32x32:q32x32:s1:fused:pf' },
  { maxT: 768, variant: 'blocked:k32x32:q32x32:s4:ds' },
  { maxT: 1536, variant: 'blocked:k32x32:q32x32:s4:ds:pf' },
  { maxT: Infinity, variant: 'blocked:k32x32:q32x32:s2:ds:pf' },
];

export function backwardChoice(T: number, HS: number): BackwardVariant {
  if (HS !== 64) return 'v1';
  return parseBackward((BACKWARD_CHOICE.find((r) => T <= r.maxT) ?? BACKWARD_CHOICE[BACKWARD_CHOICE.length - 1]).variant);
}
