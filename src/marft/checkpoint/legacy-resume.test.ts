// Checkpoints made before the engine refactor still resume exactly. fixtures/resume-v1/ holds, for a
// token-level and an action-level tiny run, the checkpoint zip after one iteration and what the next
// iteration gave with the code of that time (commit 92bdb94, on SwiftShader): its metrics and the SHA-256
// of every adapter, critic and optimiser file after it. On another device the float results differ (and so
// do the sampled tokens), so there the test checks that the old checkpoint loads and trains on with finite
// metrics.
//
// Per-agent optimiser state changed what the next iteration legitimately gives. Those runs have two agents
// and maxGradNorm 0.5, and a clip is active (token level: the global norm is above 0.5, each agent's below,
// so the old code shrank both agents' steps and the new one shrinks neither; action level: per agent too):
// clipping each agent by its own gradient norm instead of one global norm gives other adapter updates, and optimizer.safetensors now holds policy.stats as (S, 8),
// one row per agent. What stays exact, and is checked: the old checkpoint loads exactly (saved again at
// once, its adapters and critic are the same bytes, every Adam moment the same, and each agent's stats row
// is the old row, step count included); the next iteration's metrics are the recorded ones (they are
// measured before each step); the critic (one clip, as before) ends with the recorded bytes. The adapters,
// critic and optimiser file after it were recorded with per-agent state on SwiftShader (<level>-next.zip,
// whose bytes have the hashes perSlotSha; made with commit 559dad8), and the test shows the reason they
// changed: the clip scale an agent got differs from the one a global clip would have given.
//
// Kernels sized to the shape (rmsnorm's threads per row) sum in another order, so the floats
// now agree with the recording to rounding, not bit for bit: metrics that count (rewards, tokens) are
// compared exactly, losses to 1e-5 relative, and every tensor of the files to 1e-5 + 1e-4 relative.

import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { testGpu } from '../../../kernels/testing.ts';
import { OPTIMIZER_STATS_LAYOUT as L } from '../../model/optimizer.ts';
import { parseSafetensors } from '../../model/safetensors.ts';
import { unzipSync } from 'fflate';
import { expectClose } from '../../../kernels/testing.ts';
import { memoryStore } from '../../platform/storage/store.ts';
import { releaseTrainState } from '../state.ts';
import { tinySetup } from '../testing.ts';
import { Trainer } from '../trainer.ts';
import { OPTIMIZER_FILE, checkpointZipStore, loadCheckpoint, readCheckpointFiles, saveCheckpoint } from './checkpoint.ts';

const DIR = new URL('../../../fixtures/resume-v1/', import.meta.url).pathname;
interface Expected {
  over: Record<string, unknown>;
  next: unknown;
  sha: Record<string, string>;
  perSlotSha: Record<string, string>;
}
const expected = JSON.parse(readFileSync(`${DIR}expected.json`, 'utf8')) as Record<string, Expected>;
const stable = (m: object): unknown => JSON.parse(JSON.stringify({ ...m, tokensPerSecond: 0, seconds: 0 }));
const hex = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
const LOSSES = ['policyLoss', 'valueLoss', 'entropy', 'approxKl', 'klToRef', 'clipFraction'] as const;

/** Every tensor of the recorded files against the ones just written, to float rounding. */
function expectFilesClose(got: Record<string, Uint8Array>, want: Record<string, Uint8Array>): void {
  for (const [f, bytes] of Object.entries(want)) {
    const [a, b] = [parseSafetensors(got[f], f).tensors, parseSafetensors(bytes, f).tensors];
    expect([...a.keys()].sort(), f).toEqual([...b.keys()].sort());
    for (const [k, t] of b) {
      const asF32 = (d: Uint8Array) => new Float32Array(d.slice().buffer);
      expectClose(`${f} ${k}`, asF32(a.get(k)!.data), Float64Array.from(asF32(t.data)), { atol: 1e-5, rtol: 1e-4 });
    }
  }
}

