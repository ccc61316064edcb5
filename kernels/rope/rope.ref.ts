// Float64 CPU reference for rotary position embedding (HF Llama / Qwen2 rotate_half convention).
// By default the angle is the float32 value HF computes (f32 inv_freq, f32(pos * inv_freq)); cos, sin and
// the rotation are then float64. `exactAngles` gives the ideal float64 angles pos * theta^(-2d/HS).

import { thetaInvFreq } from './rope.ts';

export function ropeAngles(pos: ArrayLike<number>, HS: number, theta: number, exactAngles = false): Float64Array {
  const half = HS / 2;
  const inv = thetaInvFreq(HS, theta);
  const out = new Float64Array(pos.length * half);
  for (let n = 0; n < pos.length; n++) {
    for (let d = 0; d < half; d++) {
      out[n * half + d] = exactAngles ? pos[n] * Math.pow(theta, (-2 * d) / HS) : Math.fround(pos[n] * inv[d]);
    }
  }
  return out;
}

/** Rotates x (BT, H, HS) by the angles (BT, HS/2); sign -1 rotates back (the backward of sign 1). */
export function ropeRef(
  x: ArrayLike<number>,
  angles: ArrayLike<number>,
  BT: number,
  H: number,
  HS: number,
  sign: 1 | -1 = 1,
): Float64Array {
  const half = HS / 2;
  const out = new Float64Array(BT * H * HS);
  for (let n = 0; n < BT; n++) {
    for (let h = 0; h < H; h++) {
      for (let d = 0; d < half; d++) {
        const a = angles[n * half + d];
        const c = Math.cos(a);
        const s = sign * Math.sin(a);
        const j = (n * H + h) * HS + d;
        out[j] = x[j] * c - x[j + half] * s;
        out[j + half] = x[j + half] * c + x[j] * s;
      }
    }
  }
  return out;
}
