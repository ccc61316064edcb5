// The Run's state machine (run.ts) in Node. Most cases fake what the GPU would do: a fake trainer whose
// iterations finish when the test says so, come out non-finite or lose the device, a fake session and an
// in-memory fake of the checkpoint files; the real run loop (run-loop.ts) runs between them, so the
// rollback and recovery policy under test is config.runLoop's. Checked: start -> step -> pause -> train ->
// stop, step while running (pauses after the iteration in flight), pause and stop abandoning the iteration in
// flight ('pausing' / 'stopping' at once), status events in order, busy and no-run refusals, rollback after runLoop.rollbackAfter non-finite
// iterations, device-loss recoveries up to runLoop.maxRecoveries, checkpoints kept per runLoop. Then one
// short real run on the tiny test model: start, open, step, and a model switch that closes the run.

import { afterEach, describe, expect, it, vi } from 'vitest';
import { testGpu } from '../../kernels/testing.ts';
import type { RunConfig } from '../config/run-config.ts';
import { TINY_QWEN2_CONFIG, tinyModelFolder } from '../model/file-fixtures.ts';
import { memoryStore } from '../platform/storage/store.ts';
import { listCheckpoints } from './checkpoint/checkpoint.ts';
import { Run } from './run.ts';
import { type Notice, type RunStatus } from './run-events.ts';
import { Session, memoryFiles } from './session.ts';
import { tinyRunConfig } from '../config/testing.ts';

/** What the fakes do; off, every module is the real one. */
const fake = vi.hoisted(() => ({
  on: false,
  /** Per iteration to run: finish cleanly, with a non-finite step, or lose the device. */
  plan: [] as Array<'ok' | 'nan' | 'lost'>,
  /** When set, an iteration waits for it before finishing. */
  gate: null as Promise<void> | null,
  /** When set, a checkpoint write waits for it before landing. */
  writeGate: null as Promise<void> | null,
  started: 0,
  /** States read back for a snapshot (captureCheckpoint calls). */
  captures: 0,
  saved: [] as Array<{ dir: string; iteration: number; keep: number | undefined }>,
  checkpoints: new Map<string, Array<{ name: string; iteration: number; metrics: unknown[] }>>(),
  configs: new Map<string, unknown>(),
}));

type FakeState = { config: RunConfig; iteration: number; metrics: Array<{ iteration: number }>; rng: { next(): void } };
const fakeState = (config: RunConfig, iteration = 0, metrics: Array<{ iteration: number }> = []): FakeState => ({
  config,
  iteration,
  metrics: [...metrics],
  rng: { next() {} },
});
const runDir = (dir: string): string => dir.split('/')[0];
const FAKE_SNAPSHOT = 'fake-state.json';

vi.mock('./trainer.ts', async (importOriginal) => {
  const real = await importOriginal<typeof import('./trainer.ts')>();
  const { GpuError: Lost } = await import('../gpu/errors.ts');
  class FakeTrainer {
    constructor(readonly d: { gpu: { lostReason: string | null }; state: FakeState; interrupt?: () => void }) {}
    async iteration() {
      fake.started++;
      if (fake.gate) await fake.gate;
      this.d.interrupt?.(); // as the real trainer asks between decode steps, scoring chunks and minibatches
      const s = this.d.state;
      const kind = fake.plan.shift() ?? 'ok';
      if (kind === 'lost') {
        this.d.gpu.lostReason = 'destroyed by the test';
        throw new Lost('DEVICE_LOST', 'the device was lost');
      }
      const metrics = {
        iteration: s.iteration,
        accuracy: 0,
        teamReward: 0,
        agents: {},
        policyLoss: 0,
        valueLoss: 0,
        entropy: 0,
        approxKl: 0,
        klToRef: 0,
        clipFraction: 0,
        tokensPerSecond: 0,
        seconds: { rollout: 0, score: 0, advantages: 0, update: 0, total: 0 },
        trained: [],
        skipped: kind === 'nan' ? ['policy step skipped (non-finite gradient)'] : [],
      };
      s.iteration++;
      s.metrics.push(metrics);
      return { metrics, episodes: [], scores: new Map(), targets: new Map() };
    }
  }
  return {
    ...real,
    Trainer: function Trainer(d: never) {
      return fake.on ? new FakeTrainer(d) : new real.Trainer(d);
    },
  };
});

