// Launcher of the non-finite count (finite.wgsl): one dispatch that adds the NaN / ±Inf count of a tensor
// to one u32 slot of a flags tensor, so a caller can watch many tensors and read all the counts back with
// one small readback (src/model/finite-watch.ts).

import type { Gpu } from '../../src/gpu/gpu.ts';
import { shapeError } from '../../src/gpu/errors.ts';
import type { Program } from '../../src/gpu/program.ts';
import { type Tensor, numel, shapeStr } from '../../src/gpu/tensor.ts';
import source from './finite.wgsl';

const COUNT: Program = { key: 'finite', code: () => source, entryPoint: 'count' };
const COUNT_FEW: Program = { key: 'finite:few', code: () => source, entryPoint: 'countFew' };
/** Workgroups of one dispatch at most: each thread strides, so a large tensor stays one dispatch. */
const MAX_GROUPS = 256;
/** The CPU form (countFew): workgroups of 64 threads, at most 16, each thread walking >= 256 values. */
const FEW = { threads: 64, maxGroups: 16, perThread: 256 } as const;

/**
 * 'grid': up to 256 workgroups of 256 (GPUs); 'few': 1 to 16 workgroups of 64 (CPU adapters, where every
 * invocation costs its start-up). Default: 'few' when Gpu.cpu.
 */
export type FinitePath = 'grid' | 'few';

/** flags[slot] += the number of non-finite values in x (f32). */
export function countNonFinite(gpu: Gpu, flags: Tensor, slot: number, x: Tensor, path: FinitePath = gpu.cpu ? 'few' : 'grid'): void {
  if (x.dtype !== 'f32') shapeError('countNonFinite', `x must be f32, got ${shapeStr(x)}`);
  if (flags.dtype !== 'u32' || flags.shape.length !== 1) shapeError('countNonFinite', `flags must be (K) u32, got ${shapeStr(flags)}`);
  if (!Number.isInteger(slot) || slot < 0 || slot >= flags.shape[0]) shapeError('countNonFinite', `slot ${slot} is outside flags (${flags.shape[0]})`);
  const n = numel(x.shape);
  if (n === 0) return;
  if (path === 'few') {
    const groups = Math.min(FEW.maxGroups, Math.ceil(n / (FEW.threads * FEW.perThread)));
    gpu.run({ program: COUNT_FEW, bindings: [x, flags], uniforms: [n, slot, groups * FEW.threads, 0], workgroups: [groups, 1] });
    return;
  }
  const groups = Math.min(MAX_GROUPS, Math.ceil(n / 256));
  gpu.run({ program: COUNT, bindings: [x, flags], uniforms: [n, slot, groups * 256, 0], workgroups: [groups, 1] });
}
