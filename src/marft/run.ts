// A training run over a session, the one the lab's worker and the CLI both drive: start (a new run folder,
// its first checkpoint saved at once), open (a run folder's checkpoint), resume (a checkpoint from any
// store, continued in a run folder), then train / step / pause / stop. Pause and stop act within seconds:
// the status says 'pausing' / 'stopping' at once, the iteration in flight is abandoned at its next decode
// step, scoring chunk or minibatch, and the run is back at its last completed iteration (run-loop.ts), so
// Continue re-runs that iteration exactly; a Step asked for while training ends after the iteration in flight. The iterations run in the shared loop (run-loop.ts) with its guards and the run config's
// runLoop policy: a checkpoint after every good iteration, a rollback after non-finite iterations, a new
// device and the last checkpoint after a device loss; a checkpoint that cannot be written pauses the run.
// Everything goes out as events (status, progress, iteration, loaded, notices); nothing is module state,
// so a front end holds one Run per loaded run. Profiling is opt-in (profileNext): the next iteration to
// start runs with every dispatch timed in a pass of its own (slower), and its IterationEvent carries the
// per-kernel table and the phase wall times.
//
// States: idle (nothing loaded) -> loading -> running (-> pausing) <-> paused -> done | (stopping ->) stopped; recovering while a lost
// device is replaced; error when the loop failed (the run stays loaded at its last good state).

import { BUILTIN_MODEL, type RunConfig, parseRunConfig } from '../config/run-config.ts';
import type { KernelTime } from '../common/profile-table.ts';
import { errorMessage } from '../common/errors.ts';
import type { CheckpointStore } from '../platform/storage/store.ts';
import {
  type CapturedCheckpoint,
  captureCheckpoint,
  loadCheckpoint,
  readCheckpointFiles,
  writeCheckpoint,
} from './checkpoint/checkpoint.ts';
import { type AdapterFiles, checkpointAdapters, stateAdapters } from './export/run-adapters.ts';
import { newRunState } from './checkpoint/init-adapter.ts';
import { MarftError } from './errors.ts';
import { type RunLoopEvent, RunPaused, lostReason, runLoop } from './run-loop.ts';
import {
  type ProgressPhase,
  type RunEvents,
  type RunStatus,
  abandonedMessage,
  emitTo,
  errorNotice,
  firstSaveLostNotice,
  iterationEvent,
  loopNotice,
} from './run-events.ts';
import { RunControl } from './run-control.ts';
import { KeptIterations, type LastIteration } from './run-history.ts';
import type { ModelFiles, Session, SessionModel } from './session.ts';
import { type TrainState, releaseTrainState } from './state.ts';

export interface RunOptions {
  /** Checkpoints kept, overriding config.runLoop.keepCheckpoints (marft train --keep). */
  keep?: number;
  /** The trainer's maxTokens (tests keep it small). */
  maxTokens?: number;
}

export interface StartOptions {
  /** The run folder's name in the store. */
  id: string;
  /** Train one iteration, then pause (the lab's Step on a new run). */
  paused?: boolean;
  /** The iteration to train up to (default config.iterations). */
  until?: number;
  /** Adapters made elsewhere (PEFT folders), each loaded into its agent's slot before the first checkpoint. */
  adapters?: Array<{ role: string; files: ModelFiles; where: string }>;
  /** Files the front end keeps in the run folder beside the checkpoints (the lab's run.json). */
  files?: Record<string, string>;
}

/** A checkpoint to resume from: a run folder (its latest), a checkpoint folder, or a zip's store root (''). */
export interface CheckpointSource {
  store: CheckpointStore;
  dir: string;
}

interface Loaded {
  id: string;
  state: TrainState;
  model: SessionModel;
  until: number;
  lastCheckpoint: string | null;
  /** Where a resumed state came from, until the run folder holds a checkpoint of it (the loop's first save). */
  origin?: CheckpointSource;
  /** A snapshot of `state` as it is (its first save, or the last loop's), so the next loop reads nothing back. */
  snapshot?: CapturedCheckpoint | null;
}

