// The checkpoint cadence and the overlapped write (writer.ts, run-loop.ts), on the tiny model (SwiftShader):
// a capture is one readback; the cadence writes every N iterations or T seconds and always at the end; a
// write runs while the next iteration does; a reload comes from the snapshot in memory, equal to the store's.

import { describe, expect, it } from 'vitest';
import { testGpu } from '../../../kernels/testing.ts';
import type { Gpu } from '../../gpu/gpu.ts';
import { memoryStore } from '../../platform/storage/store.ts';
import { type RunLoopEvent, type RunSession, runLoop } from '../run-loop.ts';
import { releaseTrainState } from '../state.ts';
import { tinySetup } from '../testing.ts';
import { captureCheckpoint, listCheckpoints, loadCheckpoint, readCheckpointFiles, saveCheckpoint } from './checkpoint.ts';
import { CheckpointWriter } from './writer.ts';

const OVER = { rollout: { episodes: 1, horizon: 1 } };
const session = (gpu: Gpu, s: ReturnType<typeof tinySetup>): RunSession => ({
  gpu,
  envs: s.envs,
  decoder: s.decoder,
  tokenizer: s.tokenizer,
  model: s.model,
});

describe('checkpoint writer', () => {
  it('a capture reads the whole state back in one readback, and gives the files saveCheckpoint writes', async () => {
    const gpu = await testGpu();
    const s = tinySetup(gpu, OVER);
    const reads = gpu.readCount;
    const c = captureCheckpoint(gpu, s.state, 'tiny');
    s.state.iteration = 7; // the live state moves on; the capture keeps what it was
    await c.read;
    expect(gpu.readCount - reads).toBe(1);
    const { files, manifest } = await c.ready;
    expect(manifest.iteration).toBe(0);
    s.state.iteration = 0;
    const store = memoryStore();
    await saveCheckpoint(gpu, s.state, store, 'run', { baseModel: 'tiny' });
    const saved = await readCheckpointFiles(store, 'run');
    for (const f of saved.manifest.files) expect(files[f.path], f.path).toEqual(saved.files[f.path]);
    releaseTrainState(gpu, s.state);
  });

  it('writes on the cadence (every N iterations or T seconds), always at "now", never twice the same snapshot', async () => {
    const gpu = await testGpu();
    const s = tinySetup(gpu, OVER);
    let clock = 0;
    const store = memoryStore();
    const saving: number[] = [];
    const w = new CheckpointWriter({
      store,
      dir: 'run',
      baseModel: 'tiny',
      keep: 0,
      cadence: { every: 3, seconds: 10 },
      now: () => clock,
      onSaving: (i) => saving.push(i),
    });
    await w.snapshot(gpu, s.state, 'now'); // the start: iteration 0
    for (let i = 1; i <= 7; i++) {
      s.state.iteration = i;
      clock += i === 5 ? 11_000 : 1000; // 11 s pass before iteration 5: the time rule fires there
      await w.snapshot(gpu, s.state, 'cadence');
    }
    w.persist(); // the end: iteration 7
    w.persist(); // already asked for: nothing more
    expect(await w.settle()).toBeNull();
    // 3 by count; 5 by time (11 s), which restarts the count; 7 at the end (8 would be the next by count)
    expect(saving).toEqual([0, 3, 5, 7]);
    expect((await listCheckpoints(store, 'run')).map((c) => c.iteration)).toEqual([0, 3, 5, 7]);
    releaseTrainState(gpu, s.state);
  });

  it('in the run loop: writes every checkpointEvery iterations and at the end, each while the next iteration runs; a reload equals the store', async () => {
    const gpu = await testGpu();
    const s = tinySetup(gpu, OVER);
    const inner = memoryStore();
    // a slow store: each write waits, so a checkpoint takes longer to write than the loop takes to go on
    const store = {
      ...inner,
      write: async (p: string, d: Uint8Array | string) => {
        await new Promise((r) => setTimeout(r, 30));
        return inner.write(p, d);
      },
    };
    const log: string[] = [];
    const r = await runLoop(session(gpu, s), s.state, {
      store,
      dir: 'run',
      baseModel: 'tiny',
      until: 5,
      maxTokens: 512,
      checkpointEvery: 2,
      checkpointSeconds: 0,
      onEvent: (e: RunLoopEvent) => {
        if (e.kind === 'saving' || e.kind === 'saved') log.push(`${e.kind} ${e.iteration}`);
      },
      onProgress: (phase, _d, { state }) => {
        if (phase === 'rollout') log.push(`rollout ${state.iteration}`);
      },
    });
    expect(log.filter((x) => x.startsWith('saved'))).toEqual(['saved 0', 'saved 2', 'saved 4', 'saved 5']);
    // the start's write is awaited; iteration 2's and 4's overlap the iteration after them
    expect(log.indexOf('rollout 2')).toBeLessThan(log.indexOf('saved 2'));
    expect(log.indexOf('rollout 4')).toBeLessThan(log.indexOf('saved 4'));
    expect(log.indexOf('saved 0')).toBeLessThan(log.indexOf('rollout 0'));
    const back = await loadCheckpoint(gpu, inner, 'run', s.model);
    expect(back.iteration).toBe(5);
    expect(back.metrics).toEqual(r.state.metrics);
    for (const [a, b] of [[back.policy.layers[0], r.state.policy.layers[0]]] as const) {
      for (const m of Object.keys(a)) expect(await gpu.readF32(a[m as 'q_proj']!.A)).toEqual(await gpu.readF32(b[m as 'q_proj']!.A));
    }
    releaseTrainState(gpu, back);
    releaseTrainState(gpu, r.state);
  });
});
