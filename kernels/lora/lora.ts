// Launchers for multi-adapter LoRA: the adapters of all slots live in stacked buffers and each sequence
// of the batch names its slot, so a batch that mixes agents (and slot -1, the bare base model) runs in
// one set of dispatches. The forward adds onto the base projection's output; the backward adds onto the
// base projection's dx and accumulates the adapter gradients of the slots in use.

import type { Gpu } from '../../src/gpu/gpu.ts';
import { shapeError } from '../../src/gpu/errors.ts';
import { grid1d } from '../../src/gpu/program.ts';
import { type Tensor, shapeStr } from '../../src/gpu/tensor.ts';
import source from './lora.wgsl';
import { fillTemplate, noAlias } from '../common.ts';
import { type LoraDims, lora, loraUniforms } from './kernel.ts';
import { GROUPS_MAX_R, loraBackwardGroups, loraForwardGroups } from './groups.ts';

const program = lora.module('lora', () => fillTemplate(source, { HEADER: lora.header() }));

const TS = 16;
/** Up to this many rows per sequence (decode: T = 1), the forward runs one row per workgroup ('rows'). */
export const ROWS_T = 4;
const tiles = (n: number) => Math.ceil(n / TS);

function expectShape(op: string, name: string, t: Tensor, want: number[], dtype = 'f32'): void {
  if (t.dtype !== dtype || t.shape.length !== want.length || want.some((d, i) => t.shape[i] !== d)) {
    shapeError(op, `${name} must be (${want.join(', ')}) ${dtype}, got ${shapeStr(t)}`);
  }
}

/** Checks x, slots, A, Bw and the row count T; returns the dims. */
function dims(op: string, x: Tensor, slots: Tensor, A: Tensor, Bw: Tensor, T: number): LoraDims {
  if (slots.dtype !== 'i32' || slots.shape.length !== 1) shapeError(op, `slots must be (B) i32, got ${shapeStr(slots)}`);
  if (A.dtype !== 'f32' || A.shape.length !== 3) shapeError(op, `A must be (S, R, IN) f32, got ${shapeStr(A)}`);
  const B = slots.shape[0];
  const [S, R, IN] = A.shape;
  if (!Number.isInteger(T) || T < 1) shapeError(op, `T (rows per sequence) must be a positive integer, got ${T}`);
  expectShape(op, `x (B*T = ${B}*${T} rows, IN from A ${shapeStr(A)})`, x, [B * T, IN]);
  if (Bw.dtype !== 'f32' || Bw.shape.length !== 3 || Bw.shape[0] !== S || Bw.shape[2] !== R) {
    shapeError(op, `Bw must be (${S}, OUT, ${R}) f32 to match A ${shapeStr(A)}, got ${shapeStr(Bw)}`);
  }
  return { B, T, S, R, IN, OUT: Bw.shape[1] };
}

/** Parts the tiled weight gradients split the sequences into: a part per 4 sequences, at most 16. */
export const gradParts = (B: number): number => Math.max(1, Math.min(16, Math.floor(B / 4)));

/**
 * The kernels' layout: 16x16 tiles of (rows of a sequence) x (ranks or outputs); one row per workgroup
 * (forward only); 'direct', one thread per output element with no workgroup memory and no barriers; or
 * 'wide', the same with four neighbouring outputs per thread (one load of the shared operand feeds four
 * multiply-adds: fewer loads, which SwiftShader turns into gathers), the default on CPU adapters (Gpu.cpu);
 * or 'groups' (groups.ts): row groups and chunks of rows over many small workgroups, the GPU default for
 * T > ROWS_T up to R = GROUPS_MAX_R (the tiles past it).
 */
export type LoraPath = 'tiles' | 'rows' | 'direct' | 'wide' | 'groups';
/** Workgroups of 64 threads, one per element of `count`. */
const direct = (count: number) => grid1d(Math.ceil(count / 64));
/** Workgroups of 16 threads, one per quad (four neighbouring outputs along the last dim) of rows x n. */
const wide = (rows: number, n: number) => grid1d(Math.ceil((rows * Math.ceil(n / 4)) / 16));

