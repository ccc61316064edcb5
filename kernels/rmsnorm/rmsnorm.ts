// Launchers for RMSNorm: forward (saves rstd), backward dx (assign) and the optional dw (accumulate,
// deterministic two-stage reduction over rows).

import type { Gpu } from '../../src/gpu/gpu.ts';
import { shapeError } from '../../src/gpu/errors.ts';
import { grid1d } from '../../src/gpu/program.ts';
import { type Tensor, shapeStr } from '../../src/gpu/tensor.ts';
import { fillTemplate, loadFn, noAlias, rowThreads, type WeightDType } from '../common.ts';
import { defineKernel } from '../program.ts';
import source from './rmsnorm.wgsl';

const rmsnorm = defineKernel({
  name: 'rmsnorm',
  bindings: ['x', 'w', 'out', 'rstd', 'dy', 'dx', 'part', 'dw'],
  uniforms: { N: 'u32', C: 'u32', eps: 'f32', rows_per_chunk: 'u32', K: 'u32' },
  entries: {
    forward: ['x', 'w', 'out', 'rstd'],
    forward_row: ['x', 'w', 'out', 'rstd'],
    backward_dx: ['x', 'w', 'rstd', 'dy', 'dx'],
    backward_dx_row: ['x', 'w', 'rstd', 'dy', 'dx'],
    dw_partial: ['x', 'rstd', 'dy', 'part'],
    dw_final: ['part', 'dw'],
  },
});

/**
 * 'wg': one workgroup per row, a tree reduction in workgroup memory (GPUs); 'row': one thread per row, no
 * barrier (CPU adapters: the default when Gpu.cpu).
 */
export type RmsnormPath = 'wg' | 'row';
const ROW_WG = 16;
const program = rmsnorm.variants((dtype: WeightDType, wg: number) => ({
  key: `rmsnorm:${dtype}:wg${wg}`,
  code: () =>
    fillTemplate(source, {
      WEIGHT_DECL: `@group(0) @binding(2) var<storage, read> w: array<${dtype === 'f32' ? 'f32' : 'u32'}>;`,
      UNPACK: loadFn('loadW', 'w', dtype),
      WG: String(wg),
    }),
}));

/** Rows reduced by one thread in the first stage of dw: the second stage sums ceil(N / this) partials. */
const ROWS_PER_CHUNK = 64;

const params = (N: number, C: number, eps: number, K = 0) => ({ N, C, eps, rows_per_chunk: ROWS_PER_CHUNK, K });

function checkRows(op: string, x: Tensor, w: Tensor, named: Record<string, Tensor>): [number, number] {
  if (x.dtype !== 'f32' || x.shape.length !== 2) shapeError(op, `x must be (N, C) f32, got ${shapeStr(x)}`);
  const [N, C] = x.shape;
  if (w.shape.length !== 1 || w.shape[0] !== C || !['f32', 'bf16', 'f16'].includes(w.dtype)) {
    shapeError(op, `w must be (${C}) f32/bf16/f16 for x ${shapeStr(x)}, got ${shapeStr(w)}`);
  }
  for (const [name, t] of Object.entries(named)) {
    const want = name === 'rstd' ? [N] : [N, C];
    if (t.dtype !== 'f32' || t.shape.length !== want.length || want.some((d, i) => t.shape[i] !== d)) {
      shapeError(op, `${name} must be (${want.join(', ')}) f32, got ${shapeStr(t)}`);
    }
  }
  return [N, C];
}

/** out (N, C) = x / sqrt(mean(x^2) + eps) * w; rstd (N) saved for the backward. w (C) f32, bf16 or f16. */
export function rmsnormForward(
  gpu: Gpu,
  out: Tensor,
  rstd: Tensor,
  x: Tensor,
  w: Tensor,
  eps: number,
  path: RmsnormPath = gpu.cpu ? 'row' : 'wg',
): void {
  const [N, C] = checkRows('rmsnormForward', x, w, { out, rstd });
  noAlias('rmsnormForward', { out, rstd, x, w });
  const row = path === 'row';
  rmsnorm.run(gpu, {
    program: program(row ? 'forward_row' : 'forward', w.dtype as WeightDType, rowThreads(C, 4)),
    bindings: { x, w, out, rstd },
    uniforms: params(N, C, eps),
    workgroups: grid1d(row ? Math.ceil(N / ROW_WG) : N),
  });
}

/**
 * dx (N, C) = dL/dx (assigned); dw (C) f32 += dL/dw when given (full-parameter mode), else skipped.
 * dy (N, C) is the output gradient; x, w and rstd are the forward's input, weight and saved rstd.
 */
export function rmsnormBackward(
  gpu: Gpu,
  dx: Tensor,
  dw: Tensor | null,
  dy: Tensor,
  x: Tensor,
  w: Tensor,
  rstd: Tensor,
  path: RmsnormPath = gpu.cpu ? 'row' : 'wg',
): void {
  const op = 'rmsnormBackward';
  const [N, C] = checkRows(op, x, w, { dx, dy, rstd });
  if (dw && (dw.dtype !== 'f32' || dw.shape.length !== 1 || dw.shape[0] !== C)) {
    shapeError(op, `dw must be (${C}) f32, got ${shapeStr(dw)}`);
  }
  noAlias(op, { dx, dw, dy, x, w, rstd });
  const dtype = w.dtype as WeightDType;
  const row = path === 'row';
  rmsnorm.run(gpu, {
    program: program(row ? 'backward_dx_row' : 'backward_dx', dtype, rowThreads(C, 4)),
    bindings: { x, w, rstd, dy, dx },
    uniforms: params(N, C, 0),
    workgroups: grid1d(row ? Math.ceil(N / ROW_WG) : N),
  });
  if (!dw || N === 0) return;
  const K = Math.ceil(N / ROWS_PER_CHUNK);
  const part = gpu.tensor([K, C], 'f32', 'rmsnorm.dw_part');
  const uniforms = params(N, C, 0, K);
  rmsnorm.run(gpu, {
    program: program('dw_partial', dtype, rowThreads(C, 4)),
    bindings: { x, rstd, dy, part },
    uniforms,
    workgroups: [Math.ceil(C / 256), K],
  });
  rmsnorm.run(gpu, {
    program: program('dw_final', dtype, rowThreads(C, 4)),
    bindings: { part, dw },
    uniforms,
    workgroups: [Math.ceil(C / 256)],
  });
  gpu.release(part); // later users of this pooled buffer are ordered after these dispatches
}