describe('checkpoints from before the refactor', () => {
  for (const name of ['token', 'action']) {
    it(`${name} level: loads exactly and trains on as recorded (per-agent clipping)`, async () => {
      const gpu = await testGpu();
      const want = expected[name];
      const fresh = tinySetup(gpu, want.over);
      releaseTrainState(gpu, fresh.state);
      const zip = checkpointZipStore(readFileSync(`${DIR}${name}.zip`));
      const old = (await readCheckpointFiles(zip, '')).files;
      const state = await loadCheckpoint(gpu, zip, '', fresh.model);
      expect(state.iteration).toBe(1);

      // loaded exactly: saved again at once, the same adapters, critic and moments; each agent the old stats row
      const again = memoryStore();
      await saveCheckpoint(gpu, state, again, 'run', { baseModel: 'tiny' });
      const now = (await readCheckpointFiles(again, 'run')).files;
      for (const f of Object.keys(old).filter((x) => x.endsWith('.safetensors') && x !== OPTIMIZER_FILE))
        expect(hex(now[f]), f).toBe(hex(old[f]));
      const [o0, o1] = [old, now].map((files) => parseSafetensors(files[OPTIMIZER_FILE], OPTIMIZER_FILE).tensors);
      expect([...o1.keys()].sort()).toEqual([...o0.keys()].sort());
      for (const [k, t] of o0) if (k !== 'policy.stats') expect(hex(o1.get(k)!.data), k).toBe(hex(t.data));
      expect([o0.get('policy.stats')!.shape, o1.get('policy.stats')!.shape]).toEqual([[8], [2, 8]]);
      const row = Array.from(new Float32Array(o0.get('policy.stats')!.data.slice().buffer));
      expect(row[L.step]).toBeGreaterThan(0);
      expect(Array.from(new Float32Array(o1.get('policy.stats')!.data.slice().buffer))).toEqual([...row, ...row]);

      const trainer = new Trainer({ gpu, envs: fresh.envs, decoder: fresh.decoder, tokenizer: fresh.tokenizer, state, maxTokens: 512 });
      const next = (await trainer.iteration()).metrics;
      expect(next.iteration).toBe(1);
      const out = memoryStore();
      await saveCheckpoint(gpu, state, out, 'run', { baseModel: 'tiny' });
      const { files } = await readCheckpointFiles(out, 'run');
      const sha = Object.fromEntries(
        Object.entries(files)
          .filter(([f]) => f.endsWith('.safetensors'))
          .map(([f, b]) => [f, hex(b)]),
      );
      expect(Object.keys(sha).sort()).toEqual(Object.keys(want.sha).sort());
      // why the adapter bytes changed: a clip is active (globally, per agent or both), and the scale an
      // agent got differs from the one a global clip over both agents' gradients would have given
      const st = await gpu.readF32(state.policyOptim.stats);
      const norms = [st[L.norm], st[L.size + L.norm]];
      const scales = [st[L.clipScale], st[L.size + L.clipScale]];
      const globalScale = Math.min(1, 0.5 / (Math.hypot(...norms) + 1e-6));
      expect(Math.min(globalScale, ...scales)).toBeLessThan(1);
      expect(scales.some((c) => Math.abs(c - globalScale) > 1e-3 * globalScale)).toBe(true);
      expect([st[L.step], st[L.size + L.step]]).toEqual([row[L.step] + 1, row[L.step] + 1]); // one step each (1 epoch, 1 minibatch)
      if (/swiftshader/i.test(gpu.adapter.description + gpu.adapter.architecture + gpu.adapter.vendor)) {
        const [got, rec] = [stable(next) as Record<string, number>, want.next as Record<string, number>];
        for (const k of LOSSES) expect(Math.abs(got[k] - rec[k]), k).toBeLessThanOrEqual(1e-5 * Math.abs(rec[k]) + 1e-9);
        expect({ ...got, ...Object.fromEntries(LOSSES.map((k) => [k, 0])) }).toEqual({
          ...rec,
          ...Object.fromEntries(LOSSES.map((k) => [k, 0])),
        });
        const recorded = unzipSync(new Uint8Array(readFileSync(`${DIR}${name}-next.zip`)));
        expect(Object.fromEntries(Object.entries(recorded).map(([f, b]) => [f, hex(b)]))).toEqual(want.perSlotSha);
        expectFilesClose(files, recorded);
      } else {
        for (const k of ['policyLoss', 'valueLoss', 'entropy'] as const) expect(Number.isFinite(next[k]), k).toBe(true);
      }
      releaseTrainState(gpu, state);
    });
  }
});