/**
 * y (B*T, OUT) += scale * (x A[slot]^T) Bw[slot]^T, saving h (B*T, R) = x A[slot]^T for the backward.
 * x (B*T, IN) f32; slots (B) i32, one per sequence of T rows, -1 (any value outside [0, S)) = no adapter;
 * A (S, R, IN), Bw (S, OUT, R) f32 stacked PEFT lora_A / lora_B weights; scale = lora_alpha / r.
 * path: default 'wide' on CPU adapters; else 'rows' when T <= ROWS_T (decode), else 'groups' (one dispatch;
 * 'tiles' when R > GROUPS_MAX_R).
 */
export function loraForward(
  gpu: Gpu,
  y: Tensor,
  h: Tensor,
  x: Tensor,
  slots: Tensor,
  A: Tensor,
  Bw: Tensor,
  T: number,
  scale: number,
  path?: LoraPath,
): void {
  const op = 'loraForward';
  const d = dims(op, x, slots, A, Bw, T);
  expectShape(op, 'y', y, [d.B * T, d.OUT]);
  expectShape(op, 'h', h, [d.B * T, d.R]);
  noAlias(op, { y, h, x, slots, A, Bw });
  const u = loraUniforms(d, scale);
  const M = d.B * T;
  const p = path ?? (gpu.cpu ? 'wide' : T <= ROWS_T ? 'rows' : 'groups');
  if (p === 'groups' && d.R <= GROUPS_MAX_R) {
    loraForwardGroups(gpu, y, h, x, slots, A, Bw, d, scale);
    return;
  }
  if (p === 'wide') {
    lora.run(gpu, { program: program('forward_h_wide'), bindings: { slots, x, A, h }, uniforms: u, workgroups: wide(M, d.R) });
    lora.run(gpu, { program: program('forward_y_wide'), bindings: { slots, Bw, h, y }, uniforms: u, workgroups: wide(M, d.OUT) });
    return;
  }
  if (p === 'direct' && M <= 65535) {
    lora.run(gpu, { program: program('forward_h_direct'), bindings: { slots, x, A, h }, uniforms: u, workgroups: direct(M * d.R) });
    lora.run(gpu, {
      program: program('forward_y_rows'),
      bindings: { slots, Bw, h, y },
      uniforms: u,
      workgroups: [Math.ceil(d.OUT / 64), M],
    });
    return;
  }
  if (p === 'rows' && M <= 65535 && d.R <= 65535) {
    lora.run(gpu, { program: program('forward_h_rows'), bindings: { slots, x, A, h }, uniforms: u, workgroups: [d.R, M] });
    lora.run(gpu, {
      program: program('forward_y_rows'),
      bindings: { slots, Bw, h, y },
      uniforms: u,
      workgroups: [Math.ceil(d.OUT / 64), M],
    });
    return;
  }
  lora.run(gpu, { program: program('forward_h'), bindings: { slots, x, A, h }, uniforms: u, workgroups: [tiles(d.R), tiles(T), d.B] });
  lora.run(gpu, {
    program: program('forward_y'),
    bindings: { slots, Bw, h, y },
    uniforms: u,
    workgroups: [tiles(d.OUT), tiles(T), d.B],
  });
}

/**
 * Given dy (B*T, OUT): dA (S, R, IN) and dB (S, OUT, R) += the adapter gradients of the slots in use
 * (slots no sequence names are left untouched), and dx (B*T, IN) += the gradient through the adapter
 * (pass null when the input needs no gradient). x, h are the forward's input and saved h. path: 'wide'
 * (default on CPU adapters), 'direct', 'groups' (default on GPUs up to R = GROUPS_MAX_R) or the 16x16 'tiles'.
 */
