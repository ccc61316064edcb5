// A readback of a known set of tensors issued now and awaited later: the copies into one staging buffer
// are recorded and submitted before this returns, so they hold the values of this moment, while the wait
// for them (and whatever the caller does with the values) overlaps with GPU work recorded afterwards.
// Checkpoints use it to snapshot the training state between iterations and write it during the next one.

import type { Gpu } from './gpu.ts';
import type { Tensor } from './tensor.ts';

/** What reads tensors back as f32 values: the Gpu itself, or a prefetch of a known set. */
export interface TensorReader {
  readF32(t: Tensor): Promise<Float32Array>;
}

/** A prefetch: its reader, and `arrived`, which resolves once every value is on the CPU (or rejects with the read's error). */
export interface Prefetch extends TensorReader {
  arrived: Promise<void>;
}

/** One readback of `ts` (duplicates read once), issued now; reading a tensor outside the set throws. */
export function prefetch(gpu: Gpu, ts: readonly Tensor[]): Prefetch {
  const unique = [...new Set(ts)];
  const values = gpu.readMany(unique);
  const arrived = values.then(() => undefined);
  // a failure surfaces at readF32 or through `arrived`; unawaited, neither may be an unhandled rejection
  values.catch(() => {});
  arrived.catch(() => {});
  const index = new Map(unique.map((t, i) => [t, i]));
  return {
    arrived,
    async readF32(t: Tensor): Promise<Float32Array> {
      const i = index.get(t);
      if (i === undefined) throw new Error(`prefetch: ${t.label} was not in the prefetched set`);
      const v = (await values)[i];
      return v instanceof Float32Array ? v : Float32Array.from(v);
    },
  };
}
