// Float64 CPU reference for multi-adapter LoRA (stacked adapters, a slot per sequence) and its backward.

import type { LoraDims } from './kernel.ts';

export type { LoraDims };

const slotOf = (slots: ArrayLike<number>, m: number, d: LoraDims) => {
  const s = slots[Math.floor(m / d.T)];
  return s >= 0 && s < d.S ? s : -1;
};

/** h (B*T, R) and the adapter's contribution to y (B*T, OUT) (the caller adds it to the base output). */
export function loraForwardRef(
  x: ArrayLike<number>,
  slots: ArrayLike<number>,
  A: ArrayLike<number>,
  Bw: ArrayLike<number>,
  d: LoraDims,
  scale: number,
): { y: Float64Array; h: Float64Array } {
  const { R, IN, OUT } = d;
  const M = d.B * d.T;
  const h = new Float64Array(M * R);
  const y = new Float64Array(M * OUT);
  for (let m = 0; m < M; m++) {
    const s = slotOf(slots, m, d);
    if (s < 0) continue;
    for (let r = 0; r < R; r++) {
      let acc = 0;
      for (let k = 0; k < IN; k++) acc += x[m * IN + k] * A[(s * R + r) * IN + k];
      h[m * R + r] = acc;
    }
    for (let o = 0; o < OUT; o++) {
      let acc = 0;
      for (let r = 0; r < R; r++) acc += h[m * R + r] * Bw[(s * OUT + o) * R + r];
      y[m * OUT + o] = scale * acc;
    }
  }
  return { y, h };
}

/** This call's contributions to dx (B*T, IN), dA (S, R, IN) and dB (S, OUT, R), given dy (B*T, OUT). */
export function loraBackwardRef(
  dy: ArrayLike<number>,
  x: ArrayLike<number>,
  slots: ArrayLike<number>,
  A: ArrayLike<number>,
  Bw: ArrayLike<number>,
  d: LoraDims,
  scale: number,
): { dx: Float64Array; dA: Float64Array; dB: Float64Array } {
  const { S, R, IN, OUT } = d;
  const M = d.B * d.T;
  const { h } = loraForwardRef(x, slots, A, Bw, d, scale);
  const dx = new Float64Array(M * IN);
  const dA = new Float64Array(S * R * IN);
  const dB = new Float64Array(S * OUT * R);
  const dh = new Float64Array(R);
  for (let m = 0; m < M; m++) {
    const s = slotOf(slots, m, d);
    if (s < 0) continue;
    for (let r = 0; r < R; r++) {
      let acc = 0;
      for (let o = 0; o < OUT; o++) {
        acc += dy[m * OUT + o] * Bw[(s * OUT + o) * R + r];
        dB[(s * OUT + o) * R + r] += scale * dy[m * OUT + o] * h[m * R + r];
      }
      dh[r] = scale * acc;
    }
    for (let r = 0; r < R; r++) {
      for (let k = 0; k < IN; k++) {
        dA[(s * R + r) * IN + k] += dh[r] * x[m * IN + k];
        dx[m * IN + k] += dh[r] * A[(s * R + r) * IN + k];
      }
    }
  }
  return { dx, dA, dB };
}