export class Run {
  private loaded: Loaded | null = null;
  /** The iterations kept since the run was loaded (the inspector's history). */
  private readonly recent = new KeptIterations();
  private looping: Promise<void> | null = null;
  /** The loop's last checkpoint write, left to finish after it returned (the run shows paused at once). */
  private writing: Promise<void> = Promise.resolve();
  private failure: { error: unknown } | null = null;
  /** pause / stop: halt at the next iteration boundary; now: abandon the iteration in flight (a Pause, not a Step). */
  private readonly ctrl = new RunControl();
  private current: RunStatus = 'idle';

  constructor(
    private readonly session: Session,
    private readonly store: CheckpointStore,
    private readonly events: Partial<RunEvents> = {},
    private readonly opts: RunOptions = {},
  ) {
    // another model replaces this run's: its state goes first (refused while it trains)
    session.onUnload((m) => {
      if (this.loaded?.model === m) this.close();
    });
  }

  /** The loaded run's folder name, null when none is loaded. */
  get id(): string | null {
    return this.loaded?.id ?? null;
  }
  /** Iterations completed by the loaded run. */
  get iteration(): number {
    return this.loaded?.state.iteration ?? 0;
  }
  get config(): RunConfig | null {
    return this.loaded?.state.config ?? null;
  }
  get status(): RunStatus {
    return this.current;
  }
  /** Whether the loop is running (an iteration in flight or about to start). */
  get busy(): boolean {
    return this.looping !== null;
  }
  /** The last iteration's episodes since the run was loaded, for the inspector. */
  get last(): LastIteration | null {
    return this.recent.last;
  }
  /** The kept iterations' numbers, oldest first. */
  get keptIterations(): number[] {
    return this.recent.numbers;
  }
  /** A kept iteration (the last when `iteration` is undefined); null when it is not kept. */
  iterationData(iteration?: number): LastIteration | null {
    return this.recent.get(iteration);
  }
  /** The model the run trains on (its tokenizer decodes the episodes). */
  get model(): SessionModel | null {
    return this.loaded?.model ?? null;
  }
  /** The loaded run's team as it stands (config and adapters), for Try the team; null when none is loaded. */
  get team(): { model: SessionModel; config: RunConfig; policy: TrainState['policy']; iteration: number } | null {
    const a = this.loaded;
    return a ? { model: a.model, config: a.state.config, policy: a.state.policy, iteration: a.state.iteration } : null;
  }

  private emit<K extends keyof RunEvents>(k: K, e: Parameters<RunEvents[K]>[0]): void {
    emitTo(this.events, k, e);
  }

  private setStatus(status: RunStatus, message?: string): void {
    this.current = status;
    const a = this.loaded;
    this.emit('onStatus', { status, runId: a?.id ?? null, iteration: a?.state.iteration ?? 0, total: a?.until ?? 0, message });
  }

  private progress(phase: ProgressPhase, detail: string): void {
    this.emit('onProgress', { iteration: this.loaded?.state.iteration ?? 0, phase, detail });
  }

  private assertIdle(): void {
    if (this.looping) throw new MarftError('BUSY', 'a run is training');
  }

  private need(): Loaded {
    if (!this.loaded) throw new MarftError('NO_RUN', 'no run is loaded');
    return this.loaded;
  }

  /** Releases the loaded run's state (its checkpoints stay); refused while it trains. */
  close(): void {
    this.assertIdle();
    const a = this.loaded;
    if (a && a.model.gpu.lostReason === null) releaseTrainState(a.model.gpu, a.state);
    this.loaded = null;
    this.recent.clear();
    this.current = 'idle';
  }

  /** A new run's first checkpoint; its snapshot stays for the first loop. */
  private async save(a: Loaded): Promise<string> {
    this.progress('checkpoint', `saving iteration ${a.state.iteration}`);
    const captured = captureCheckpoint(a.model.gpu, a.state, a.model.source.baseModel);
    const saved = await writeCheckpoint(await captured.ready, this.store, a.id, this.opts.keep ?? a.state.config.runLoop.keepCheckpoints);
    a.lastCheckpoint = saved.name;
    a.snapshot = captured;
    return saved.name;
  }

