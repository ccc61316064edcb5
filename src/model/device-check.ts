// A device check for a front end's probe: one tiny kernel (the embedding gather) run on the device and
// compared with the CPU, proving that compute works end to end before a model is loaded; and a short
// speed probe (the cost of one small dispatch, the throughput of a mid-size matmul) from which the lab
// estimates the time of an iteration before any is run: on a software adapter (SwiftShader) that is the
// difference between seconds and hours.

import { embeddingForward } from '../../kernels/embedding/embedding.ts';
import { matmul } from '../../kernels/matmul/matmul.ts';
import type { Gpu } from '../gpu/gpu.ts';

export async function deviceCheck(g: Gpu): Promise<{ ok: boolean; detail: string }> {
  const [V, C] = [5, 3];
  const weight = Array.from({ length: V * C }, (_, i) => i * 0.5 - 3);
  const ids = [4, 0, 2];
  const tIds = g.upload(ids, [ids.length], 'i32', 'probe.ids');
  const tW = g.upload(weight, [V, C], 'f32', 'probe.w');
  const out = g.tensor([ids.length, C], 'f32', 'probe.out');
  embeddingForward(g, out, tIds, tW);
  const got = await g.read(out);
  g.release(tIds, tW, out);
  const want = ids.flatMap((v) => weight.slice(v * C, v * C + C));
  const ok = want.every((w, i) => got[i] === w);
  return { ok, detail: ok ? 'embedding gather matches the CPU' : `embedding gather mismatch: got ${Array.from(got)}` };
}

export interface DeviceSpeed {
  /** Milliseconds per small dispatch, recorded back to back and read once (the per-kernel floor of decoding). */
  dispatchMs: number;
  /** Matmul throughput, GFLOP/s, of (S, S) x (S, S) products. */
  gflops: number;
}

const SMALL = 32;
const SMALL_REPS = 40;
const BIG = 128;
const BIG_REPS = 3;

/** Wall milliseconds of `reps` matmuls (n, n) x (n, n) recorded together and read back once. */
async function timeMatmuls(g: Gpu, n: number, reps: number): Promise<number> {
  const a = g.upload(
    Array.from({ length: n * n }, (_, i) => ((i % 7) - 3) / 8),
    [n, n],
    'f32',
    'speed.a',
  );
  const out = g.tensor([n, n], 'f32', 'speed.out');
  matmul(g, out, a, a); // compiles the pipeline outside the timing
  await g.read(out);
  const t0 = performance.now();
  for (let r = 0; r < reps; r++) matmul(g, out, a, a);
  await g.read(out);
  const ms = performance.now() - t0;
  g.release(a, out);
  return ms;
}

/** A probe of a few hundred milliseconds at most on a software adapter, a few on a GPU. */
export async function deviceSpeed(g: Gpu): Promise<DeviceSpeed> {
  const dispatchMs = (await timeMatmuls(g, SMALL, SMALL_REPS)) / SMALL_REPS;
  const bigMs = (await timeMatmuls(g, BIG, BIG_REPS)) / BIG_REPS;
  const flops = 2 * BIG ** 3;
  // the big product's own time, less its dispatch floor (never below a tenth of it: timer noise)
  const computeMs = Math.max(bigMs - dispatchMs, bigMs / 10);
  return { dispatchMs, gflops: flops / (computeMs * 1e6) };
}
