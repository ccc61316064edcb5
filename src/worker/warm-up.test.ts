// The kernel warm-up as the worker runs it, on the tiny model (SwiftShader): after a model loads it makes the
// pipelines of a first iteration, reporting them as they come, and keeps them in the kernel cache, so the
// next visit prepares them from the cache and skips the warm-up; what needs the model stops it (makeWay), a
// new request replaces it; ?warmup=off, a CPU adapter by default and a user's module are skipped.

import { describe, expect, it } from 'vitest';
import type { Gpu } from '../gpu/gpu.ts';
import type { RunConfig } from '../config/run-config.ts';
import { tinyRunConfig } from '../config/testing.ts';
import { Run } from '../marft/run.ts';
import { lossTestSession } from '../marft/testing.ts';
import { memoryStore } from '../platform/storage/store.ts';
import { KernelWarmUp } from './warm-up.ts';

const config = (over: Record<string, unknown> = {}): RunConfig => tinyRunConfig({ rollout: { episodes: 1, horizon: 1 }, ...over });

describe('the worker kernel warm-up', () => {
  it('warms up once per visit, keeps its kernels for the next, and makes way for what needs the model', async () => {
    const devices: Gpu[] = [];
    const kernels = memoryStore();
    const session = lossTestSession(devices, kernels);
    const warm = new KernelWarmUp(session, new Run(session, memoryStore(), {}, { maxTokens: 512 }));
    try {
      const seen: Array<[number, number]> = [];
      const r = await warm.prepare(config(), 'on', (made, asked) => seen.push([made, asked]));
      expect(r).toMatchObject({ stopped: false });
      expect(r!.made).toBeGreaterThan(0);
      expect(r!.made).toBe(devices[0].pipelines.size);
      expect(seen.at(-1)).toEqual([r!.made, r!.made]);
      expect((await kernels.list('')).map((e) => e.name)).toEqual([expect.stringMatching(/^kernels-[0-9a-f]{8}\.json$/)]);

      // what needs the model stops a warm-up within a decode step; a second one meanwhile is skipped
      const long = config({
        seed: 9,
        graph: { agents: [{ role: 'solver', systemPrompt: 'Solve.', withAnswer: true, maxNewTokens: 200 }], edges: [] },
      });
      const pending = warm.prepare(long, 'on', () => {});
      await new Promise((res) => setTimeout(res, 20));
      await warm.makeWay();
      expect(await pending).toMatchObject({ stopped: true });
      // a new request stops the one in flight and takes its place (the builder's latest config)
      const first = warm.prepare(long, 'on', () => {});
      await new Promise((res) => setTimeout(res, 20));
      const second = await warm.prepare(config(), 'on', () => {});
      expect(await first).toMatchObject({ stopped: true });
      expect(second).toMatchObject({ stopped: false });

      // skipped: ?warmup=off, a CPU adapter by default (this test's SwiftShader), a user's module
      expect(devices[0].cpu).toBe(true);
      expect(await warm.prepare(config(), 'off', () => {})).toBeNull();
      expect(await warm.prepare(config(), 'auto', () => {})).toBeNull();

      const plain = config();
      expect(
        await warm.prepare({ ...plain, env: { ...plain.env, module: 'm.mjs', moduleSource: 'export default {}' } }, 'on', () => {}),
      ).toBeNull();
    } finally {
      for (const d of devices) d.destroy();
    }

    // the next visit: the cache's pipelines are prepared while the model loads, and the warm-up is skipped
    const next: Gpu[] = [];
    const again = lossTestSession(next, kernels);
    try {
      const m = await again.load('');
      expect(m.summary.kernelsPrepared).toBeGreaterThan(0);
      expect(await new KernelWarmUp(again, new Run(again, memoryStore(), {})).prepare(config(), 'on', () => {})).toBeNull();
    } finally {
      for (const d of next) d.destroy();
    }
  }, 180_000);
});
