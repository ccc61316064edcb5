// Pause and Stop within seconds, on the tiny model (real GPU work): the run loop's interrupt abandons the
// iteration in flight between decode steps (rollout), scoring chunks and minibatches (update); the state
// goes back to the last completed iteration (the RNG put back, or the last checkpoint reloaded once the
// update had stepped), and re-running the loop gives exactly the metrics of an uninterrupted run.

import { beforeAll, describe, expect, it } from 'vitest';
import { testGpu } from '../../kernels/testing.ts';
import type { IterationMetrics } from '../config/metrics.ts';
import type { Gpu } from '../gpu/gpu.ts';
import { memoryStore } from '../platform/storage/store.ts';
import { listCheckpoints } from './checkpoint/checkpoint.ts';
import { type RunSession, runLoop } from './run-loop.ts';
import { tinySetup } from './testing.ts';
import type { Phase } from './trainer.ts';

// one episode of two agents: two actions, so two minibatches and an update interrupted after its first step
const OVER = { rollout: { episodes: 1, horizon: 1 }, ppo: { lr: 1e-2, criticLr: 1e-2, targetKl: null, entropyCoef: 0.01, minibatches: 2 } };
const session = (gpu: Gpu, s: ReturnType<typeof tinySetup>): RunSession => ({
  gpu,
  envs: s.envs,
  decoder: s.decoder,
  tokenizer: s.tokenizer,
  model: s.model,
});
/** The metrics an interruption must not change (wall times and throughput vary from run to run). */
const numbers = (ms: readonly IterationMetrics[]) => ms.map(({ seconds: _s, tokensPerSecond: _t, ...m }) => m);

async function uninterrupted(gpu: Gpu) {
  const s = tinySetup(gpu, OVER);
  const r = await runLoop(session(gpu, s), s.state, { store: memoryStore(), dir: 'run', baseModel: 'tiny', until: 1, maxTokens: 512 });
  return numbers(r.state.metrics);
}

/** Interrupts the first iteration at the `nth` check of `phase`; returns what the loop left and then a resumed run's metrics. */
async function interrupted(gpu: Gpu, phase: Phase, nth: number) {
  const s = tinySetup(gpu, OVER);
  const store = memoryStore();
  let at: { phase: Phase | null; iteration: number } = { phase: null, iteration: 0 };
  let checks = 0;
  let fired = false;
  const after: string[] = []; // anything the loop did once the interrupt fired
  const r = await runLoop(session(gpu, s), s.state, {
    store,
    dir: 'run',
    baseModel: 'tiny',
    until: 1,
    maxTokens: 512,
    onProgress: (p, detail, { state }) => {
      at = { phase: p, iteration: state.iteration };
      if (fired) after.push(`${p}: ${detail}`);
    },
    onIteration: (res) => {
      if (fired) after.push(`iteration ${res.metrics.iteration}`);
    },
    interrupt: () => {
      if (fired) {
        after.push('asked again');
        return true;
      }
      if (at.phase !== phase) return false;
      fired = ++checks === nth;
      return fired;
    },
  });
  const latest = (await listCheckpoints(store, 'run')).find((c) => c.latest)!;
  const left = {
    abandoned: r.abandoned,
    iteration: r.state.iteration,
    history: r.state.metrics.length,
    after,
    checks,
    latest: latest.iteration,
  };
  const resumed = await runLoop(r.session, r.state, { store, dir: 'run', baseModel: 'tiny', until: 1, maxTokens: 512 });
  return { left, metrics: numbers(resumed.state.metrics) };
}

describe('pause / stop mid-iteration (run-loop interrupt)', () => {
  let gpu: Gpu;
  let want: ReturnType<typeof numbers>;
  beforeAll(async () => {
    gpu = await testGpu();
    want = await uninterrupted(gpu);
    expect(want.map((m) => m.iteration)).toEqual([0]);
  }, 400_000);

  it.each([
    ['rollout', 2, false],
    ['score', 1, false],
    ['update', 2, true],
  ] as const)(
    'abandons the iteration at the %s check %i (reloaded: %s); resuming gives the uninterrupted metrics',
    async (phase, nth, reloaded) => {
      const { left, metrics } = await interrupted(gpu, phase, nth);
      // it acted at that very check (a decode step, a scoring chunk, a minibatch): nothing ran after it
      expect(left.checks).toBe(nth);
      expect(left.after).toEqual([]);
      expect(left.abandoned).toMatchObject({ code: 'ITERATION_ABANDONED', iteration: 0, reloaded });
      // back at the last completed iteration, whose checkpoint is still the latest
      expect([left.iteration, left.history, left.latest]).toEqual([0, 0, 0]);
      expect(metrics).toEqual(want);
    },
    400_000,
  );
});