vi.mock('./state.ts', async (importOriginal) => {
  const real = await importOriginal<typeof import('./state.ts')>();
  return {
    ...real,
    createTrainState: (...a: Parameters<typeof real.createTrainState>) => (fake.on ? fakeState(a[2]) : real.createTrainState(...a)),
    releaseTrainState: (...a: Parameters<typeof real.releaseTrainState>) => (fake.on ? undefined : real.releaseTrainState(...a)),
  };
});

vi.mock('./checkpoint/checkpoint.ts', async (importOriginal) => {
  const real = await importOriginal<typeof import('./checkpoint/checkpoint.ts')>();
  const latest = (dir: string) => {
    const all = fake.checkpoints.get(runDir(dir)) ?? [];
    const named = dir.split('/')[1];
    return named ? all.find((c) => c.name === named) : all[all.length - 1];
  };
  // the run loop's writer snapshots with captureCheckpoint and writes with writeCheckpoint; a fake
  // snapshot is the fake state as JSON, which loadCheckpoint (from the snapshot's memory store) gives back
  const capture = (state: FakeState) => {
    fake.captures++;
    const snap = { config: state.config, iteration: state.iteration, metrics: [...state.metrics] };
    const files = { [FAKE_SNAPSHOT]: new TextEncoder().encode(JSON.stringify(snap)) };
    return { iteration: state.iteration, ready: Promise.resolve({ iteration: state.iteration, manifest: {}, files }) };
  };
  const write = (...a: Parameters<typeof real.writeCheckpoint>) => {
    const [ckpt, , dir, keep] = a;
    const snap = JSON.parse(new TextDecoder().decode(ckpt.files[FAKE_SNAPSHOT])) as FakeState;
    const list = fake.checkpoints.get(dir) ?? [];
    const name = real.checkpointName(snap.iteration);
    list.push({ name, iteration: snap.iteration, metrics: snap.metrics });
    if (keep) list.splice(0, Math.max(0, list.length - keep));
    fake.checkpoints.set(dir, list);
    fake.configs.set(dir, snap.config);
    fake.saved.push({ dir, iteration: snap.iteration, keep });
    return { name, path: `${dir}/${name}`, manifest: { iteration: snap.iteration }, removed: [], warnings: [] } as never;
  };
  return {
    ...real,
    captureCheckpoint: (...a: Parameters<typeof real.captureCheckpoint>) =>
      fake.on ? (capture(a[1]) as never) : real.captureCheckpoint(...a),
    writeCheckpoint: async (...a: Parameters<typeof real.writeCheckpoint>) => {
      if (!fake.on) return real.writeCheckpoint(...a);
      if (fake.writeGate) await fake.writeGate;
      return write(...a);
    },
    listCheckpoints: async (...a: Parameters<typeof real.listCheckpoints>) => {
      if (!fake.on) return real.listCheckpoints(...a);
      const list = fake.checkpoints.get(a[1]) ?? [];
      return list.map((c, i) => ({ name: c.name, path: `${a[1]}/${c.name}`, iteration: c.iteration, latest: i === list.length - 1 }));
    },
    readCheckpointFiles: async (...a: Parameters<typeof real.readCheckpointFiles>) => {
      if (!fake.on) return real.readCheckpointFiles(...a);
      const c = latest(a[1])!;
      return {
        path: `${runDir(a[1])}/${c.name}`,
        manifest: { iteration: c.iteration },
        files: { 'config.json': new TextEncoder().encode(JSON.stringify(fake.configs.get(runDir(a[1])))) },
      } as never;
    },
    loadCheckpoint: async (...a: Parameters<typeof real.loadCheckpoint>) => {
      if (!fake.on) return real.loadCheckpoint(...a);
      if (a[2] === '') {
        // a snapshot in memory
        const snap = JSON.parse(new TextDecoder().decode(await a[1].read(FAKE_SNAPSHOT))) as FakeState;
        return fakeState(snap.config, snap.iteration, snap.metrics) as never;
      }
      const c = latest(a[2])!;
      return fakeState(fake.configs.get(runDir(a[2])) as RunConfig, c.iteration, c.metrics as FakeState['metrics']) as never;
    },
  };
});