  /**
   * A new run: fresh adapters (or the ones given) and critic, its first checkpoint (iteration 0) saved at
   * once; then it trains. A device lost during that first save starts the run again on a new device (the
   * fresh state is a function of the config's seed, so nothing differs); a second loss in a row is an error.
   */
  async start(input: RunConfig, o: StartOptions): Promise<string> {
    this.assertIdle();
    await this.writing;
    const config = parseRunConfig(input, { envs: this.session.envs });
    this.close();
    this.setStatus('loading', 'loading the model');
    this.progress('load', config.model.path || BUILTIN_MODEL);
    let m = await this.session.load(config.model.path);
    for (const f of Object.entries(o.files ?? {})) await this.store.write(`${o.id}/${f[0]}`, f[1]);
    for (let attempt = 0; ; attempt++) {
      const state = await newRunState(m, config, o.adapters ?? []);
      const a: Loaded = { id: o.id, state, model: m, until: o.until ?? config.iterations, lastCheckpoint: null };
      this.loaded = a;
      let ckpt: string;
      try {
        ckpt = await this.save(a);
      } catch (e) {
        const reason = attempt === 0 ? await lostReason(m.gpu, e) : null;
        if (reason === null) throw e;
        this.loaded = null;
        this.setStatus('recovering', `GPU device lost (${reason}) while saving the first checkpoint; starting again on a new device`);
        this.emit('onNotice', firstSaveLostNotice(reason));
        m = await this.session.reopen();
        continue;
      }
      this.emit('onLoaded', { runId: a.id, config, history: [], checkpoint: ckpt });
      this.ctrl.begin(o.paused ?? false);
      this.launch();
      return a.id;
    }
  }

  /** Loads a run folder's checkpoint (its latest, or the one named) and leaves it paused. */
  open(id: string, checkpoint?: string): Promise<number> {
    return this.resume({ store: this.store, dir: checkpoint ? `${id}/${checkpoint}` : id }, id);
  }

  /** Loads the checkpoint `from` names, to continue in the run folder `id`, and leaves it paused. */
  async resume(from: CheckpointSource, id: string): Promise<number> {
    this.assertIdle();
    await this.writing;
    this.setStatus('loading', `opening ${from.dir || from.store.name}`);
    const { files, path } = await readCheckpointFiles(from.store, from.dir);
    const config = parseRunConfig(new TextDecoder().decode(files['config.json']), { checkEnv: false });
    this.close();
    const m = await this.session.load(config.model.path);
    const state = await loadCheckpoint(m.gpu, from.store, from.dir, m.model);
    const a: Loaded = {
      id,
      state,
      model: m,
      until: config.iterations,
      lastCheckpoint: from.store === this.store ? (path.split('/').pop() ?? null) : null,
      origin: from,
    };
    this.loaded = a;
    this.emit('onLoaded', { runId: id, config: state.config, history: state.metrics, checkpoint: a.lastCheckpoint });
    this.setStatus('paused', `resumed from ${path || from.store.name}`);
    return state.iteration;
  }

  /** Continues the loaded run until iteration `until` (default: its config.iterations, or as many more once there). */
  train(until?: number): void {
    const a = this.need();
    if (this.looping) {
      this.ctrl.resume();
      return;
    }
    const it = a.state.iteration;
    const n = a.state.config.iterations;
    a.until = until ?? (it >= n ? it + n : n);
    this.ctrl.begin(false);
    this.launch();
  }

  /** One iteration, then paused; while training, it pauses after the iteration in flight. */
  step(): void {
    const a = this.need();
    if (this.looping) {
      this.ctrl.pauseAfter();
      return;
    }
    a.until = Math.max(a.until, a.state.iteration + 1);
    this.ctrl.begin(true);
    this.launch();
  }

  /** Pauses within seconds: the iteration in flight is abandoned (see the header). */
  pause(): void {
    if (!this.looping || !this.ctrl.pauseNow()) return;
    this.setStatus('pausing', 'pausing…');
  }