export function loraBackward(
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
  T: number,
  scale: number,
  path?: 'tiles' | 'direct' | 'wide' | 'groups',
): void {
  const op = 'loraBackward';
  const d = dims(op, x, slots, A, Bw, T);
  const M = d.B * T;
  expectShape(op, 'dy', dy, [M, d.OUT]);
  expectShape(op, 'h', h, [M, d.R]);
  expectShape(op, 'dA', dA, [d.S, d.R, d.IN]);
  expectShape(op, 'dB', dB, [d.S, d.OUT, d.R]);
  if (dx) expectShape(op, 'dx', dx, [M, d.IN]);
  noAlias(op, { dx, dA, dB, dy, x, h, slots, A, Bw });
  const p = path ?? (gpu.cpu ? 'wide' : 'groups');
  if (p === 'groups' && d.R <= GROUPS_MAX_R) {
    loraBackwardGroups(gpu, dx, dA, dB, dy, x, h, slots, A, Bw, d, scale);
    return;
  }
  const u = loraUniforms(d, scale);
  const dh = gpu.tensor([M, d.R], 'f32', 'lora.dh');
  if (p === 'wide') {
    lora.run(gpu, { program: program('backward_dh_wide'), bindings: { slots, Bw, dy, dh }, uniforms: u, workgroups: wide(M, d.R) });
    lora.run(gpu, {
      program: program('backward_dB_wide'),
      bindings: { slots, x, h, dy, dh, dB },
      uniforms: u,
      workgroups: wide(d.S * d.OUT, d.R),
    });
    lora.run(gpu, {
      program: program('backward_dA_wide'),
      bindings: { slots, x, h, dy, dh, dA },
      uniforms: u,
      workgroups: wide(d.S * d.R, d.IN),
    });
    if (dx) lora.run(gpu, { program: program('backward_dx_wide'), bindings: { slots, A, dh, dx }, uniforms: u, workgroups: wide(M, d.IN) });
    gpu.release(dh);
    return;
  }
  if (p === 'direct') {
    lora.run(gpu, { program: program('backward_dh_direct'), bindings: { slots, Bw, dy, dh }, uniforms: u, workgroups: direct(M * d.R) });
    lora.run(gpu, {
      program: program('backward_dB_direct'),
      bindings: { slots, x, h, dy, dh, dB },
      uniforms: u,
      workgroups: direct(d.S * d.OUT * d.R),
    });
    lora.run(gpu, {
      program: program('backward_dA_direct'),
      bindings: { slots, x, h, dy, dh, dA },
      uniforms: u,
      workgroups: direct(d.S * d.R * d.IN),
    });
    if (dx)
      lora.run(gpu, { program: program('backward_dx_direct'), bindings: { slots, A, dh, dx }, uniforms: u, workgroups: direct(M * d.IN) });
    gpu.release(dh);
    return;
  }
  lora.run(gpu, { program: program('backward_dh'), bindings: { slots, Bw, dy, dh }, uniforms: u, workgroups: [tiles(d.R), tiles(T), d.B] });
  // the weight gradients, split over P parts of the sequences (gradParts) and their sums added in order
  const P = gradParts(d.B);
  const up = loraUniforms(d, scale, { P });
  // dB and dA in one dispatch (and their parts' sums in one): two dispatches fewer a module per backward
  const part = gpu.tensor([P * d.S * (d.OUT + d.IN) * d.R], 'f32', 'lora.part'); // P = 1: bound, unused
  const grid: [number, number, number] = [Math.max(tiles(d.R), tiles(d.IN)), Math.max(tiles(d.OUT), tiles(d.R)), 2 * d.S * P];
  lora.run(gpu, { program: program('backward_dAdB'), bindings: { slots, x, h, dy, dh, dA, dB, part }, uniforms: up, workgroups: grid });
  if (P > 1)
    lora.run(gpu, {
      program: program('reduce_dAdB'),
      bindings: { slots, dA, dB, part },
      uniforms: up,
      workgroups: grid1d(Math.ceil((d.S * (d.OUT + d.IN) * d.R) / 64)),
    });
  gpu.release(part);
  if (dx) {
    lora.run(gpu, {
      program: program('backward_dx'),
      bindings: { slots, A, dh, dx },
      uniforms: u,
      workgroups: [tiles(d.IN), tiles(T), d.B],
    });
  }
  gpu.release(dh); // later users of this pooled buffer are ordered after these dispatches
}
