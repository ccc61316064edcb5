// The kernel warm-up on a device of its own: it makes every pipeline the run's first iteration needs, it
// leaves nothing behind (scratch state released, the first real iteration's numbers unchanged), and it
// stops within a decode step when interrupted.

import { describe, expect, it } from 'vitest';
import { createNodeGpu } from '../gpu/node.ts';
import type { Gpu } from '../gpu/gpu.ts';
import { releaseTrainState } from './state.ts';
import { tinySetup, untimed } from './testing.ts';
import { warmUpKernels, warmUpRefusal } from './warm-up.ts';
import { tinyRunConfig } from '../config/testing.ts';

const over = { rollout: { episodes: 2, horizon: 1 } };

/** The tiny model on `gpu` as a run session, its setup's own train state released (the warm-up makes its own). */
function session(gpu: Gpu) {
  const s = tinySetup(gpu, over);
  releaseTrainState(gpu, s.state);
  return { ...s, gpu };
}

describe('the kernel warm-up', () => {
  it("makes the first iteration's pipelines and leaves its numbers unchanged", async () => {
    const cold = await createNodeGpu();
    const warm = await createNodeGpu();
    try {
      // the reference: a first iteration with no warm-up
      const a = tinySetup(cold, over);
      const ref = (await a.trainer.iteration()).metrics;

      const m = session(warm);
      const inUse = warm.pool.stats.bytesInUse;
      const progress: number[] = [];
      const r = await warmUpKernels(m, m.config, { interrupt: () => {}, onMade: (made) => progress.push(made), maxTokens: 512 });
      expect(r.stopped).toBe(false);
      expect(r.made).toBe(warm.pipelines.size);
      expect(r.made).toBe(cold.pipelines.size);
      expect(progress.at(-1)).toBe(r.made);
      // the scratch adapters, critic and optimisers went back; what stays is the device's own tables (rope
      // frequencies, a reduction's scratch), made once: a second warm-up leaves the same
      const after = warm.pool.stats.bytesInUse;
      expect(after - inUse).toBeLessThan(4096);
      await warmUpKernels(m, m.config, { interrupt: () => {}, maxTokens: 512 });
      expect(warm.pool.stats.bytesInUse).toBe(after);

      // the run's own first iteration: nothing left to make, and the same numbers as without the warm-up
      const b = tinySetup(warm, over);
      const made = warm.pipelines.size;
      const got = (await b.trainer.iteration()).metrics;
      expect(warm.pipelines.size).toBe(made);
      expect(untimed(got)).toEqual(untimed(ref));
    } finally {
      cold.destroy();
      warm.destroy();
    }
  }, 180_000);

  it('stops within a decode step when interrupted and releases its scratch state', async () => {
    const gpu = await createNodeGpu();
    try {
      const m = session(gpu);
      await warmUpKernels(m, m.config, { interrupt: () => {} }); // the device's own tables made once
      const inUse = gpu.pool.stats.bytesInUse;
      let calls = 0;
      const r = await warmUpKernels(m, m.config, {
        interrupt: () => {
          if (++calls === 3) throw new Error('stop');
        },
      });
      expect(r.stopped).toBe(true);
      expect(calls).toBe(3);
      expect(gpu.pool.stats.bytesInUse).toBe(inUse);
      // an error that is not the interrupt's still reaches the caller
      const bad = { ...m.config, env: { ...m.config.env, name: 'nope' } };
      await expect(warmUpKernels(m, bad, { interrupt: () => {} })).rejects.toThrow(/no environment named "nope"/);
      expect(gpu.pool.stats.bytesInUse).toBe(inUse);
    } finally {
      gpu.destroy();
    }
  }, 120_000);

  it("refuses a user's environment module (its code would run for nothing)", () => {
    const plain = tinyRunConfig(over);
    const withModule = { ...plain, env: { ...plain.env, module: 'mine.mjs', moduleSource: 'export default {}' } };
    expect(warmUpRefusal(withModule)).toMatch(/environment module/);
    expect(warmUpRefusal(plain)).toBeNull();
  });
});
