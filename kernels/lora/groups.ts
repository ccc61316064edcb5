// Launchers of the 'groups' LoRA kernels (groups.wgsl): the GPU default for many rows per sequence
// (training and scoring). lora.ts checks the shapes and calls these; the sweep (bench/lora-sweep.ts)
// calls them with other tunings.

import type { Gpu } from '../../src/gpu/gpu.ts';
import { grid1d, programFactory } from '../../src/gpu/program.ts';
import type { Tensor } from '../../src/gpu/tensor.ts';
import { fillTemplate } from '../common.ts';
import { type KernelProgram } from '../program.ts';
import source from './groups.wgsl';
import { type LoraDims, lora, loraUniforms } from './kernel.ts';

type Entry = 'forward_group' | 'backward_dh_group' | 'backward_grads' | 'reduce_grads';

/** Ranks up to this run on the 'groups' path (accumulators in registers); larger ones use the tiles. */
export const GROUPS_MAX_R = 16;

/**
 * rows: rows of a sequence per workgroup in forward_group / backward_dh_group, threads: that workgroup's
 * size (64, 128, 256 or 512, within the device's maxComputeInvocationsPerWorkgroup); chunk: rows a weight-gradient part sums.
 */
export interface GroupTuning {
  rows: number;
  threads: number;
  chunk: number;
}

/** The rank bound compiled in: 8 or 16 accumulators a row. */
export const rankBound = (R: number): number => (R <= 8 ? 8 : 16);

/**
 * Defaults from bench/lora-sweep.ts on an H200 (B*T = 1344, R = 8): 4 rows (ROWS * RMAX = 32 accumulators a
 * thread) beat 2 and 1 (each weight load feeds more rows); 128 threads beat 64 (fewer sequential loads a
 * thread), and 256 and 512 gained nothing more; chunks of 32 rows beat 16, 64 and 128 (more chunks spread
 * backward_grads wider but lengthen reduce_grads' sums).
 */
export const defaultTuning = (R: number): GroupTuning => ({ rows: 32 / rankBound(R), threads: 128, chunk: 32 });

const variant = (rmax: number, t: GroupTuning) => `g${rmax}x${t.rows}x${t.threads}`;
/** backward_grads and reduce_grads use neither rows nor threads: one module a rank bound serves every tuning. */
const ANY: GroupTuning = { rows: 1, threads: 64, chunk: 1 };
/** The module text for one (rank bound, rows, threads), made once and shared by its entry points. */
const text = programFactory(
  (rmax: number, t: GroupTuning) => variant(rmax, t),
  (rmax: number, t: GroupTuning) => {
    let code: string | undefined;
    return () =>
      (code ??= fillTemplate(source, { HEADER: lora.header(), RMAX: String(rmax), ROWS: String(t.rows), GW: String(t.threads) }));
  },
);
const program = programFactory(
  (entryPoint: Entry, rmax: number, t: GroupTuning) => `${entryPoint}:${variant(rmax, t)}`,
  (entryPoint: Entry, rmax: number, t: GroupTuning): KernelProgram<Entry> =>
    lora.program(`lora:${variant(rmax, t)}`, text(rmax, t), entryPoint),
) as <E extends Entry>(entryPoint: E, rmax: number, t: GroupTuning) => KernelProgram<E>;

function check(gpu: Gpu, d: LoraDims, t: GroupTuning): number {
  const rmax = rankBound(d.R);
  if (d.R > GROUPS_MAX_R) throw new Error(`lora groups: R = ${d.R} is past ${GROUPS_MAX_R}; use the 'tiles' path`);
  if (!(t.rows >= 1 && t.rows * rmax <= 32 && Number.isInteger(t.rows)))
    throw new Error(`lora groups: rows ${t.rows} x rank bound ${rmax} must be at most 32`);
  if (![64, 128, 256, 512].includes(t.threads) || t.threads > gpu.limits.maxComputeInvocationsPerWorkgroup) {
    throw new Error(
      `lora groups: threads must be 64, 128, 256 or 512 and within the device's ${gpu.limits.maxComputeInvocationsPerWorkgroup}, got ${t.threads}`,
    );
  }
  if (!(t.chunk >= 1 && Number.isInteger(t.chunk))) throw new Error(`lora groups: chunk must be a positive integer, got ${t.chunk}`);
  return rmax;
}