  /** Stops within seconds, like pause (the run stays loaded at its last completed iteration). */
  stop(): void {
    this.ctrl.requestStop();
    if (this.looping) this.setStatus('stopping', 'stopping…');
    else if (this.loaded) this.setStatus('stopped');
  }

  /** Arms (or disarms) profiling of the next iteration to start. */
  profileNext(on: boolean): boolean {
    this.ctrl.profileNext = on;
    return on;
  }

  /** Waits until the loop halts and its last checkpoint is written; its status then ('done', 'paused', 'stopped'), or the error that ended it. */
  async wait(): Promise<RunStatus> {
    await this.looping;
    await this.writing;
    if (this.failure) throw this.failure.error;
    return this.current;
  }

  /** Waits for the last checkpoint write of a halted loop (before anything else touches the run folder). */
  settled(): Promise<void> {
    return this.writing;
  }

  /**
   * The loaded run's PEFT adapters (per-agent folders, config.json and, from the GPU, README.md) and the
   * iteration they belong to: mid-iteration the adapters are being updated, so they come from the last checkpoint.
   */
  async adapterFiles(): Promise<AdapterFiles> {
    const a = this.need();
    if (this.looping) return checkpointAdapters(this.store, a.id);
    return this.session.exclusive('an adapter export', async () => {
      if (a.model.gpu.lostReason !== null) await this.reopenIdle(a); // lost during an earlier export: retry on a new device
      return stateAdapters(a.model, a.state, a.lastCheckpoint);
    });
  }

  /** A paused run whose device was lost: a new device, the state from the run folder's last checkpoint. */
  private async reopenIdle(a: Loaded): Promise<void> {
    this.setStatus('recovering', 'GPU device lost; reloading the last checkpoint');
    a.model = await this.session.reopen();
    a.state = await loadCheckpoint(a.model.gpu, a.origin?.store ?? this.store, a.origin?.dir ?? a.id, a.model.model);
    a.snapshot = null;
    this.emit('onLoaded', { runId: a.id, config: a.state.config, history: a.state.metrics, checkpoint: a.lastCheckpoint });
    this.setStatus('paused', `reopened on a new device at iteration ${a.state.iteration}`);
  }

  /** Starts the loop holding the session's model (refused while an export uses it: the run stays paused). */
  private launch(): void {
    let release: () => void;
    try {
      release = this.session.claim('a training run');
    } catch (e) {
      this.setStatus('paused', errorMessage(e));
      throw e;
    }
    this.failure = null;
    this.looping = this.drive().finally(() => {
      release();
      this.looping = null;
    });
  }

  /** Iterations until the target, a pause, a stop (both abandoning the iteration in flight) or a single step. */
  private async drive(): Promise<void> {
    let abandoned: string | undefined; // the status message after an interrupted iteration
    try {
      for (;;) {
        const a = this.loaded;
        if (!a) return;
        const next = this.ctrl.next(a.state.iteration >= a.until);
        if (next === 'stopped' || next === 'paused' || next === 'done') {
          this.setStatus(next, next === 'done' ? undefined : abandoned);
          return;
        }
        const single = next === 'one';
        this.setStatus('running');
        try {
          abandoned = await this.iterate(a, single);
        } catch (e) {
          if (!(e instanceof RunPaused)) throw e;
          // storage full or unwritable: paused, so no iteration runs without a checkpoint; the last good
          // checkpoint stays intact (saves are atomic) and training continues once space is freed.
          // An environment module that failed: paused at the last checkpoint (the loop reloaded it)
          a.state = e.state;
          this.ctrl.pauseAfter();
          this.emit('onNotice', { ...errorNotice(e), pauseReason: e.reason });
        }
        if (single) this.ctrl.pauseAfter();
      }
    } catch (e) {
      this.failure = { error: e };
      this.emit('onNotice', errorNotice(e));
      this.setStatus('error', errorNotice(e).message);
    }
  }

