// Non-finite detection where values appear, without a sync per tensor: a watch is one small u32 tensor
// with a slot per watched place (a layer's output, a parameter's gradient, an optimiser moment); each
// watched tensor adds its NaN / ±Inf count to its slot (kernels/finite: up to six tensors a dispatch), and the
// caller reads every slot back beside a readback it makes anyway (Promise.all with it: the two maps
// resolve together), or snapshots them into a ReadQueue (src/gpu/readback.ts) to read at a later sync
// point, so a watch costs no wait of its own. The count is taken on the bit pattern, so a NaN that a later op would hide (WGSL's
// max(NaN, 0) may return 0 on SwiftShader, zeroing a NaN pre-activation in ReLU) is still seen.

import { countNonFiniteMany } from '../../kernels/finite/finite.ts';
import type { Gpu } from '../gpu/gpu.ts';
import type { Later, ReadQueue } from '../gpu/readback.ts';
import type { Tensor } from '../gpu/tensor.ts';
import type { Optimizer } from './optimizer.ts';

export interface FiniteWatch {
  /** (K) u32: the non-finite count of each watched place. */
  flags: Tensor;
  /** The place of each slot in use, in slot order. */
  names: string[];
}

/** A place that held non-finite values, and how many (summed over the tensors watched under its name). */
export interface NonFinite {
  where: string;
  count: number;
}

/** A watch with room for `slots` places (a place watched again under the same name shares its slot). */
export function createFiniteWatch(gpu: Gpu, slots: number): FiniteWatch {
  return { flags: gpu.zeros([Math.max(1, slots)], 'u32', 'finite.flags'), names: [] };
}

/** The slot of `where` (a new one for a place not watched since the last read). */
function slotOf(w: FiniteWatch, where: string): number {
  let slot = w.names.indexOf(where);
  if (slot < 0) {
    slot = w.names.length;
    w.names.push(where);
  }
  return slot;
}

/** Records the count of each tensor's non-finite values into the slot of `where`. */
export function watchFinite(gpu: Gpu, w: FiniteWatch, where: string, ...ts: Tensor[]): void {
  const slot = slotOf(w, where);
  countNonFiniteMany(
    gpu,
    w.flags,
    ts.map((x) => ({ slot, x })),
  );
}

/** Watches each tensor under its own label, several tensors a dispatch (countNonFiniteMany). */
function watchEach(gpu: Gpu, w: FiniteWatch, ts: readonly Tensor[]): void {
  countNonFiniteMany(
    gpu,
    w.flags,
    ts.map((x) => ({ slot: slotOf(w, x.label), x })),
  );
}

/** Watches every group's gradient (before a step reads them). */
export function watchGradients(gpu: Gpu, w: FiniteWatch, o: Optimizer): void {
  watchEach(
    gpu,
    w,
    o.groups.map((g) => g.grads),
  );
}

/** Watches every group's parameters and Adam moments (after a step wrote them). */
export function watchOptimizerState(gpu: Gpu, w: FiniteWatch, o: Optimizer): void {
  watchEach(
    gpu,
    w,
    o.groups.flatMap((g) => [g.params, g.m, g.v]),
  );
}

/** Slots that watchGradients and watchOptimizerState take for `o`. */
export const optimizerWatchSlots = (o: Optimizer): number => 4 * o.groups.length;

/** The places that held non-finite values since the last read (one small readback); the watch starts over. */
export async function readFiniteWatch(gpu: Gpu, w: FiniteWatch): Promise<NonFinite[]> {
  const counts = await gpu.read(w.flags);
  const out = w.names.map((where, i) => ({ where, count: counts[i] })).filter((x) => x.count > 0);
  if (out.length) gpu.fill(w.flags, 0);
  w.names = [];
  return out;
}

/**
 * The places watched since the last read or snapshot, as they are now, read at the queue's next flush (no
 * wait here); the watch starts over (cleared in the command stream). Gives what readFiniteWatch would give here.
 */
export function snapshotFiniteWatch(gpu: Gpu, w: FiniteWatch, q: ReadQueue): Later<NonFinite[]> {
  const names = w.names;
  if (!names.length) return { get: () => [] }; // nothing watched since the last clear: every slot is 0
  const found = q.snapshot(w.flags, (counts) => names.map((where, i) => ({ where, count: counts[i] })).filter((x) => x.count > 0));
  gpu.fill(w.flags, 0);
  w.names = [];
  return found;
}

/** "where (n values), ..." for a message. */
export function describeNonFinite(xs: readonly NonFinite[]): string {
  return xs.map((x) => `${x.where} (${x.count} value${x.count === 1 ? '' : 's'})`).join(', ');
}

export function releaseFiniteWatch(gpu: Gpu, w: FiniteWatch): void {
  gpu.release(w.flags);
}
