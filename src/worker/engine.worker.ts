// The engine's Web Worker: owns the GPU device, so the UI thread never blocks on GPU work.

import * as Comlink from 'comlink';
import { embeddingForward } from '../../kernels/embedding/embedding.ts';
import { acquireBrowserGpu } from '../gpu/browser.ts';
import type { Gpu } from '../gpu/context.ts';
import { type EngineApi, type ProbeResult, type Result, toWorkerError } from './api.ts';

let gpu: Gpu | null = null;

async function kernelCheck(g: Gpu): Promise<ProbeResult['kernelCheck']> {
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

const api: EngineApi = {
  async probe(): Promise<Result<ProbeResult>> {
    try {
      gpu ??= await acquireBrowserGpu({ log: (l) => console.log(l) });
      const l = gpu.limits;
      return {
        ok: true,
        value: {
          adapter: gpu.adapter,
          limits: {
            maxStorageBufferBindingSize: l.maxStorageBufferBindingSize,
            maxBufferSize: l.maxBufferSize,
            maxComputeWorkgroupStorageSize: l.maxComputeWorkgroupStorageSize,
          },
          kernelCheck: await kernelCheck(gpu),
        },
      };
    } catch (e) {
      return { ok: false, error: toWorkerError(e) };
    }
  },
};

Comlink.expose(api);
