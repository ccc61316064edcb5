// The device-loss table: a Run over a Session whose platform gives private Dawn devices
// (the tiny model, SwiftShader), the device destroyed when the run's progress reaches each phase, in a
// normal run, in the first save of a new run, and in a single Step right after resuming an older checkpoint. Every loss recovers from the
// last good checkpoint and the iteration's metrics equal an uninterrupted run's (same history, same RNG);
// every checkpoint left verifies. The exports (PEFT adapters, an agent's logits for the ONNX check) fail
// with a clear DEVICE_LOST while the run stays as it was, and a retry gives the same files / logits.
// Tiny and slow on SwiftShader: one iteration per run, all phases' losses in the same run (each a recovery
// compiles its pipelines anew on the new device, minutes on a loaded machine: hence the long timeouts).
const SLOW = 1_500_000;

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ReliabilityRow, recordReliability } from '../../scripts/reliability.ts';
import type { Gpu } from '../gpu/gpu.ts';
import { memoryStore } from '../platform/storage/store.ts';
import { tinyRunConfig } from '../config/testing.ts';
import type { IterationMetrics } from '../config/metrics.ts';
import { listCheckpoints, readCheckpointFiles } from './checkpoint/checkpoint.ts';
import { sessionAgentLogits } from './export/session-logits.ts';
import { Run } from './run.ts';
import { type Notice, type ProgressPhase } from './run-events.ts';
import { lossTestSession } from './testing.ts';

const TEST = 'src/marft/interruption-table.test.ts';
const rows: ReliabilityRow[] = [];
afterAll(() => recordReliability('interruption-table', rows));

/** The metrics that depend on the run's numbers (not on wall time). */
const numbers = (m: IterationMetrics) => ({ ...m, seconds: null, tokensPerSecond: null });
type Shot = { phase: ProgressPhase; iteration: number };

const devices: Gpu[] = [];
const session = lossTestSession(devices);
const store = memoryStore();
const notices: Notice[] = [];
const metrics: IterationMetrics[] = [];
/** The losses still to inject, in order: the device is destroyed when the progress reaches the next one. */
let plan: Shot[] = [];
const hit: Shot[] = [];
let killed: Gpu | null = null;
const run = new Run(
  session,
  store,
  {
    onNotice: (n) => notices.push(n),
    onIteration: (e) => metrics.push(e.metrics),
    onProgress: (e) => {
      const next = plan[0];
      // the device already destroyed in this attempt: the advantages are computed on the CPU, so the update's
      // progress comes before any GPU call notices the loss
      if (!next || e.phase !== next.phase || e.iteration !== next.iteration || session.currentDevice === killed) return;
      plan.shift();
      hit.push(next);
      killed = session.currentDevice!;
      killed.device.destroy();
    },
  },
  { maxTokens: 512 },
);
// room for one loss per phase in a row (runLoop.maxRecoveries counts losses without a good iteration between)
// a checkpoint after every iteration, so the checkpoint phase's loss comes while the state is read back for it
const config = tinyRunConfig({ iterations: 1, rollout: { episodes: 1, horizon: 1 }, runLoop: { maxRecoveries: 8, checkpointEvery: 1 } });
const PHASES: Shot[] = [
  { phase: 'rollout', iteration: 0 },
  { phase: 'score', iteration: 0 },
  { phase: 'advantages', iteration: 0 },
  { phase: 'update', iteration: 0 },
  { phase: 'checkpoint', iteration: 1 },
];
let uninterrupted: IterationMetrics;

/** Destroys the session's device at its next read-back: in the middle of an export. */
function loseAtNextRead(): void {
  const g = session.currentDevice!;
  const read = g.read.bind(g);
  g.read = (t) => {
    g.read = read;
    g.device.destroy();
    return read(t);
  };
}

/** Every checkpoint of the run folder verifies (sizes + SHA-256); the latest is `iteration`. */
async function verifyAll(dir: string, iteration: number): Promise<number> {
  const all = await listCheckpoints(store, dir);
  for (const c of all) expect((await readCheckpointFiles(store, `${dir}/${c.name}`)).manifest.iteration).toBe(c.iteration);
  expect(all.find((c) => c.latest)!.iteration).toBe(iteration);
  return all.length;
}

/** Arms `shots`, runs `go` to its end, and checks every loss was injected and recovered once. */
async function inject(shots: Shot[], go: () => Promise<unknown>): Promise<void> {
  plan = [...shots];
  hit.length = 0;
  notices.length = 0;
  metrics.length = 0;
  await go();
  expect(plan).toEqual([]);
  expect(hit).toEqual(shots);
  expect(notices.map((n) => n.code)).toEqual(shots.map(() => 'DEVICE_LOST'));
}

