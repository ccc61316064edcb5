// Fault injection on the run loop (run-loop.ts) and the checkpoint writer, on the Node GPU:
//   - the GPU device destroyed in the middle of a rollout and of an update (private devices, made with
//     createNodeGpu): the run resumes from its last checkpoint, no iteration lost or counted twice;
//   - NaN injected into a gradient (one step skipped and reported) and into the critic's weights (a NaN
//     loss on every later iteration): 3 bad iterations in a row roll back to the last checkpoint;
//   - a store whose k-th write or rename fails, for every k of a save, and a real child process killed
//     (SIGKILL) while it writes checkpoints with nodeStore: the last good checkpoint always loads;
//   - storage full (ENOSPC / QuotaExceededError): the loop stops with RUN_PAUSED, nothing corrupted.
// Shapes are tiny (SwiftShader); each fault is tallied for RELIABILITY.md.

import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { testGpu } from '../../kernels/testing.ts';
import { type ReliabilityRow, recordReliability } from '../../scripts/reliability.ts';
import type { Gpu } from '../gpu/gpu.ts';
import { createNodeGpu } from '../gpu/node.ts';
import { listCheckpoints, loadCheckpoint, readCheckpointFiles, saveCheckpoint } from './checkpoint/checkpoint.ts';
import { type RunLoopEvent, type RunSession, RunPaused, runLoop } from './run-loop.ts';
import { releaseTrainState } from './state.ts';
import { nodeStore } from '../platform/storage/node.ts';
import { CheckpointError, memoryStore } from '../platform/storage/index.ts';
import { tinySetup, untimed } from './testing.ts';
import { enospc, faultyStore, quota } from '../platform/storage/testing.ts';

const TEST = 'src/marft/run-loop.test.ts';
const rows: ReliabilityRow[] = [];
afterAll(() => recordReliability('run-loop', rows));
const OVER = { rollout: { episodes: 1, horizon: 1 } };
const session = (gpu: Gpu, s: ReturnType<typeof tinySetup>): RunSession => ({
  gpu,
  envs: s.envs,
  decoder: s.decoder,
  tokenizer: s.tokenizer,
  model: s.model,
});