/** A session whose models are plain objects; reopen (after a loss) gives a new one. */
function fakeSession() {
  const model = () => ({
    path: '',
    source: { name: 'fake', baseModel: 'fake', files: null },
    gpu: {
      lostReason: null as string | null,
      hasTimestamps: false,
      adapter: {},
      pipelines: { onMade: null },
      startProfile() {},
      async stopProfile() {
        return [];
      },
    },
  });
  const s = { current: model(), loads: 0, reopens: 0, user: null as string | null };
  return Object.assign(s, {
    claim: Session.prototype.claim, // the real lock
    exclusive: Session.prototype.exclusive,
    load: async () => {
      s.loads++;
      return s.current;
    },
    reopen: async () => {
      s.reopens++;
      s.current = model();
      return s.current;
    },
    onUnload: () => () => {},
    keepKernels: async () => {},
  });
}

/** A Run on a fake session, recording its status events and notices. */
function fakeRun(opts = {}) {
  const session = fakeSession();
  const statuses: RunStatus[] = [];
  const notices: Notice[] = [];
  const iterations: number[] = [];
  const iterationNotices: Array<string | undefined> = [];
  const run = new Run(
    session as unknown as Session,
    memoryStore(),
    {
      onStatus: (e) => statuses.push(e.status),
      onNotice: (n) => notices.push(n),
      onIteration: (e) => {
        iterations.push(e.metrics.iteration);
        iterationNotices.push(e.notice);
      },
    },
    opts,
  );
  return { run, session, statuses, notices, iterations, iterationNotices };
}

/** A gate the fake trainer waits on, opened by the test. */
function gate(): () => void {
  let open!: () => void;
  fake.gate = new Promise((r) => {
    open = r;
  });
  return () => {
    fake.gate = null;
    open();
  };
}

const until = async (f: () => boolean): Promise<void> => {
  for (let i = 0; i < 200 && !f(); i++) await new Promise((r) => setTimeout(r, 1));
  expect(f()).toBe(true);
};

const config = (over: Record<string, unknown> = {}) => tinyRunConfig({ iterations: 4, ...over });