  /** What a loop event means for the run and its listeners; `state` is the one the loop now uses. */
  private onLoopEvent(a: Loaded, e: RunLoopEvent, state: TrainState): void {
    if (e.kind === 'saving') {
      this.progress('checkpoint', `saving iteration ${e.iteration}`);
      this.emit('onCheckpoint', { runId: a.id, iteration: e.iteration, saving: true });
    } else if (e.kind === 'save-failed') {
      this.emit('onCheckpoint', { runId: a.id, iteration: e.iteration, saving: false, failed: true });
    } else if (e.kind === 'saved') {
      a.lastCheckpoint = e.checkpoint;
      a.origin = undefined;
      this.emit('onCheckpoint', { runId: a.id, checkpoint: e.checkpoint, iteration: e.iteration, saving: false, savedAt: Date.now() });
    } else if (e.kind === 'rollback' || e.kind === 'recovered') {
      a.state = state;
      this.recent.clear();
      this.emit('onLoaded', { runId: a.id, config: state.config, history: state.metrics, checkpoint: a.lastCheckpoint });
      this.emit('onNotice', loopNotice(e));
    }
  }

  /**
   * Runs `a` through the shared loop until its target, a pause or a stop (one iteration for a single step);
   * the status message when a pause or stop abandoned the iteration in flight.
   */
  private async iterate(a: Loaded, single: boolean): Promise<string | undefined> {
    await this.writing; // the last loop's write goes first: the new loop's first step reads the run folder
    const kernels = new Map<number, KernelTime[] | null>(); // by iteration, from onProfile to onIteration
    // the first iterations make the pipelines (asynchronously, in parallel): the phase's line says how far
    let shown: ProgressPhase = 'rollout';
    a.model.gpu.pipelines.onMade = (made, asked) => {
      if (made === asked || made % 8 === 0) this.progress(shown, `preparing kernels ${made}/${asked}`);
    };
    const snapshot = a.snapshot;
    a.snapshot = null; // until the loop returns the snapshot of the state it leaves (none when it throws)
    const done = await runLoop(a.model, a.state, {
      store: this.store,
      dir: a.id,
      baseModel: a.model.source.baseModel,
      keep: this.opts.keep,
      maxTokens: this.opts.maxTokens,
      until: single ? a.state.iteration + 1 : a.until,
      origin: a.origin,
      snapshot,
      halt: () => this.ctrl.halts(single),
      interrupt: () => this.ctrl.interrupted,
      reopen: async (reason) => {
        this.setStatus('recovering', `GPU device lost (${reason}); reloading the last checkpoint`);
        a.model = await this.session.reopen();
        return a.model;
      },
      profile: () => this.ctrl.takeProfile(),
      onProfile: (iteration, k) => {
        kernels.set(iteration, k);
      },
      onProgress: (phase, detail) => {
        shown = phase;
        this.progress(phase, detail);
      },
      onEvent: (e, ctx) => this.onLoopEvent(a, e, ctx.state),
      writeBehind: true,
      onIteration: (res) => {
        this.recent.add(res, a.state.config);
        this.emit(
          'onIteration',
          iterationEvent(a.model, res, kernels.has(res.metrics.iteration) ? kernels.get(res.metrics.iteration)! : undefined),
        );
        kernels.clear();
      },
    });
    a.state = done.state;
    a.snapshot = done.snapshot;
    void this.session.keepKernels(); // the pipelines this loop made, made while the next session loads
    // a failed write pauses the run as a failed cadence write does: the next loop writes again before training
    this.writing = done.written.then(
      (failed) => {
        if (failed) this.emit('onNotice', { ...errorNotice(failed), pauseReason: failed.reason });
      },
      (e: unknown) => {
        this.emit('onNotice', errorNotice(e));
      },
    );
    const ab = done.abandoned;
    if (ab?.reloaded)
      this.emit('onLoaded', { runId: a.id, config: a.state.config, history: a.state.metrics, checkpoint: a.lastCheckpoint });
    return ab ? abandonedMessage(ab, a.lastCheckpoint) : undefined;
  }
}
