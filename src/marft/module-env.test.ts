// A run whose environment is a user's module (examples/guess.mjs, multi-turn, in the Node sandbox), on the
// tiny model: it checkpoints and resumes exactly (metrics and adapters bit for bit, the module's source
// kept in the checkpoint's run config), and a module that fails mid-run pauses the run at its last
// checkpoint with an error naming the module and the call, nothing lost.

import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { testGpu } from '../../kernels/testing.ts';
import { Envs } from '../envs/registry.ts';
import { nodeSandbox } from '../platform/sandbox/node.ts';
import { memoryStore } from '../platform/storage/index.ts';
import { loadCheckpoint, readCheckpointFiles, saveCheckpoint } from './checkpoint/checkpoint.ts';
import { RunPaused, runLoop } from './run-loop.ts';
import { releaseTrainState } from './state.ts';
import { tinySetup, untimed } from './testing.ts';
import { Trainer } from './trainer.ts';

const GUESS = readFileSync(new URL('../../examples/guess.mjs', import.meta.url), 'utf8');
const over = (source: string, name = 'guess.mjs') => ({
  level: 'token',
  rollout: { episodes: 2, horizon: 2 },
  env: { name, module: name, moduleSource: source, options: { max: 4 } },
});

/** The session's environments: modules in worker threads, their sandboxes closed after each case. */
const envs = new Envs(nodeSandbox);
afterEach(() => envs.close());

describe('a run with an environment module', () => {
  it('checkpoints and resumes exactly', async () => {
    const gpu = await testGpu();
    const a = tinySetup(gpu, over(GUESS), envs);
    const r0 = await a.trainer.iteration();
    expect(r0.episodes[0].task).toMatch(/whole number from 1 to 4/);
    expect(r0.episodes.some((e) => e.turns.length === 2 || e.correct)).toBe(true);
    const m1 = (await a.trainer.iteration()).metrics;
    const bA = await gpu.readF32(a.state.policy.layers[0].q_proj!.B);
    releaseTrainState(gpu, a.state);

    const b = tinySetup(gpu, over(GUESS), envs);
    expect(untimed((await b.trainer.iteration()).metrics)).toEqual(untimed(r0.metrics));
    const store = memoryStore();
    await saveCheckpoint(gpu, b.state, store, 'run', { baseModel: 'tiny' });
    releaseTrainState(gpu, b.state);
    const saved = JSON.parse(new TextDecoder().decode((await readCheckpointFiles(store, 'run')).files['config.json']));
    expect(saved.env.moduleSource).toBe(GUESS);
    envs.close(); // the resumed run starts its own sandbox, as after a restart
    const state = await loadCheckpoint(gpu, store, 'run', b.model);
    const resumed = new Trainer({ gpu, envs, decoder: b.decoder, tokenizer: b.tokenizer, state, maxTokens: 512 });
    const r1 = (await resumed.iteration()).metrics;
    expect(untimed(r1)).toEqual(untimed(m1));
    expect(Array.from(await gpu.readF32(state.policy.layers[0].q_proj!.B))).toEqual(Array.from(bA));
    releaseTrainState(gpu, state);
  });

  it('pauses at the last checkpoint when the module fails mid-run', async () => {
    const gpu = await testGpu();
    // fails on its 3rd reset, i.e. in the second iteration (2 episodes per iteration)
    const flaky = GUESS.replace(
      'reset(seed) {',
      "reset(seed) {\n      globalThis.resets = (globalThis.resets ?? 0) + 1;\n      if (globalThis.resets === 3) throw new Error('the tool is down');",
    );
    const s = tinySetup(gpu, over(flaky, 'flaky.mjs'), envs);
    // an env of the module held open keeps its sandbox (and its count of resets) across slow iterations
    const hold = envs.modules.env({ source: flaky, name: 'flaky.mjs' }, {});
    const store = memoryStore();
    const err = await runLoop({ gpu, envs, decoder: s.decoder, tokenizer: s.tokenizer, model: s.model }, s.state, {
      store,
      dir: 'run',
      baseModel: 'tiny',
      until: 3,
      maxTokens: 512,
    }).catch((e: unknown) => e);
    hold.close();
    expect(err).toBeInstanceOf(RunPaused);
    const p = err as RunPaused;
    expect(p.reason).toBe('environment');
    expect(p.message).toMatch(
      /training paused at iteration 1: environment module "flaky\.mjs", reset\(\d+\): threw Error: the tool is down/,
    );
    expect(p.message).toMatch(/back at its last checkpoint \(iteration 1\); nothing saved was lost/);
    expect(p.hint).toMatch(/marft env test/);
    expect(p.state.iteration).toBe(1);
    const ckpt = await loadCheckpoint(gpu, store, 'run', s.model);
    expect(p.state.rng.state).toBe(ckpt.rng.state);
    expect(Array.from(await gpu.readF32(p.state.policy.layers[0].q_proj!.B))).toEqual(
      Array.from(await gpu.readF32(ckpt.policy.layers[0].q_proj!.B)),
    );
    releaseTrainState(gpu, ckpt);
    releaseTrainState(gpu, p.state);
  });
});
