// A device check for a front end's probe: one tiny kernel (the embedding gather) run on the device and
// compared with the CPU, proving that compute works end to end before a model is loaded.

import { embeddingForward } from '../../kernels/embedding/embedding.ts';
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
