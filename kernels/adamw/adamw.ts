// Launchers for AdamW with global-norm clipping, per slot: the norm of each slot's gradients (all of them
// for an unslotted optimiser) is reduced on the GPU into a small stats tensor, the update reads the slot's
// clip scale and step count from there, and a non-finite norm turns the slot's step into a no-op (and is
// counted), so the trainer needs no readback inside a step. Slot-major (S, ...) parameters give each slot
// (agent) its own clipping and bias correction, as one optimiser per agent would; a mask of active slots
// leaves the others (frozen agents) untouched.

import type { Gpu } from '../../src/gpu/gpu.ts';
import { shapeError } from '../../src/gpu/errors.ts';
import { grid1d } from '../../src/gpu/program.ts';
import { type Tensor, numel, shapeStr } from '../../src/gpu/tensor.ts';
import { reduceSlotsInto } from '../reduce/reduce.ts';
import { defineKernel } from '../program.ts';
import source from './adamw.wgsl';

/** Layout of one slot's stats (8) f32 (see adamw.wgsl); slot s's start at s * size. */
export const ADAMW_STATS = { sumsq: 0, norm: 1, nonFinite: 2, clipScale: 3, step: 4, skipped: 5, size: 8 } as const;

/** Most slots a step can mask (4 u32 words of mask bits). */
export const ADAMW_MAX_SLOTS = 128;

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
export interface AdamWGroup {
  params: Tensor;
  grads: Tensor;
  m: Tensor;
  v: Tensor;
  decay?: boolean;
}

const code = () => source;
const adamw = defineKernel({
  name: 'adamw',
  bindings: ['stats', 'params', 'grads', 'm', 'v'],
  uniforms: {
    n: 'u32',
    lr: 'f32',
    beta1: 'f32',
    beta2: 'f32',
    eps: 'f32',
    wd: 'f32',
    lnb1: 'f32',
    lnb2: 'f32',
    maxNorm: 'f32',
    slots: 'u32',
    perSlot: 'u32',
    _p0: 'u32',
    mask: 'u32[4]',
  },
  entries: { begin: ['stats'], update: ['stats', 'params', 'grads', 'm', 'v'] },
});
const BEGIN = adamw.program('adamw', code, 'begin');
const UPDATE = adamw.program('adamw', code, 'update');

/**
 * A zeroed stats tensor: (8) f32 for one unslotted optimiser, (S, 8) for S slots; step 0, nothing skipped.
 * Restore a checkpoint by uploading its values.
 */
export function adamwStats(gpu: Gpu, slots?: number): Tensor {
  if (slots !== undefined && !(Number.isInteger(slots) && slots >= 1 && slots <= ADAMW_MAX_SLOTS)) {
    shapeError('adamwStats', `slots must be an integer in [1, ${ADAMW_MAX_SLOTS}], got ${slots}`);
  }
  return gpu.zeros(slots === undefined ? [ADAMW_STATS.size] : [slots, ADAMW_STATS.size], 'f32', 'adamw.stats');
}

/** The slot count of a stats tensor (checked: f32, a whole number of 8-value slots, at most 128). */
function checkStats(op: string, stats: Tensor): number {
  const n = numel(stats.shape);
  const S = n / ADAMW_STATS.size;
  if (
    stats.dtype !== 'f32' ||
    !Number.isInteger(S) ||
    S < 1 ||
    S > ADAMW_MAX_SLOTS ||
    (stats.shape.length > 1 && stats.shape[stats.shape.length - 1] !== ADAMW_STATS.size)
  ) {
    shapeError(op, `stats must be (8) or (S, 8) f32 with S <= ${ADAMW_MAX_SLOTS}, got ${shapeStr(stats)}`);
  }
  return S;
}

/** The active-slot bits as 4 u32 words (every slot when `active` is undefined). */
function maskWords(op: string, S: number, active: readonly number[] | undefined): number[] {
  const words = [0, 0, 0, 0];
  for (const s of active ?? Array.from({ length: S }, (_, i) => i)) {
    if (!Number.isInteger(s) || s < 0 || s >= S) shapeError(op, `active slot ${s} is not a slot of the ${S} in stats`);
    words[s >> 5] |= 1 << (s & 31);
  }
  return words.map((w) => w >>> 0);
}

function uniforms(n: number, hp: AdamWHyper, maxNorm: number, S: number, mask: number[]) {
  const b1 = hp.beta1 ?? 0.9;
  const b2 = hp.beta2 ?? 0.999;
  return {
    n,
    lr: hp.lr,
    beta1: b1,
    beta2: b2,
    eps: hp.eps ?? 1e-8,
    wd: hp.weightDecay ?? 0,
    lnb1: Math.log(b1),
    lnb2: Math.log(b2),
    maxNorm,
    slots: S,
    perSlot: n / S,
    mask,
  };
}

