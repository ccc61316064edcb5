// Checkpoints made before the engine refactor still resume exactly. fixtures/resume-v1/ holds, for a
// token-level and an action-level tiny run, the checkpoint zip after one iteration and what the next
// iteration gave with the code of that time (commit 92bdb94, on SwiftShader): its metrics and the SHA-256
// of every adapter, critic and optimiser file after it. The same next iteration must give the same
// numbers and the same bytes here. On another device the float results differ (and so do the sampled
// tokens), so there the test checks that the old checkpoint loads and trains on with finite metrics.

import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { testGpu } from '../../../kernels/testing.ts';
import { memoryStore } from '../../platform/storage/store.ts';
import { releaseTrainState } from '../state.ts';
import { tinySetup } from '../testing.ts';
import { Trainer } from '../trainer.ts';
import { checkpointZipStore, loadCheckpoint, readCheckpointFiles, saveCheckpoint } from './checkpoint.ts';

const DIR = new URL('../../../fixtures/resume-v1/', import.meta.url).pathname;
const expected = JSON.parse(readFileSync(`${DIR}expected.json`, 'utf8')) as Record<string, { over: Record<string, unknown>; next: unknown; sha: Record<string, string> }>;
const stable = (m: object): unknown => JSON.parse(JSON.stringify({ ...m, tokensPerSecond: 0, seconds: 0 }));

describe('checkpoints from before the refactor', () => {
  for (const name of ['token', 'action']) {
    it(`${name} level: resumes and trains on exactly`, async () => {
      const gpu = await testGpu();
      const want = expected[name];
      const fresh = tinySetup(gpu, want.over);
      releaseTrainState(gpu, fresh.state);
      const state = await loadCheckpoint(gpu, checkpointZipStore(readFileSync(`${DIR}${name}.zip`)), '', fresh.model);
      expect(state.iteration).toBe(1);
      const trainer = new Trainer({ gpu, decoder: fresh.decoder, tokenizer: fresh.tokenizer, state, maxTokens: 512 });
      const next = (await trainer.iteration()).metrics;
      expect(next.iteration).toBe(1);
      const out = memoryStore();
      await saveCheckpoint(gpu, state, out, 'run', { baseModel: 'tiny' });
      const { files } = await readCheckpointFiles(out, 'run');
      const sha = Object.fromEntries(Object.entries(files).filter(([f]) => f.endsWith('.safetensors'))
        .map(([f, b]) => [f, createHash('sha256').update(b).digest('hex')]));
      expect(Object.keys(sha).sort()).toEqual(Object.keys(want.sha).sort());
      if (/swiftshader/i.test(gpu.adapter.description + gpu.adapter.architecture + gpu.adapter.vendor)) {
        expect(stable(next)).toEqual(want.next);
        expect(sha).toEqual(want.sha);
      } else {
        for (const k of ['policyLoss', 'valueLoss', 'entropy'] as const) expect(Number.isFinite(next[k]), k).toBe(true);
      }
      releaseTrainState(gpu, state);
    });
  }
});
