// Checkpoints made before the engine refactor still resume exactly. fixtures/resume-v1/ holds, for a
// token-level and an action-level tiny run, the checkpoint zip after one iteration and what the next
// iteration gave with the code of that time (commit 92bdb94, on SwiftShader): its metrics and the SHA-256
// of every adapter, critic and optimiser file after it. On another device the float results differ (and so
// do the sampled tokens), so there the test checks that the old checkpoint loads and trains on with finite
// metrics.
//
// Per-agent optimiser state changed what the next iteration legitimately gives: those runs have two agents
// and maxGradNorm 0.5, and the policy's clip is active, so clipping each agent by its own gradient norm
// instead of one global norm gives other adapter updates (and optimizer.safetensors now holds policy.stats
// as (S, 8), one row per agent). So each run is checked twice:
//   - with one global optimiser state (the old checkpoint's (8) stats row, as the code of that time had
//     it): the next iteration gives the recorded metrics and every recorded file byte for byte, which
//     shows that the old checkpoint is loaded exactly and that nothing else changed;
//   - as it resumes now (every agent's slot starts from that row, then clips by its own norm): the same
//     metrics (they are measured before each step), a clip scale of some agent that differs from the global
//     one (the reason the bytes change), and the file hashes recorded with per-agent state (perSlotSha,
//     recorded on SwiftShader when per-agent state came in).

import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { testGpu } from '../../../kernels/testing.ts';
import type { Gpu } from '../../gpu/gpu.ts';
import { OPTIMIZER_STATS_LAYOUT as L } from '../../model/optimizer.ts';
import { memoryStore } from '../../platform/storage/store.ts';
import { type TrainState, releaseTrainState } from '../state.ts';
import { tinySetup } from '../testing.ts';
import { Trainer } from '../trainer.ts';
import { checkpointZipStore, loadCheckpoint, readCheckpointFiles, saveCheckpoint } from './checkpoint.ts';

const DIR = new URL('../../../fixtures/resume-v1/', import.meta.url).pathname;
interface Expected { over: Record<string, unknown>; next: unknown; sha: Record<string, string>; perSlotSha: Record<string, string> }
const expected = JSON.parse(readFileSync(`${DIR}expected.json`, 'utf8')) as Record<string, Expected>;
const stable = (m: object): unknown => JSON.parse(JSON.stringify({ ...m, tokensPerSecond: 0, seconds: 0 }));

/** Loads the old checkpoint, trains one iteration, saves; returns the metrics and the file hashes. */
async function resume(gpu: Gpu, name: string, want: Expected, prepare: (s: TrainState) => () => void) {
  const fresh = tinySetup(gpu, want.over);
  releaseTrainState(gpu, fresh.state);
  const state = await loadCheckpoint(gpu, checkpointZipStore(readFileSync(`${DIR}${name}.zip`)), '', fresh.model);
  expect(state.iteration).toBe(1);
  const restore = prepare(state);
  const trainer = new Trainer({ gpu, decoder: fresh.decoder, tokenizer: fresh.tokenizer, state, maxTokens: 512 });
  const next = (await trainer.iteration()).metrics;
  expect(next.iteration).toBe(1);
  const out = memoryStore();
  await saveCheckpoint(gpu, state, out, 'run', { baseModel: 'tiny' });
  const { files } = await readCheckpointFiles(out, 'run');
  const sha = Object.fromEntries(Object.entries(files).filter(([f]) => f.endsWith('.safetensors'))
    .map(([f, b]) => [f, createHash('sha256').update(b).digest('hex')]));
  const stats = await gpu.readF32(state.policyOptim.stats);
  restore();
  releaseTrainState(gpu, state);
  return { next, sha, stats };
}

describe('checkpoints from before the refactor', () => {
  for (const name of ['token', 'action']) {
    it(`${name} level: resumes and trains on exactly`, async () => {
      const gpu = await testGpu();
      const want = expected[name];
      const swiftshader = /swiftshader/i.test(gpu.adapter.description + gpu.adapter.architecture + gpu.adapter.vendor);
      // 1. one global state, as recorded: the policy optimiser over the same moments with the old (8) row
      const global = await resume(gpu, name, want, (s) => {
        const slotted = s.policyOptim;
        const row = gpu.tensor([L.size], 'f32', 'legacy.stats');
        gpu.copy(slotted.stats, row, L.size * 4, 0, 0); // every slot loaded the same row
        s.policyOptim = { ...slotted, stats: row, slots: null };
        return () => { gpu.release(row); s.policyOptim = slotted; };
      });
      // 2. as it resumes now, per agent
      const perSlot = await resume(gpu, name, want, () => () => {});
      for (const r of [global, perSlot]) expect(Object.keys(r.sha).sort()).toEqual(Object.keys(want.sha).sort());
      // the per-agent clip is active and differs from the global clip (the norm over both agents)
      const norms = [perSlot.stats[L.norm], perSlot.stats[L.size + L.norm]];
      const scales = [perSlot.stats[L.clipScale], perSlot.stats[L.size + L.clipScale]];
      expect(Math.min(...scales)).toBeLessThan(1);
      const globalScale = Math.min(1, 0.5 / (Math.hypot(...norms) + 1e-6));
      expect(scales.some((c) => Math.abs(c - globalScale) > 1e-3 * globalScale)).toBe(true);
      if (swiftshader) {
        expect(stable(global.next)).toEqual(want.next);
        expect(global.sha).toEqual(want.sha);
        expect(stable(perSlot.next)).toEqual(want.next);
        expect(perSlot.sha).toEqual(want.perSlotSha);
        expect(perSlot.sha['critic/value_head.safetensors']).toBe(want.sha['critic/value_head.safetensors']); // the critic keeps one clip
      } else {
        for (const r of [global, perSlot]) for (const k of ['policyLoss', 'valueLoss', 'entropy'] as const) expect(Number.isFinite(r.next[k]), k).toBe(true);
      }
    });
  }
});
