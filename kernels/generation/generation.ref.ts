// Integer CPU reference of generation.wgsl's `advance`: one step's positions, cache length, step counter
// and stop detection.

export interface StepState {
  step: number;
  len: number;
  pos: Int32Array;
  kept: Int32Array;
}

/** The state after `advance` ran on `st` with the tokens sampled at step st.step (kept has B + 1 entries). */
export function advanceRef(
  st: StepState,
  token: ArrayLike<number>,
  plen: ArrayLike<number>,
  limit: ArrayLike<number>,
  stops: readonly number[],
  Tp: number,
): StepState {
  const s = st.step;
  const B = plen.length;
  const kept = Int32Array.from(st.kept);
  const pos = Int32Array.from({ length: B }, (_, b) => plen[b] + s);
  let running = 0;
  for (let b = 0; b < B; b++) {
    if (kept[b] >= 0) continue;
    if (s + 1 >= limit[b] || stops.includes(token[b])) kept[b] = s + 1;
    else running++;
  }
  kept[B] = running;
  return { step: s + 1, len: Tp + s, pos, kept };
}
