// The optimiser that MARFT (adapters, critic) and pretraining (every weight) share: AdamW over a list of
// parameter tensors with their gradients, one step = global-norm clipping over all of them, then each
// tensor's update. A step whose gradient norm is not finite is a no-op on the GPU (and is counted), so a
// caller records a step without a readback and reads the stats afterwards only when it wants them (or
// snapshots them into a ReadQueue, read at a later sync point: snapshotSlotStats).
// A slotted optimiser (slot-major (S, ...) tensors: one LoRA adapter per agent) keeps that state per slot,
// as one optimiser per agent would: each slot's own norm, clip and step count, and a step may leave slots
// out (frozen agents: params, moments and counts untouched).
// The state a checkpoint holds is the moments of each tensor (`groups`, in the order given) and `stats`.

import { ADAMW_STATS, type AdamWGroup, adamwStats, adamwStep, zeroGrads } from '../../kernels/adamw/adamw.ts';
import { shapeError } from '../gpu/errors.ts';
import type { Gpu } from '../gpu/gpu.ts';
import type { Later, ReadQueue } from '../gpu/readback.ts';
import { type Tensor, numel } from '../gpu/tensor.ts';

/** Layout of one slot's 8 values in Optimizer.stats: a checkpoint records it beside the stats it saves. */
export const OPTIMIZER_STATS_LAYOUT = ADAMW_STATS;

/** One trained tensor: params, grads (same layout), Adam moments m and v, and whether weight decay applies. */
export type OptimizerGroup = AdamWGroup;

export interface Optimizer {
  groups: OptimizerGroup[];
  /**
   * f32 on the GPU, (8) unslotted or (S, 8) slotted: per slot, its gradient norm, non-finite flag, clip
   * scale, step count, skipped steps (OPTIMIZER_STATS_LAYOUT).
   */
  stats: Tensor;
  /** S for a slotted optimiser, null for one global state. */
  slots: number | null;
}

export interface OptimizerHyper {
  lr: number;
  beta1?: number; // default 0.9
  beta2?: number; // default 0.999
  eps?: number; // default 1e-8
  /** Decoupled weight decay of the groups with decay (default 0). */
  weightDecay?: number;
  /** Global-norm clipping threshold (per slot when slotted); 0 or Infinity: no clipping (default 0). */
  maxNorm?: number;
}

/** The state of one optimiser (or one slot of a slotted one). */
export interface OptimizerStats {
  /** Gradient norm of the last step, before clipping. */
  norm: number;
  /** The last step was skipped (non-finite gradient norm). */
  skipped: boolean;
  /** Steps taken and steps skipped so far. */
  steps: number;
  skippedSteps: number;
}

/**
 * Zeroed moments and stats for `params` (each with its gradient; decay false exempts it from weight
 * decay, e.g. norm weights). The group order is the order given: checkpoints rely on it. `slots`: every
 * tensor is slot-major (S, ...) and each slot keeps its own clipping and step count.
 */
export function createOptimizer(
  gpu: Gpu,
  params: ReadonlyArray<{ param: Tensor; grad: Tensor; decay?: boolean }>,
  slots?: number,
): Optimizer {
  return {
    groups: params.map(({ param, grad, decay }) => ({
      params: param,
      grads: grad,
      m: gpu.zeros(param.shape, 'f32', `${param.label}.adam_m`),
      v: gpu.zeros(param.shape, 'f32', `${param.label}.adam_v`),
      decay: decay ?? true,
    })),
    stats: adamwStats(gpu, slots),
    slots: slots ?? null,
  };
}

/**
 * Records one step over every group (clip by the global norm, per slot when slotted; skip a slot whose
 * norm is not finite); no readback. `slots`: the slots that step (default all); the others are untouched.
 */
export function optimizerStep(gpu: Gpu, o: Optimizer, hp: OptimizerHyper, slots?: readonly number[]): void {
  adamwStep(gpu, o.groups, o.stats, hp, slots);
}

/** Clears every group's gradients in the command stream (before a backward accumulates into them). */
export function clearGrads(gpu: Gpu, o: Optimizer): void {
  zeroGrads(
    gpu,
    o.groups.map((g) => g.grads),
  );
}

/** Each slot's stats from the values of Optimizer.stats. */
function slotStats(s: ArrayLike<number>, o: Optimizer): OptimizerStats[] {
  return Array.from({ length: numel(o.stats.shape) / ADAMW_STATS.size }, (_, k) => {
    const b = k * ADAMW_STATS.size;
    return {
      norm: s[b + ADAMW_STATS.norm],
      skipped: s[b + ADAMW_STATS.nonFinite] !== 0,
      steps: s[b + ADAMW_STATS.step],
      skippedSteps: s[b + ADAMW_STATS.skipped],
    };
  });
}

/** Reads each slot's stats back (one small readback); an unslotted optimiser has one. */
export async function readSlotStats(gpu: Gpu, o: Optimizer): Promise<OptimizerStats[]> {
  return slotStats(await gpu.readF32(o.stats), o);
}

/** Each slot's stats as they are now (after the last recorded step), read at the queue's next flush (no wait here). */
export function snapshotSlotStats(o: Optimizer, q: ReadQueue): Later<OptimizerStats[]> {
  return q.snapshot(o.stats, (s) => slotStats(s, o));
}

/** Reads the stats of an unslotted optimiser's last step back (one small readback). */
export async function readOptimizerStats(gpu: Gpu, o: Optimizer): Promise<OptimizerStats> {
  if (o.slots !== null) shapeError('readOptimizerStats', `the optimiser has ${o.slots} slots: read them with readSlotStats`);
  return (await readSlotStats(gpu, o))[0];
}

/** Releases the moments and the stats (the parameters and their gradients belong to the caller). */
export function releaseOptimizer(gpu: Gpu, o: Optimizer): void {
  for (const g of o.groups) gpu.release(g.m, g.v);
  gpu.release(o.stats);
}