describe('Run state machine (fakes)', () => {
  afterEach(() => {
    Object.assign(fake, { on: false, plan: [], gate: null, writeGate: null, started: 0, captures: 0, saved: [] });
    fake.checkpoints.clear();
    fake.configs.clear();
  });

  it('start (paused) -> step -> train -> done, with status events in order', async () => {
    fake.on = true;
    const { run, statuses, iterations } = fakeRun();
    expect(run.status).toBe('idle');
    await run.start(config(), { id: 'r', paused: true });
    expect(await run.wait()).toBe('paused');
    expect(run.iteration).toBe(1);
    expect(statuses).toEqual(['loading', 'running', 'paused']);
    run.step();
    expect(await run.wait()).toBe('paused');
    expect(run.iteration).toBe(2);
    run.train();
    expect(await run.wait()).toBe('done');
    expect(iterations).toEqual([0, 1, 2, 3]);
    expect(statuses).toEqual(['loading', 'running', 'paused', 'running', 'paused', 'running', 'done']);
    // a checkpoint is written at start, at each pause and at the end, each with the config's keep; the
    // cadence (every 10 iterations or 60 s) asks for none between
    expect(fake.saved.map((s) => s.iteration)).toEqual([0, 1, 2, 4]);
    expect(new Set(fake.saved.map((s) => s.keep))).toEqual(new Set([20]));
    // past the target, train() goes on for config.iterations more
    run.train();
    expect(await run.wait()).toBe('done');
    expect(run.iteration).toBe(8);
  });

  it('reads the state back once an iteration: a loop starts from the snapshot its run already holds', async () => {
    fake.on = true;
    const { run } = fakeRun();
    await run.start(config({ iterations: 6 }), { id: 'r', paused: true });
    await run.wait();
    expect(fake.captures).toBe(2); // the first save's, then iteration 0's (the loop started from the first)
    run.step();
    await run.wait();
    expect(fake.captures).toBe(3);
    run.train(3);
    await run.wait();
    expect(fake.captures).toBe(4);
    // a non-finite iteration moves the state past the last snapshot: the next loop reads it back first
    fake.plan = ['nan'];
    run.step();
    await run.wait();
    expect(fake.captures).toBe(4);
    run.step();
    await run.wait();
    expect(fake.captures).toBe(6);
    expect(run.iteration).toBe(5);
    expect(fake.saved.map((s) => s.iteration)).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('shows paused before its last checkpoint lands; the next step, wait() and settled() wait for the write', async () => {
    fake.on = true;
    const { run, statuses } = fakeRun();
    const checkpoints: string[] = [];
    (run as unknown as { events: { onCheckpoint: (e: { saving: boolean; iteration: number }) => void } }).events.onCheckpoint = (e) =>
      checkpoints.push(`${e.saving ? 'saving' : 'saved'} ${e.iteration}`);
    await run.start(config(), { id: 'r', paused: true });
    await run.wait();
    let release!: () => void;
    fake.writeGate = new Promise((r) => (release = r));
    run.step();
    await until(() => statuses.at(-1) === 'paused' && statuses.length === 5);
    expect(statuses).toEqual(['loading', 'running', 'paused', 'running', 'paused']);
    expect(checkpoints.at(-1)).toBe('saving 2'); // paused, with iteration 2's write in flight
    expect(fake.saved.map((s) => s.iteration)).toEqual([0, 1]);
    let waited = false;
    const w = run.wait().then(() => (waited = true));
    await new Promise((r) => setTimeout(r, 5));
    expect(waited).toBe(false);
    run.step(); // the next loop starts once the write has landed
    await new Promise((r) => setTimeout(r, 5));
    expect(fake.started).toBe(2);
    release();
    fake.writeGate = null;
    await w;
    await run.settled();
    expect(checkpoints).toContain('saved 2');
    expect(await run.wait()).toBe('paused');
    expect(fake.saved.map((s) => s.iteration)).toEqual([0, 1, 2, 3]);
  });

  it("pause and stop say 'pausing' / 'stopping' at once and abandon the iteration in flight; step while running pauses after it", async () => {
    fake.on = true;
    const { run, statuses } = fakeRun();
    let open = gate();
    await run.start(config(), { id: 'r' });
    await until(() => fake.started === 1);
    run.pause();
    expect(run.status).toBe('pausing');
    open();
    expect(await run.wait()).toBe('paused');
    expect(run.iteration).toBe(0); // the iteration in flight was abandoned, no other started
    expect(fake.started).toBe(1);

    open = gate();
    run.train();
    await until(() => fake.started === 2);
    run.step(); // refused as a second loop: queued as a pause after this iteration
    open();
    expect(await run.wait()).toBe('paused');
    expect(run.iteration).toBe(1);

    open = gate();
    run.train();
    await until(() => fake.started === 3);
    run.stop();
    expect(run.status).toBe('stopping');
    open();
    expect(await run.wait()).toBe('stopped');
    expect(run.iteration).toBe(1);
    expect(fake.started).toBe(3);
    expect(statuses).toEqual(['loading', 'running', 'pausing', 'paused', 'running', 'paused', 'running', 'stopping', 'stopped']);
    run.stop(); // stopping a halted run just says so
    expect(statuses.at(-1)).toBe('stopped');
  });

  it('refuses what the state does not allow: a second start while training, training with no run', async () => {
    fake.on = true;
    const { run } = fakeRun();
    expect(() => run.train()).toThrow(expect.objectContaining({ code: 'NO_RUN' }));
    expect(() => run.step()).toThrow(expect.objectContaining({ code: 'NO_RUN' }));
    await expect(run.adapterFiles()).rejects.toMatchObject({ code: 'NO_RUN' });
    const open = gate();
    await run.start(config(), { id: 'r' });
    expect(run.busy).toBe(true);
    await expect(run.start(config(), { id: 'r2' })).rejects.toMatchObject({ code: 'BUSY' });
    await expect(run.open('r')).rejects.toMatchObject({ code: 'BUSY' });
    expect(() => run.close()).toThrow(expect.objectContaining({ code: 'BUSY' }));
    run.stop();
    open();
    expect(await run.wait()).toBe('stopped');
    expect(run.busy).toBe(false);
    run.close();
    expect(run.id).toBeNull();
    expect(run.status).toBe('idle');
  });

  it('rolls back after config.runLoop.rollbackAfter non-finite iterations in a row', async () => {
    fake.on = true;
    const { run, notices, iterations, statuses, iterationNotices } = fakeRun();
    fake.plan = ['ok', 'nan', 'nan', 'ok', 'ok', 'ok'];
    await run.start(config({ iterations: 3, runLoop: { rollbackAfter: 2 } }), { id: 'r' });
    expect(await run.wait()).toBe('done');
    expect(notices.map((n) => [n.code, n.iteration])).toEqual([['ROLLBACK', 1]]);
    expect(notices[0].message).toMatch(
      /^Iterations 1-2 had non-finite losses or gradients .* went back to iteration 1, its last good one,/,
    );
    expect(iterations).toEqual([0, 1, 2, 1, 2]);
    expect(iterationNotices[1]).toBe(
      'iteration 1 had non-finite values (policy step skipped (non-finite gradient)); it is not kept (a rollback or reload goes back to the iteration before it)',
    );
    expect(iterationNotices.filter((x) => x !== undefined)).toHaveLength(2);
    expect(run.iteration).toBe(3);
    expect(statuses.at(-1)).toBe('done');
    // with the default (3), two in a row do not roll back
    const b = fakeRun();
    fake.plan = ['nan', 'nan', 'ok'];
    await b.run.start(config({ iterations: 3 }), { id: 'b' });
    expect(await b.run.wait()).toBe('done');
    expect(b.notices).toEqual([]);
  });

  it('recovers from device losses on a new device, up to config.runLoop.maxRecoveries in a row', async () => {
    fake.on = true;
    const a = fakeRun();
    fake.plan = ['ok', 'lost', 'lost', 'ok', 'ok'];
    await a.run.start(config({ iterations: 3, runLoop: { maxRecoveries: 2 } }), { id: 'a' });
    expect(await a.run.wait()).toBe('done');
    expect(a.session.reopens).toBe(2);
    expect(a.notices.map((n) => [n.code, n.iteration])).toEqual([
      ['DEVICE_LOST', 1],
      ['DEVICE_LOST', 1],
    ]);
    expect(a.statuses.filter((s) => s === 'recovering')).toHaveLength(2);
    expect(a.iterations).toEqual([0, 1, 2]);

    const b = fakeRun();
    fake.plan = ['lost', 'lost'];
    await b.run.start(config({ iterations: 3, runLoop: { maxRecoveries: 1 } }), { id: 'b' });
    await expect(b.run.wait()).rejects.toMatchObject({ code: 'DEVICE_LOST' });
    expect(b.session.reopens).toBe(1);
    expect(b.run.status).toBe('error');
    expect(b.notices.map((n) => n.code)).toEqual(['DEVICE_LOST', 'DEVICE_LOST']); // the recovery, then the error
    expect(b.run.id).toBe('b'); // still loaded, at its last good state
  });

  it('a Step or a second export while an export holds the model is refused (MODEL_IN_USE), as is an export while training', async () => {
    fake.on = true;
    const a = fakeRun();
    await a.run.start(config({ iterations: 3 }), { id: 'a', paused: true });
    expect(await a.run.wait()).toBe('paused');
    expect(a.run.iteration).toBe(1);
    let finish!: () => void;
    const exporting = a.session.exclusive(
      "an export computing solver's logits",
      () =>
        new Promise<void>((r) => {
          finish = r;
        }),
    );
    expect(() => a.run.step()).toThrow("a training run cannot start now: the model is in use by an export computing solver's logits.");
    expect(() => a.run.train()).toThrow(/model is in use/);
    expect(a.run.busy).toBe(false);
    expect(a.run.status).toBe('paused');
    await expect(a.session.exclusive('an adapter export', async () => 1)).rejects.toMatchObject({ code: 'MODEL_IN_USE' });
    finish();
    await exporting;
    expect(fake.started).toBe(1); // nothing ran meanwhile
    // once the export ends the Step runs; while it trains, an export is refused
    let go!: () => void;
    fake.gate = new Promise((r) => {
      go = r;
    });
    a.run.step();
    await expect(a.session.exclusive('an adapter export', async () => 1)).rejects.toThrow(
      'an adapter export cannot start now: the model is in use by a training run.',
    );
    go();
    expect(await a.run.wait()).toBe('paused');
    expect(a.run.iteration).toBe(2);
    expect(await a.session.exclusive('an adapter export', async () => 7)).toBe(7); // released when the loop ended
  });

  it('keeps the checkpoints config.runLoop.keepCheckpoints says, unless the front end overrides it', async () => {
    fake.on = true;
    const a = fakeRun();
    await a.run.start(config({ iterations: 3, runLoop: { keepCheckpoints: 2, checkpointEvery: 1 } }), { id: 'a' });
    await a.run.wait();
    expect(fake.checkpoints.get('a')!.map((c) => c.iteration)).toEqual([2, 3]);
    const b = fakeRun({ keep: 1 });
    await b.run.start(config({ iterations: 2, runLoop: { keepCheckpoints: 2, checkpointEvery: 1 } }), { id: 'b' });
    await b.run.wait();
    expect(fake.checkpoints.get('b')!.map((c) => c.iteration)).toEqual([2]);
    // open: the run folder's latest checkpoint, paused, with its history
    const c = fakeRun();
    const loaded: number[][] = [];
    const run = new Run(c.session as unknown as Session, memoryStore(), {
      onLoaded: (e) => loaded.push(e.history.map((m) => m.iteration)),
    });
    expect(await run.open('a')).toBe(3);
    expect(run.status).toBe('paused');
    expect(loaded).toEqual([[0, 1, 2]]);
  });
});

describe('Run on the tiny model (real GPU work)', () => {
  it('starts, trains, opens its checkpoint, steps; switching models closes it and releases the weights', async () => {
    const gpu = await testGpu();
    const folder = { ...tinyModelFolder('F32'), 'config.json': JSON.stringify({ ...TINY_QWEN2_CONFIG, max_position_embeddings: 256 }) };
    const session = new Session({
      device: async () => gpu,
      model: async (path) => ({ files: memoryFiles(path || 'tiny', folder), name: path || 'tiny', baseModel: path || 'tiny' }),
      refuse: (code, message) => new Error(`${code}: ${message}`),
      sandbox: null,
    });
    const store = memoryStore();
    const statuses: RunStatus[] = [];
    const run = new Run(session, store, { onStatus: (e) => statuses.push(e.status) }, { maxTokens: 512 });
    await run.start(tinyRunConfig({ iterations: 2, rollout: { episodes: 1, horizon: 1 } }), { id: 'run', files: { 'run.json': '{}\n' } });
    expect(await run.wait()).toBe('done');
    expect(statuses).toEqual(['loading', 'running', 'done']);
    expect((await listCheckpoints(store, 'run')).map((c) => c.iteration)).toEqual([0, 2]); // the start and the end
    expect(new TextDecoder().decode(await store.read('run/run.json'))).toBe('{}\n');
    expect(run.last?.episodes).toHaveLength(1);
    expect(run.last?.targets.size).toBeGreaterThan(0);
    expect(run.keptIterations).toEqual([0, 1]); // the inspector's history: every iteration, up to KEPT_ITERATIONS
    expect(run.iterationData(0)?.iteration).toBe(0);
    expect(run.iterationData()).toBe(run.last);
    expect(run.iterationData(5)).toBeNull();

    expect(await run.open('run', 'ckpt-000000')).toBe(0);
    expect(run.last).toBeNull();
    expect(run.keptIterations).toEqual([]);
    run.step();
    expect(await run.wait()).toBe('paused');
    expect(run.iteration).toBe(1);
    const { files, iteration } = await run.adapterFiles();
    expect(iteration).toBe(1);
    expect(Object.keys(files)).toContain('agents/solver/adapter_model.safetensors');

    const inUse = gpu.pool.stats.bytesInUse;
    await session.load('another');
    expect(run.id).toBeNull(); // the run on the old model was closed first (its state released)
    // and the old weights released: the new model's take their place instead of adding to them
    expect(gpu.pool.stats.bytesInUse).toBeLessThan(inUse);
  });
});
