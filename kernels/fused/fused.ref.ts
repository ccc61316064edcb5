// Float64 CPU reference of the fused linear group (kernels/fused/linear.wgsl): the projections of a group
// of modules sharing their input, each row's LoRA of its sequence's slot, the bias and the epilogue.

export interface GroupRefLora {
  slots: ArrayLike<number>;
  T: number;
  S: number;
  R: number;
  scale: number;
  /** Per module: lora_A (S, R, K) and lora_B (S, OUT_j, R), or undefined when the module has no adapter. */
  mods: Array<{ A: ArrayLike<number>; B: ArrayLike<number> } | undefined>;
}

/**
 * y (M, NW) = x w^T + bias + LoRA, the modules' outputs side by side (widths outs), and each adapted
 * module's h (M, R) = x A[slot]^T (0 for rows of slot -1), in group order.
 */
export function fusedLinearRef(
  x: ArrayLike<number>,
  w: ArrayLike<number>,
  M: number,
  K: number,
  outs: number[],
  bias?: ArrayLike<number>,
  lora?: GroupRefLora,
): { y: Float64Array; h: Float64Array[] } {
  const NW = outs.reduce((a, b) => a + b, 0);
  const y = new Float64Array(M * NW);
  for (let m = 0; m < M; m++) {
    for (let n = 0; n < NW; n++) {
      let acc = bias ? bias[n] : 0;
      for (let k = 0; k < K; k++) acc += x[m * K + k] * w[n * K + k];
      y[m * NW + n] = acc;
    }
  }
  const h: Float64Array[] = [];
  if (!lora) return { y, h };
  const { R, S, scale } = lora;
  let col = 0;
  lora.mods.forEach((p, j) => {
    const OUT = outs[j];
    if (p) {
      const hj = new Float64Array(M * R);
      for (let m = 0; m < M; m++) {
        const s = lora.slots[Math.floor(m / lora.T)];
        if (s < 0 || s >= S) continue;
        for (let r = 0; r < R; r++) {
          let acc = 0;
          for (let k = 0; k < K; k++) acc += x[m * K + k] * p.A[(s * R + r) * K + k];
          hj[m * R + r] = acc;
        }
        for (let o = 0; o < OUT; o++) {
          let acc = 0;
          for (let r = 0; r < R; r++) acc += hj[m * R + r] * p.B[(s * OUT + o) * R + r];
          y[m * NW + col + o] += scale * acc;
        }
      }
      h.push(hj);
    }
    col += OUT;
  });
  return { y, h };
}