describe('device loss at every phase', () => {
  beforeAll(async () => {
    await run.start(config, { id: 'base' });
    expect(await run.wait()).toBe('done');
    [uninterrupted] = metrics.splice(0);
  }, SLOW);

  it(
    'in a normal run: each loss recovers from the last checkpoint; the metrics equal an uninterrupted run',
    async () => {
      const before = devices.length;
      await inject(PHASES, async () => {
        await run.start(config, { id: 'lost' });
        expect(await run.wait()).toBe('done');
      });
      expect(devices.length - before).toBe(PHASES.length);
      expect(metrics.map(numbers)).toEqual([numbers(uninterrupted)]);
      expect(run.iteration).toBe(1);
      const kept = await verifyAll('lost', 1);
      rows.push({
        area: 'interruption',
        fault: `GPU device destroyed when a run's progress reaches each phase of an iteration: ${PHASES.map((s) => s.phase).join(', ')} (private Dawn devices)`,
        cases: PHASES.length,
        outcome: `each loss: DEVICE_LOST notice, a new device, the last checkpoint reloaded and the iteration run again; metrics equal the uninterrupted run's; ${kept} checkpoints left, each verified`,
        verdict: 'pass',
        test: TEST,
      });
    },
    SLOW,
  );

  it(
    'in the first save of a new run: the run starts again on a new device from the same seed',
    async () => {
      const shots: Shot[] = [{ phase: 'checkpoint', iteration: 0 }];
      await inject(shots, async () => {
        await run.start(config, { id: 'first' });
        expect(await run.wait()).toBe('done');
      });
      expect(notices[0].message).toMatch(/while the new run saved its first checkpoint\. It started again on a new device/);
      expect(metrics.map(numbers)).toEqual([numbers(uninterrupted)]);
      const kept = await verifyAll('first', 1);
      rows.push({
        area: 'interruption',
        fault: 'GPU device destroyed while a new run saves its first checkpoint (Run.start)',
        cases: 1,
        outcome: `DEVICE_LOST notice, a new device, the run started again from the same seed; its metrics equal the uninterrupted run's; ${kept} checkpoints left, each verified`,
        verdict: 'pass',
        test: TEST,
      });
    },
    SLOW,
  );

  it(
    'in a single Step right after resuming an older checkpoint: the same, including its starting save',
    async () => {
      const shots: Shot[] = [{ phase: 'checkpoint', iteration: 0 }, ...PHASES];
      await inject(shots, async () => {
        expect(await run.open('base', 'ckpt-000000')).toBe(0);
        run.step();
        expect(await run.wait()).toBe('paused');
      });
      expect(metrics.map(numbers)).toEqual([numbers(uninterrupted)]);
      expect(run.iteration).toBe(1);
      expect(run.config!.iterations).toBe(1);
      const kept = await verifyAll('base', 1);
      rows.push({
        area: 'interruption',
        fault: `GPU device destroyed in a single Step right after resuming an older checkpoint, at its starting save and at each phase: ${PHASES.map((s) => s.phase).join(', ')}`,
        cases: shots.length,
        outcome: `each loss recovered (the starting save from the resumed checkpoint, the rest from the run folder's latest); the Step's metrics equal the uninterrupted run's; ${kept} checkpoints left, each verified`,
        verdict: 'pass',
        test: TEST,
      });
    },
    SLOW,
  );

  it(
    'during an export: a clear DEVICE_LOST error, the run unchanged, and a retry gives the same result',
    async () => {
      expect(await run.open('base')).toBe(1);
      const good = await run.adapterFiles();
      loseAtNextRead();
      const err = await run.adapterFiles().then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toMatchObject({ code: 'DEVICE_LOST' });
      expect((err as Error).message).toMatch(
        /the adapter export stopped: the GPU device was lost .*the run is unchanged \(last checkpoint ckpt-000001(-\d+)?\)/,
      );
      expect(run.iteration).toBe(1);
      expect(run.status).toBe('paused');
      const retry = await run.adapterFiles();
      expect(retry.iteration).toBe(1);
      expect(retry.files).toEqual(good.files);

      const ck = await readCheckpointFiles(store, 'base');
      const role = 'solver';
      const ids = [5, 17, 42, 99, 3];
      const ref = await sessionAgentLogits(session, ck, role, ids);
      loseAtNextRead();
      const lerr = await sessionAgentLogits(session, ck, role, ids).then(
        () => null,
        (e: unknown) => e,
      );
      expect(lerr).toMatchObject({ code: 'DEVICE_LOST' });
      expect((lerr as Error).message).toMatch(/computing solver's logits for the export stopped: the GPU device was lost/);
      const again = await sessionAgentLogits(session, ck, role, ids);
      expect(again.vocabSize).toBe(ref.vocabSize);
      expect([...again.logits]).toEqual([...ref.logits]);
      expect(run.iteration).toBe(1);
      expect((await readCheckpointFiles(store, 'base')).manifest.iteration).toBe(1);
      rows.push({
        area: 'interruption',
        fault:
          "GPU device destroyed at the first read-back of a PEFT adapter export and of an agent's logits export (the ONNX check) of a paused run",
        cases: 2,
        outcome:
          'each export failed with GpuError DEVICE_LOST naming the export and saying nothing was written; the run stayed at iteration 1, its checkpoint verified; a retry on a new device gave the same adapter files and bit-identical logits',
        verdict: 'pass',
        test: TEST,
      });
    },
    SLOW,
  );
});