/** The uniforms of a groups dispatch: rows of `chunk` a weight-gradient part, whether dx is written. */
const params = (d: LoraDims, scale: number, chunk: number, dx: boolean) =>
  loraUniforms(d, scale, { CH: chunk, CT: Math.ceil(d.T / chunk), DX: dx ? 1 : 0 });

/** y += scale (x A[slot]^T) Bw[slot]^T and h = x A[slot]^T in one dispatch (shapes checked by loraForward). */
export function loraForwardGroups(
  gpu: Gpu,
  y: Tensor,
  h: Tensor,
  x: Tensor,
  slots: Tensor,
  A: Tensor,
  Bw: Tensor,
  d: LoraDims,
  scale: number,
  t: GroupTuning = defaultTuning(d.R),
): void {
  const rmax = check(gpu, d, t);
  const groups = d.B * Math.ceil(d.T / t.rows);
  lora.run(gpu, {
    program: program('forward_group', rmax, t),
    bindings: { slots, x, A, Bw, h, y },
    uniforms: params(d, scale, t.chunk, false),
    workgroups: grid1d(groups),
  });
}

/**
 * dA, dB += the adapter gradients of the slots in use, dx += the gradient through the adapter (when dx is
 * given): dh per row group, then the weight gradients' parts per chunk of rows (with dx), then their
 * in-order sum. Three dispatches. Shapes checked by loraBackward.
 */
export function loraBackwardGroups(
  gpu: Gpu,
  dx: Tensor | null,
  dA: Tensor,
  dB: Tensor,
  dy: Tensor,
  x: Tensor,
  h: Tensor,
  slots: Tensor,
  A: Tensor,
  Bw: Tensor,
  d: LoraDims,
  scale: number,
  t: GroupTuning = defaultTuning(d.R),
): void {
  const rmax = check(gpu, d, t);
  // longer chunks where the parts would pass what one binding may hold (a part holds R * (IN + OUT) floats)
  let chunk = t.chunk;
  const partBytes = (c: number) => d.B * Math.ceil(d.T / c) * d.R * (d.IN + d.OUT) * 4;
  while (partBytes(chunk) > gpu.limits.maxStorageBufferBindingSize && chunk < d.T) chunk = Math.min(d.T, chunk * 2);
  const u = params(d, scale, chunk, dx !== null);
  const M = d.B * d.T;
  const NC = d.B * Math.ceil(d.T / chunk);
  const dh = gpu.tensor([M, d.R], 'f32', 'lora.dh');
  const part = gpu.tensor([NC * d.R * (d.IN + d.OUT)], 'f32', 'lora.part');
  const noDx = dx ? null : gpu.tensor([1], 'f32', 'lora.nodx'); // bound, never written (DX = 0)
  lora.run(gpu, {
    program: program('backward_dh_group', rmax, t),
    bindings: { slots, Bw, dy, dh },
    uniforms: u,
    workgroups: grid1d(d.B * Math.ceil(d.T / t.rows)),
  });
  const blocks = Math.ceil(d.IN / 64) + Math.ceil(d.OUT / 64);
  lora.run(gpu, {
    program: program('backward_grads', rmax, ANY),
    bindings: { slots, x, A, h, dy, dh, dx: dx ?? noDx!, part },
    uniforms: u,
    workgroups: grid1d(NC * blocks),
  });
  lora.run(gpu, {
    program: program('reduce_grads', rmax, ANY),
    bindings: { slots, dA, dB, part },
    uniforms: u,
    workgroups: grid1d(Math.ceil((d.S * d.R * (d.IN + d.OUT)) / 64)),
  });
  gpu.release(dh, part); // later users of these pooled buffers are ordered after these dispatches
  if (noDx) gpu.release(noDx);
}
