// Launchers for AdamW with global-norm clipping: the norm of all gradients is reduced on the GPU into a
// small stats tensor, the update reads its clip scale from there, and a non-finite norm turns the whole
// step into a no-op (and is counted), so the trainer needs no readback inside a step.

import type { Gpu } from '../../src/gpu/gpu.ts';
import { shapeError } from '../../src/gpu/errors.ts';
import { type Program, grid1d } from '../../src/gpu/program.ts';
import { type Tensor, numel, shapeStr } from '../../src/gpu/tensor.ts';
import { reduceAllInto } from '../reduce/reduce.ts';
import source from './adamw.wgsl';

/** Layout of the stats tensor (8) f32 (see adamw.wgsl). */
export const ADAMW_STATS = { sumsq: 0, norm: 1, nonFinite: 2, clipScale: 3, step: 4, skipped: 5, size: 8 } as const;

export interface AdamWHyper {
  lr: number;
  beta1?: number; // default 0.9
  beta2?: number; // default 0.999
  eps?: number; // default 1e-8
  weightDecay?: number; // default 0 (decoupled: p *= 1 - lr * wd)
}

/**
 * One parameter group: flat f32 tensors of the same element count; grads reuse the params' layout.
 * decay false exempts the group from weight decay in adamwStep (norm weights, biases); default true.
 */
export interface AdamWGroup { params: Tensor; grads: Tensor; m: Tensor; v: Tensor; decay?: boolean }

const code = () => source;
const BEGIN: Program = { key: 'adamw', code, entryPoint: 'begin' };
const UPDATE: Program = { key: 'adamw', code, entryPoint: 'update' };

/** A zeroed stats tensor (8) f32: step 0, nothing skipped. Restore a checkpoint by uploading its values. */
export function adamwStats(gpu: Gpu): Tensor {
  return gpu.zeros([ADAMW_STATS.size], 'f32', 'adamw.stats');
}

function checkStats(op: string, stats: Tensor): void {
  if (stats.dtype !== 'f32' || numel(stats.shape) !== ADAMW_STATS.size) shapeError(op, `stats must be (8) f32, got ${shapeStr(stats)}`);
}

function uniforms(n: number, hp: AdamWHyper, maxNorm: number) {
  const b1 = hp.beta1 ?? 0.9;
  const b2 = hp.beta2 ?? 0.999;
  return [n, { f32: hp.lr }, { f32: b1 }, { f32: b2 }, { f32: hp.eps ?? 1e-8 }, { f32: hp.weightDecay ?? 0 },
    { f32: Math.log(b1) }, { f32: Math.log(b2) }, { f32: maxNorm }, 0, 0, 0];
}

/**
 * Starts a step: stats[0] = sum of squares of every gradient tensor (one deterministic GPU reduction),
 * then norm, non-finite flag, clip scale min(1, maxNorm / (norm + 1e-6)) (no clipping when maxNorm <= 0
 * or Infinity), and the step count advanced unless the step is skipped.
 */
export function adamwBegin(gpu: Gpu, stats: Tensor, grads: readonly Tensor[], maxNorm: number): void {
  const op = 'adamwBegin';
  checkStats(op, stats);
  if (grads.length === 0) shapeError(op, 'no gradient tensors');
  grads.forEach((g, i) => { if (g.dtype !== 'f32') shapeError(op, `grads[${i}] must be f32, got ${shapeStr(g)}`); });
  if (Number.isNaN(maxNorm)) shapeError(op, 'maxNorm is NaN');
  reduceAllInto(gpu, stats, ADAMW_STATS.sumsq, grads, 'sumsq');
  gpu.run({
    program: BEGIN,
    bindings: [stats],
    uniforms: uniforms(0, { lr: 0 }, Number.isFinite(maxNorm) ? maxNorm : 0),
    workgroups: [1],
  });
}

function checkGroup(op: string, { params, grads, m, v }: AdamWGroup): number {
  const n = numel(params.shape);
  for (const [name, t] of [['params', params], ['grads', grads], ['m', m], ['v', v]] as const) {
    if (t.dtype !== 'f32' || numel(t.shape) !== n) shapeError(op, `${name} must be f32 with ${n} elements like params ${shapeStr(params)}, got ${shapeStr(t)}`);
  }
  return n;
}

function checkHyper(op: string, hp: AdamWHyper): void {
  const b1 = hp.beta1 ?? 0.9;
  const b2 = hp.beta2 ?? 0.999;
  if (!(b1 >= 0 && b1 < 1 && b2 >= 0 && b2 < 1)) shapeError(op, `betas must be in [0, 1), got ${b1}, ${b2}`);
  if (!Number.isFinite(hp.lr)) shapeError(op, `lr must be finite, got ${hp.lr}`);
}

/** Updates one parameter group with the clip scale and step count in stats (after adamwBegin). */
export function adamwUpdate(gpu: Gpu, group: AdamWGroup, stats: Tensor, hp: AdamWHyper): void {
  const op = 'adamwUpdate';
  checkStats(op, stats);
  const n = checkGroup(op, group);
  checkHyper(op, hp);
  const { params, grads, m, v } = group;
  gpu.run({
    program: UPDATE,
    bindings: [stats, params, grads, m, v],
    uniforms: uniforms(n, hp, 0),
    workgroups: grid1d(Math.ceil(n / 256)),
  });
}

/** A whole step: the global norm over every group's gradients, then each group's update (its decay flag applied). */
export function adamwStep(gpu: Gpu, groups: readonly AdamWGroup[], stats: Tensor, hp: AdamWHyper & { maxNorm?: number }): void {
  for (const g of groups) checkGroup('adamwStep', g); // every check before the first dispatch
  checkHyper('adamwStep', hp);
  checkStats('adamwStep', stats);
  adamwBegin(gpu, stats, groups.map((g) => g.grads), hp.maxNorm ?? 0);
  for (const g of groups) adamwUpdate(gpu, g, stats, g.decay === false ? { ...hp, weightDecay: 0 } : hp);
}

/** Clears gradient tensors in the command stream (before a step's backward accumulates into them). */
export function zeroGrads(gpu: Gpu, grads: readonly Tensor[]): void {
  for (const g of grads) gpu.fill(g, 0);
}