/**
 * Starts a step: for each active slot (all when `active` is undefined), stats[8s] = sum of squares of the
 * slot's part of every gradient tensor (one deterministic GPU reduction for all slots), then its norm,
 * non-finite flag, clip scale min(1, maxNorm / (norm + 1e-6)) (no clipping when maxNorm <= 0 or Infinity),
 * and its step count advanced unless its step is skipped. Inactive slots' stats are left as they were
 * (except [0], the reduction's output, written for every slot).
 */
export function adamwBegin(gpu: Gpu, stats: Tensor, grads: readonly Tensor[], maxNorm: number, active?: readonly number[]): void {
  const op = 'adamwBegin';
  const S = checkStats(op, stats);
  if (grads.length === 0) shapeError(op, 'no gradient tensors');
  grads.forEach((g, i) => {
    if (g.dtype !== 'f32') shapeError(op, `grads[${i}] must be f32, got ${shapeStr(g)}`);
    if (numel(g.shape) % S !== 0) shapeError(op, `grads[${i}] ${shapeStr(g)} does not split into the ${S} slots of stats`);
  });
  if (Number.isNaN(maxNorm)) shapeError(op, 'maxNorm is NaN');
  const mask = maskWords(op, S, active);
  reduceSlotsInto(gpu, stats, ADAMW_STATS.sumsq, ADAMW_STATS.size, grads, 'sumsq', S);
  adamw.run(gpu, {
    program: BEGIN,
    bindings: { stats },
    uniforms: uniforms(0, { lr: 0 }, Number.isFinite(maxNorm) ? maxNorm : 0, S, mask),
    workgroups: [1],
  });
}

function checkGroup(op: string, { params, grads, m, v }: AdamWGroup, S: number): number {
  const n = numel(params.shape);
  for (const [name, t] of [
    ['params', params],
    ['grads', grads],
    ['m', m],
    ['v', v],
  ] as const) {
    if (t.dtype !== 'f32' || numel(t.shape) !== n)
      shapeError(op, `${name} must be f32 with ${n} elements like params ${shapeStr(params)}, got ${shapeStr(t)}`);
  }
  if (n % S !== 0) shapeError(op, `params ${shapeStr(params)} does not split into the ${S} slots of stats`);
  return n;
}

function checkHyper(op: string, hp: AdamWHyper): void {
  const b1 = hp.beta1 ?? 0.9;
  const b2 = hp.beta2 ?? 0.999;
  if (!(b1 >= 0 && b1 < 1 && b2 >= 0 && b2 < 1)) shapeError(op, `betas must be in [0, 1), got ${b1}, ${b2}`);
  if (!Number.isFinite(hp.lr)) shapeError(op, `lr must be finite, got ${hp.lr}`);
}

/**
 * Updates one parameter group, slot-major over the slots of stats, each active slot with its clip scale
 * and step count (after adamwBegin with the same `active`).
 */
export function adamwUpdate(gpu: Gpu, group: AdamWGroup, stats: Tensor, hp: AdamWHyper, active?: readonly number[]): void {
  const op = 'adamwUpdate';
  const S = checkStats(op, stats);
  const n = checkGroup(op, group, S);
  checkHyper(op, hp);
  const mask = maskWords(op, S, active);
  const { params, grads, m, v } = group;
  adamw.run(gpu, {
    program: UPDATE,
    bindings: { stats, params, grads, m, v },
    uniforms: uniforms(n, hp, 0, S, mask),
    workgroups: grid1d(Math.ceil(n / 256)),
  });
}

/**
 * A whole step: each active slot's norm over every group's gradients, then each group's update (its decay
 * flag applied). `active`: the slots that step (default all); the others keep params, moments and stats.
 */
export function adamwStep(
  gpu: Gpu,
  groups: readonly AdamWGroup[],
  stats: Tensor,
  hp: AdamWHyper & { maxNorm?: number },
  active?: readonly number[],
): void {
  const S = checkStats('adamwStep', stats); // every check before the first dispatch
  for (const g of groups) checkGroup('adamwStep', g, S);
  checkHyper('adamwStep', hp);
  maskWords('adamwStep', S, active);
  adamwBegin(
    gpu,
    stats,
    groups.map((g) => g.grads),
    hp.maxNorm ?? 0,
    active,
  );
  for (const g of groups) adamwUpdate(gpu, g, stats, g.decay === false ? { ...hp, weightDecay: 0 } : hp, active);
}

/** Clears gradient tensors in the command stream (before a step's backward accumulates into them). */
export function zeroGrads(gpu: Gpu, grads: readonly Tensor[]): void {
  for (const g of grads) gpu.fill(g, 0);
}