describe('run loop faults', () => {
  it('NaN in a gradient skips the step and reports it; NaN losses 3 times in a row roll back', async () => {
    const gpu = await testGpu();
    const s = tinySetup(gpu, OVER);
    const store = memoryStore();
    const events: RunLoopEvent[] = [];
    const seen: Array<{ iteration: number; skipped: string[]; kept: boolean }> = [];
    const nan = (t: { shape: readonly number[] }) => new Float32Array(t.shape.reduce((a, b) => a * b, 1)).fill(Number.NaN);
    let poisoned = false;
    const r = await runLoop(session(gpu, s), s.state, {
      store,
      dir: 'run',
      baseModel: 'tiny',
      until: 3,
      maxTokens: 512,
      checkpointEvery: 1,
      onEvent: (e) => events.push(e),
      onIteration: (res, kept) => seen.push({ iteration: res.metrics.iteration, skipped: res.metrics.skipped, kept }),
      onProgress: (phase, _d, { state, session: ss }) => {
        if (phase !== 'update' || poisoned) return;
        // iteration 0: a NaN in the policy's gradient (the backward accumulates into it)
        if (state.iteration === 0) ss.gpu.write(state.policyOptim.groups[0].grads, nan(state.policyOptim.groups[0].grads));
        // iteration 1, once: NaN critic weights, so every later value (and so advantage) is NaN until a rollback
        // (the output layer's bias: a NaN in an earlier layer may be squashed by the GPU's max(x, 0))
        const bias = state.criticOptim.groups[state.criticOptim.groups.length - 1].params;
        if (state.iteration === 1) {
          poisoned = true;
          ss.gpu.write(bias, nan(bias));
        }
      },
    });
    expect(
      seen.map((x) => x.iteration),
      JSON.stringify(seen),
    ).toEqual([0, 1, 2, 0, 1, 2]);
    expect(seen[0].skipped.join('\n')).toMatch(/policy step skipped \(non-finite gradient\)/);
    // the finite watch names the critic's output layer, where the NaN bias shows first
    expect(seen[1].skipped.join('\n')).toMatch(
      /critic step skipped \((value loss NaN|non-finite gradient|non-finite values in critic head 0 output value\.0\.1 \(\d+ values?\))\)/,
    );
    expect(seen[2].skipped.join('\n')).toMatch(/NaN|non-finite/);
    for (const x of seen.slice(0, 3)) expect(x.kept).toBe(false); // a skipped iteration is not checkpointed
    expect(r.rollbacks).toBe(1);
    expect(events.filter((e) => e.kind === 'skipped')).toHaveLength(3);
    expect(events.find((e) => e.kind === 'rollback')).toEqual({ kind: 'rollback', from: 3, to: 0 });
    expect(seen.slice(3).map((x) => [x.skipped.length, x.kept])).toEqual([
      [0, true],
      [0, true],
      [0, true],
    ]);
    // the start, the rolled-back state (iteration 0 with its new RNG draw, beside the first), then every iteration
    expect(events.filter((e) => e.kind === 'saved').map((e) => (e as { checkpoint: string }).checkpoint)).toEqual([
      'ckpt-000000',
      'ckpt-000000-1',
      'ckpt-000001',
      'ckpt-000002',
      'ckpt-000003',
    ]);
    expect(r.state.iteration).toBe(3);
    expect(r.state.metrics.map((m) => m.iteration)).toEqual([0, 1, 2]);
    for (const g of r.state.criticOptim.groups) expect((await gpu.readF32(g.params)).every(Number.isFinite)).toBe(true);
    releaseTrainState(gpu, r.state);
    rows.push({
      area: 'run loop',
      fault: 'NaN written into the policy gradient during an update',
      cases: 1,
      outcome: 'step skipped, "policy step skipped (non-finite gradient)" in metrics.skipped, no checkpoint for that iteration',
      verdict: 'pass',
      test: TEST,
    });
    rows.push({
      area: 'run loop',
      fault: 'NaN written into the critic weights (NaN value loss, then NaN advantages on every later iteration)',
      cases: 2,
      outcome:
        'with the gradient NaN: 3 bad iterations in a row, each skipped and reported, then rolled back to ckpt-000000; weights finite again; iterations 0-2 re-run clean, history [0, 1, 2]',
      verdict: 'pass',
      test: TEST,
    });
  });

  it('a store failing at its k-th write or rename, for every k of a save, keeps the last good checkpoint loadable', async () => {
    const gpu = await testGpu();
    const s = tinySetup(gpu, OVER);
    const base = memoryStore();
    await saveCheckpoint(gpu, s.state, base, 'run', { baseModel: 'tiny' });
    const good = base.snapshot();
    // how many writes and renames one save makes
    const probe = faultyStore(memoryStore(good), () => null);
    s.state.iteration = 1;
    await saveCheckpoint(gpu, s.state, probe, 'run', { baseModel: 'tiny' });
    const plan: Array<['write' | 'rename', number]> = [];
    for (let k = 1; k <= probe.writes; k++) plan.push(['write', k]);
    for (let k = 1; k <= probe.renames; k++) plan.push(['rename', k]);
    let failed = 0;
    for (const [op, k] of plan) {
      const inner = memoryStore(good);
      const st = faultyStore(inner, (o, n) => (o === op && n === k ? (k % 2 ? enospc() : quota()) : null));
      await expect(saveCheckpoint(gpu, s.state, st, 'run', { baseModel: 'tiny' })).rejects.toThrow();
      failed++;
      const v = await readCheckpointFiles(inner, 'run'); // every size and checksum verified
      expect(v.manifest.iteration, `${op} ${k}`).toBe(0);
      // the next save (space freed) succeeds and cleans up the leftovers
      await saveCheckpoint(gpu, s.state, inner, 'run', { baseModel: 'tiny' });
      expect((await readCheckpointFiles(inner, 'run')).manifest.iteration).toBe(1);
      expect([...inner.files.keys()].some((p) => p.includes('.tmp-'))).toBe(false);
    }
    const st = await loadCheckpoint(gpu, memoryStore(good), 'run', s.model);
    expect(st.iteration).toBe(0);
    releaseTrainState(gpu, st);
    releaseTrainState(gpu, s.state);
    rows.push({
      area: 'checkpoint save',
      fault: `store throwing ENOSPC / QuotaExceededError at the k-th write or rename of a save, k = 1..${probe.writes} writes and 1..${probe.renames} renames`,
      cases: failed,
      outcome: `${failed} saves failed; after each the previous checkpoint verified (sizes + SHA-256), the next save succeeded and removed the leftovers`,
      verdict: 'pass',
      test: TEST,
    });
  });

  it('writeBehind: the loop returns before its last write, which lands after; a failed one is a settled pause', async () => {
    const gpu = await testGpu();
    const s = tinySetup(gpu, OVER);
    const inner = memoryStore();
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let hold = false;
    // writes wait while `hold` is on: the loop's last write is still running when it returns
    const store = {
      ...inner,
      async write(path: string, data: Uint8Array | string) {
        if (hold) await held;
        return inner.write(path, data);
      },
    };
    const events: string[] = [];
    const r = await runLoop(session(gpu, s), s.state, {
      store,
      dir: 'run',
      baseModel: 'tiny',
      until: 1,
      maxTokens: 512,
      checkpointEvery: 10,
      writeBehind: true,
      onIteration: () => {
        hold = true;
      },
      onEvent: (e) => events.push(`${e.kind} ${'iteration' in e ? e.iteration : ''}`),
    });
    expect(r.state.iteration).toBe(1);
    expect(events).toEqual(['saving 0', 'saved 0', 'saving 1']); // returned with iteration 1's write in flight
    expect((await listCheckpoints(inner, 'run')).find((c) => c.latest)?.iteration).toBe(0);
    release();
    expect(await r.written).toBeNull();
    expect(events.at(-1)).toBe('saved 1');
    expect((await listCheckpoints(inner, 'run')).find((c) => c.latest)?.iteration).toBe(1);

    // the store full at the last write: the loop still returns; `written` settles with the pause
    const full = faultyStore(inner, (op) =>
      op === 'write' ? new CheckpointError('STORAGE', 'run/x', `cannot write (${enospc().message})`) : null,
    );
    const r2 = await runLoop(r.session, r.state, {
      store: full,
      dir: 'run',
      baseModel: 'tiny',
      until: 2,
      maxTokens: 512,
      writeBehind: true,
    });
    const failed = await r2.written;
    expect(failed).toBeInstanceOf(RunPaused);
    expect(failed?.message).toMatch(
      /the checkpoint of iteration 2 could not be written .*ENOSPC.*last good checkpoint is ckpt-000001 \(iteration 1\)/,
    );
    // without writeBehind the same failure is thrown by the loop itself
    const r3 = await runLoop(r2.session, r2.state, { store: full, dir: 'run', baseModel: 'tiny', until: 3, maxTokens: 512 }).catch(
      (e: unknown) => e,
    );
    expect(r3).toBeInstanceOf(RunPaused);
    releaseTrainState(gpu, r2.state);
  });

  it('storage full during a run pauses it with a clear message; the last checkpoint is intact', async () => {
    const gpu = await testGpu();
    const s = tinySetup(gpu, OVER);
    const inner = memoryStore();
    let full = false;
    // like nodeStore, the store reports the OS error as a CheckpointError STORAGE naming the file
    const store = faultyStore(inner, (op) =>
      full && op === 'write' ? new CheckpointError('STORAGE', 'run/x', `cannot write (${enospc().message})`) : null,
    );
    const err = await runLoop(session(gpu, s), s.state, {
      store,
      dir: 'run',
      baseModel: 'tiny',
      until: 3,
      maxTokens: 512,
      checkpointEvery: 1,
      onEvent: (e) => {
        if (e.kind === 'saved' && e.iteration === 1) full = true;
      },
    }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(RunPaused);
    const p = err as RunPaused;
    expect(p.code).toBe('RUN_PAUSED');
    // the write runs beside the next iteration, so the pause comes at the boundary after it failed
    expect(p.message).toMatch(/training paused at iteration [23]: the checkpoint of iteration 2 could not be written .*ENOSPC/);
    expect(p.message).toMatch(/last good checkpoint is ckpt-000001 \(iteration 1\)/);
    expect(p.cause).toBeInstanceOf(CheckpointError);
    expect((p.cause as CheckpointError).code).toBe('STORAGE');
    const st = await loadCheckpoint(gpu, inner, 'run', s.model);
    expect(st.iteration).toBe(1);
    expect(st.metrics.map((m) => m.iteration)).toEqual([0]);
    releaseTrainState(gpu, st);
    releaseTrainState(gpu, p.state);
    rows.push({
      area: 'run loop',
      fault: 'storage full (ENOSPC on every write) after the first iteration',
      cases: 1,
      outcome:
        'loop stopped with MarftError RUN_PAUSED "training paused at iteration 2: its checkpoint could not be written ... ENOSPC ... last good checkpoint is ckpt-000001"; that checkpoint loads',
      verdict: 'pass',
      test: TEST,
    });
  });

  it('a process killed (SIGKILL) while writing checkpoints with nodeStore leaves the last good one loadable', async () => {
    const root = mkdtempSync(join(tmpdir(), 'marft-kill-'));
    const store = nodeStore(root);
    const kills = 4;
    let lastSaved = 0;
    const bundled = spawnSync(process.execPath, ['scripts/bundle.mjs', 'scripts/fixtures/checkpoint-writer.ts', '.build'], {
      encoding: 'utf8',
    });
    expect(bundled.status, bundled.stderr).toBe(0);
    try {
      for (let i = 0; i < kills; i++) {
        const child = spawn(process.execPath, ['.build/checkpoint-writer.mjs', root], { stdio: ['ignore', 'pipe', 'inherit'] });
        let out = '';
        await new Promise<void>((resolve, reject) => {
          child.on('error', reject);
          child.on('exit', (code) => {
            if (!child.killed) reject(new Error(`the writer exited (${code}) before it was killed:\n${out}`));
          });
          child.stdout.on('data', (d: Buffer) => {
            out += d.toString();
            const saved = [...out.matchAll(/saved (\d+)/g)];
            // kill a little after the first save, at a different moment each time (mid-write most likely)
            if (saved.length >= 1 && !child.killed)
              setTimeout(
                () => {
                  child.kill('SIGKILL');
                  resolve();
                },
                5 + 37 * i,
              );
          });
        });
        await new Promise((r) => child.on('exit', r));
        const saved = [...out.matchAll(/saved (\d+)/g)].map((m) => Number(m[1]));
        lastSaved = Math.max(lastSaved, ...saved);
        const v = await readCheckpointFiles(store, 'run');
        expect(v.manifest.iteration).toBeGreaterThanOrEqual(lastSaved);
      }
      const gpu = await testGpu();
      const s = tinySetup(gpu, OVER);
      const st = await loadCheckpoint(gpu, store, 'run', s.model);
      expect(st.iteration).toBeGreaterThanOrEqual(lastSaved);
      releaseTrainState(gpu, st);
      releaseTrainState(gpu, s.state);
      expect((await listCheckpoints(store, 'run')).length).toBeGreaterThan(0);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
    rows.push({
      area: 'checkpoint save',
      fault: 'child process writing checkpoints with nodeStore killed with SIGKILL mid-save',
      cases: kills,
      outcome: `after each kill the latest checkpoint verified (sizes + SHA-256) at or after the last reported save; it loads`,
      verdict: 'pass',
      test: TEST,
    });
  });

  it('halts at an iteration boundary when asked and resumes there; profiles the iterations asked for', async () => {
    const gpu = await testGpu();
    const s = tinySetup(gpu, OVER);
    const store = memoryStore();
    const seen: number[] = [];
    const events: RunLoopEvent[] = [];
    const profiled: Array<{ iteration: number; kernels: number | null }> = [];
    const common = {
      store,
      dir: 'run',
      baseModel: 'tiny',
      until: 3,
      maxTokens: 512,
      onIteration: (res: { metrics: { iteration: number } }) => seen.push(res.metrics.iteration),
      onEvent: (e: RunLoopEvent) => events.push(e),
    };
    // a pause asked for during iteration 0 takes effect after it
    const first = await runLoop(session(gpu, s), s.state, { ...common, halt: () => seen.length >= 1 });
    expect(first.state.iteration).toBe(1);
    expect(seen).toEqual([0]);
    const second = await runLoop(session(gpu, s), first.state, {
      ...common,
      profile: (it) => it === 2,
      onProfile: (iteration, kernels) => profiled.push({ iteration, kernels: kernels && kernels.length }),
    });
    expect(second.state.iteration).toBe(3);
    expect(seen).toEqual([0, 1, 2]);
    // the starting state was saved once (iteration 0), not again on resuming at iteration 1; then the pause
    // and the end: the cadence (every 10 iterations or 60 s) asked for none between
    expect(events.filter((e) => e.kind === 'saved').map((e) => (e as { iteration: number }).iteration)).toEqual([0, 1, 3]);
    expect(profiled).toHaveLength(1);
    expect(profiled[0].iteration).toBe(2);
    if (gpu.hasTimestamps) expect(profiled[0].kernels).toBeGreaterThan(5);
    else expect(profiled[0].kernels).toBeNull();
    releaseTrainState(gpu, second.state);
  });

  it("a loop given its state's snapshot reads one state fewer back, with the same iteration and checkpoints", async () => {
    const gpu = await testGpu();
    // two runs from the same seed, each a first loop of one iteration, then a second loop with and without the snapshot
    const twice = async (handOver: boolean) => {
      const s = tinySetup(gpu, OVER);
      const store = memoryStore();
      const common = { store, dir: 'run', baseModel: 'tiny', maxTokens: 512 };
      const first = await runLoop(session(gpu, s), s.state, { ...common, until: 1 });
      expect(first.snapshot?.iteration).toBe(1); // the snapshot of the state it leaves
      const r0 = gpu.readCount;
      const metrics: unknown[] = [];
      const second = await runLoop(session(gpu, s), first.state, {
        ...common,
        until: 2,
        snapshot: handOver ? first.snapshot : undefined,
        onIteration: (res) => metrics.push(untimed(res.metrics)),
      });
      const reads = gpu.readCount - r0;
      const saved = await readCheckpointFiles(store, 'run');
      releaseTrainState(gpu, second.state);
      return { reads, metrics, saved, snapshot: second.snapshot };
    };
    const without = await twice(false);
    const given = await twice(true);
    expect(given.reads).toBe(without.reads - 1);
    expect(given.metrics).toEqual(without.metrics);
    expect(given.saved.manifest.iteration).toBe(2);
    // the last checkpoint is the same, file for file (the state.json's timestamps aside)
    const files = (f: typeof given.saved) => Object.fromEntries(Object.entries(f.files).filter(([k]) => k !== 'state.json'));
    expect(files(given.saved)).toEqual(files(without.saved));
    // a snapshot of another iteration is not taken for the state
    const s = tinySetup(gpu, OVER);
    const r0 = gpu.readCount;
    const other = await runLoop(session(gpu, s), s.state, {
      store: memoryStore(),
      dir: 'run',
      baseModel: 'tiny',
      until: 0,
      snapshot: given.snapshot,
    });
    expect(gpu.readCount - r0).toBe(1);
    expect(other.snapshot?.iteration).toBe(0);
    releaseTrainState(gpu, other.state);
  });

  it('the GPU device lost mid-rollout and mid-update: the run resumes from its last checkpoint', async () => {
    const devices: Gpu[] = [];
    const open = async (): Promise<RunSession> => {
      const gpu = await createNodeGpu();
      devices.push(gpu);
      const s = tinySetup(gpu, OVER);
      releaseTrainState(gpu, s.state);
      return session(gpu, s);
    };
    const first = await open();
    const s0 = tinySetup(first.gpu, OVER);
    const store = memoryStore();
    const events: RunLoopEvent[] = [];
    const done: number[] = [];
    let rolloutBatches = 0;
    const lost = { rollout: false, update: false };
    const r = await runLoop(first, s0.state, {
      store,
      dir: 'run',
      baseModel: 'tiny',
      until: 3,
      maxTokens: 512,
      reopen: () => open(),
      onEvent: (e) => events.push(e),
      onIteration: (res) => done.push(res.metrics.iteration),
      onProgress: (phase, _d, { state, session: ss }) => {
        if (phase === 'rollout' && state.iteration === 1 && !lost.rollout && ++rolloutBatches === 2) {
          lost.rollout = true;
          ss.gpu.device.destroy();
        }
        if (phase === 'update' && state.iteration === 2 && !lost.update) {
          lost.update = true;
          ss.gpu.device.destroy();
        }
      },
    });
    expect(lost).toEqual({ rollout: true, update: true });
    expect(r.recoveries).toBe(2);
    expect(events.filter((e) => e.kind === 'recovered').map((e) => (e as { iteration: number }).iteration)).toEqual([1, 2]);
    expect(done).toEqual([0, 1, 2]); // each iteration completed exactly once
    expect(r.state.iteration).toBe(3);
    expect(r.state.metrics.map((m) => m.iteration)).toEqual([0, 1, 2]);
    expect(r.session.gpu).toBe(devices[2]);
    expect((await readCheckpointFiles(store, 'run')).manifest.iteration).toBe(3);
    releaseTrainState(r.session.gpu, r.state);
    for (const g of devices) g.device.destroy();
    rows.push({
      area: 'run loop',
      fault: 'GPU device destroyed in the middle of a rollout (2nd generation batch) and at the start of an update (private Dawn devices)',
      cases: 2,
      outcome:
        'each loss surfaced as DEVICE_LOST, the loop reopened the model on a new device and reloaded the last checkpoint; iterations completed [0, 1, 2], history [0, 1, 2], none lost or counted twice',
      verdict: 'pass',
      test: TEST,
    });
  });
});
