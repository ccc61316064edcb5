// Float64 CPU reference for AdamW with global-norm clipping and the non-finite skip (PyTorch semantics:
// torch.nn.utils.clip_grad_norm_ then torch.optim.AdamW).

import type { AdamWHyper } from './adamw.ts';

export interface AdamWRefGroup {
  params: Float64Array;
  grads: ArrayLike<number>;
  m: Float64Array;
  v: Float64Array;
  decay?: boolean;
}
export interface AdamWRefState {
  step: number;
  skipped: number;
  norm: number;
  clipScale: number;
  nonFinite: boolean;
}

/** One step over all groups, in place; returns the state after it. */
export function adamwStepRef(
  groups: AdamWRefGroup[],
  state: { step: number; skipped: number },
  hp: AdamWHyper & { maxNorm?: number },
): AdamWRefState {
  let sumsq = 0;
  for (const g of groups) for (let i = 0; i < g.grads.length; i++) sumsq += g.grads[i] * g.grads[i];
  const norm = Math.sqrt(sumsq);
  // The GPU sums squares in f32: beyond f32's largest value (a gradient element ~1.8e19) it is +inf too.
  if (!(sumsq <= 3.4028234663852886e38)) return { step: state.step, skipped: state.skipped + 1, norm, clipScale: 0, nonFinite: true };
  const maxNorm = hp.maxNorm ?? 0;
  const clipScale = maxNorm > 0 && Number.isFinite(maxNorm) ? Math.min(1, maxNorm / (norm + 1e-6)) : 1;
  const t = state.step + 1;
  const b1 = hp.beta1 ?? 0.9;
  const b2 = hp.beta2 ?? 0.999;
  const eps = hp.eps ?? 1e-8;
  const bc1 = 1 - b1 ** t;
  const bc2 = 1 - b2 ** t;
  for (const { params, grads, m, v, decay } of groups) {
    const wd = decay === false ? 0 : (hp.weightDecay ?? 0);
    for (let i = 0; i < params.length; i++) {
      const g = grads[i] * clipScale;
      m[i] = b1 * m[i] + (1 - b1) * g;
      v[i] = b2 * v[i] + (1 - b2) * g * g;
      params[i] = params[i] * (1 - hp.lr * wd) - ((hp.lr / bc1) * m[i]) / (Math.sqrt(v[i]) / Math.sqrt(bc2) + eps);
    }
  }
  return { step: t, skipped: state.skipped, norm, clipScale, nonFinite: false };
}

/**
 * One per-slot step over slot-major groups (each tensor (S, ...)), in place: every active slot (default
 * all) steps as adamwStepRef on its own part of every group, with its own state (norm, clip, step count);
 * the others are untouched. Returns each slot's state after it (an inactive slot's as it was, norm NaN).
 */
export function adamwSlotsStepRef(
  groups: AdamWRefGroup[],
  states: ReadonlyArray<{ step: number; skipped: number }>,
  hp: AdamWHyper & { maxNorm?: number },
  active?: readonly number[],
): AdamWRefState[] {
  const S = states.length;
  return states.map((st, s) => {
    if (active && !active.includes(s)) return { ...st, norm: NaN, clipScale: NaN, nonFinite: false };
    const part = <T extends ArrayLike<number>>(a: T): T => {
      const n = a.length / S;
      return (a instanceof Float64Array
        ? a.subarray(s * n, (s + 1) * n)
        : Array.prototype.slice.call(a, s * n, (s + 1) * n)) as unknown as T;
    };
    return adamwStepRef(
      groups.map((g) => ({ params: part(g.params), grads: part(g.grads), m: part(g.m), v: part(g.v), decay: g.decay })),
      st,
      hp,
    );
  });
}
