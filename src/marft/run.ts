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
import { errorMessage, messageWithoutHint } from '../common/errors.ts';
import { loadAdapterFiles } from '../model/load.ts';
import type { CheckpointStore } from '../platform/storage/store.ts';
import { loadCheckpoint, readCheckpointFiles, saveCheckpoint } from './checkpoint/checkpoint.ts';
import { checkpointAdapterFiles } from './export/downloads.ts';
import { initAgentAdapters } from './checkpoint/init-adapter.ts';
import { MarftError } from './errors.ts';
import { exportAdapters } from './export/peft.ts';
import type { ActionRecord, EpisodeRecord } from './rollout.ts';
import { type RunLoopEvent, RunPaused, hadNonFiniteSkip, lostReason, runLoop } from './run-loop.ts';
import { GpuError } from '../gpu/errors.ts';
import type { ActionScores } from './score.ts';
import type { ModelFiles, Session, SessionModel } from './session.ts';
import type { IterationMetrics } from '../config/metrics.ts';
import { type TrainState, createTrainState, releaseTrainState } from './state.ts';
import type { ActionTargets } from './advantage-targets.ts';
import type { IterationResult } from './trainer.ts';

export type RunStatus = 'idle' | 'loading' | 'running' | 'pausing' | 'paused' | 'stopping' | 'stopped' | 'done' | 'recovering' | 'error';

export interface StatusEvent {
  status: RunStatus;
  runId: string | null;
  /** Iterations completed, and the iteration the run trains up to. */
  iteration: number;
  total: number;
  message?: string;
}

export type ProgressPhase = 'load' | 'rollout' | 'score' | 'advantages' | 'update' | 'checkpoint';

export interface ProgressEvent {
  iteration: number;
  phase: ProgressPhase;
  detail: string;
}

export interface EpisodeSummary {
  index: number;
  task: string;
  correct: boolean;
  teamReward: number;
  actions: number;
  /** The team's last answer, when one was given. */
  answer: string | null;
}

/** A profiled iteration (Run.profileNext): its phase wall times and, where the device can, per-kernel GPU time. */
export interface IterationProfile {
  iteration: number;
  /** Wall seconds per phase, as in the metrics (the profiled iteration runs slower: one pass per dispatch). */
  seconds: IterationMetrics['seconds'];
  /** GPU milliseconds per kernel (`<program key>/<entry point>`), largest first; null without timestamp-query. */
  kernels: KernelTime[] | null;
  /** Why kernels is null, when it is. */
  unavailable?: string;
  /** The adapter that ran it. */
  adapter: string;
}

export interface IterationEvent {
  metrics: IterationMetrics;
  /** Present when this iteration was profiled. */
  profile?: IterationProfile;
  episodes: EpisodeSummary[];
  notice?: string;
}

/** A checkpoint written to the run folder (on the cadence, at a pause, a stop or the end). */
export interface CheckpointEvent {
  runId: string;
  checkpoint: string;
  iteration: number;
  /** When the write finished (ms since the epoch). */
  savedAt: number;
}

export interface LoadedEvent {
  runId: string;
  config: RunConfig;
  /** The whole metric history (charts reset to it). */
  history: IterationMetrics[];
  checkpoint: string | null;
}

/** An error or a notice as plain data (it crosses the worker boundary): code, message, the catalogue's hint. */
export interface Notice {
  code: string;
  message: string;
  hint?: string;
  /** ROLLBACK and DEVICE_LOST: the iteration the run continues from. */
  iteration?: number;
  /** RUN_PAUSED: what paused it (a checkpoint that could not be written, or an environment module that failed). */
  pauseReason?: 'storage' | 'environment';
}

export interface RunEvents {
  onStatus(e: StatusEvent): void;
  onProgress(e: ProgressEvent): void;
  onIteration(e: IterationEvent): void;
  onCheckpoint(e: CheckpointEvent): void;
  /** A run was (re)loaded: its config and its whole metric history. */
  onLoaded(e: LoadedEvent): void;
  /** Something the user should know that did not stop the run (a rollback, a recovery, a failed save). */
  onNotice(e: Notice): void;
}

/** How many finished iterations a run keeps for the inspector (episodes, scores, targets: small beside the model). */
export const KEPT_ITERATIONS = 10;

/** The last iteration's episodes with what scoring and the advantages gave them (the inspector's data). */
export interface LastIteration {
  iteration: number;
  config: RunConfig;
  episodes: EpisodeRecord[];
  scores: Map<ActionRecord, ActionScores>;
  targets: Map<ActionRecord, ActionTargets>;
}

/** Any thrown value as a Notice (a coded error keeps its code and hint; its message loses the hint line). */
export function errorNotice(e: unknown): Notice {
  if (e && typeof e === 'object' && 'code' in e && 'message' in e) {
    const g = e as { code: string; message: string; hint?: string };
    return { code: String(g.code), message: messageWithoutHint(g.message), hint: g.hint };
  }
  return { code: 'INTERNAL', message: e instanceof Error ? e.message : String(e) };
}

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
}

/** An episode as the IterationEvent lists it (the Inspect tab's episode list). */
export const summarize = (ep: EpisodeRecord): EpisodeSummary => {
  const lastTurn = ep.turns[ep.turns.length - 1];
  const answers = lastTurn ? Object.values(lastTurn.answers).filter((x) => x.answer !== null) : [];
  return {
    index: ep.index, task: ep.task, correct: ep.correct, teamReward: ep.turns.reduce((s, t) => s + t.teamReward, 0),
    actions: ep.actions.length, answer: answers.length ? answers[answers.length - 1].answer : null,
  };
};

/** The IterationEvent's profile: the kernel table (null: the adapter lacks timestamp-query) and phase times. */
function iterationProfile(m: SessionModel, res: IterationResult, kernels: KernelTime[] | null): IterationProfile {
  const adapter = [m.gpu.adapter.vendor, m.gpu.adapter.architecture, m.gpu.adapter.description].filter(Boolean).join(' / ') || 'unknown adapter';
  return {
    iteration: res.metrics.iteration, seconds: res.metrics.seconds, adapter, kernels,
    unavailable: kernels ? undefined : `this GPU adapter (${adapter}) does not expose the WebGPU feature timestamp-query, so per-kernel GPU times cannot be measured; only the phase wall times are shown`,
  };
}

export class Run {
  private loaded: Loaded | null = null;
  /** The last KEPT_ITERATIONS iterations since the run was loaded, oldest first (the inspector's history). */
  private recent: LastIteration[] = [];
  private looping: Promise<void> | null = null;
  private failure: unknown = null;
  /** pause / stop: halt at the next iteration boundary; now: abandon the iteration in flight (a Pause, not a Step). */
  private readonly ctrl = { pause: false, stop: false, stepOnce: false, now: false };
  /** Profile the next iteration to start (kept across runs until one is profiled). */
  private profileArmed = false;
  private readonly events: Partial<RunEvents>;
  private current: RunStatus = 'idle';

  constructor(private readonly session: Session, private readonly store: CheckpointStore, events: Partial<RunEvents> = {}, private readonly opts: RunOptions = {}) {
    this.events = events;
    // another model replaces this run's: its state goes first (refused while it trains)
    session.onUnload((m) => {
      if (this.loaded?.model !== m) return;
      this.close();
    });
  }

  /** The loaded run's folder name, null when none is loaded. */
  get id(): string | null { return this.loaded?.id ?? null; }
  /** Iterations completed by the loaded run. */
  get iteration(): number { return this.loaded?.state.iteration ?? 0; }
  get config(): RunConfig | null { return this.loaded?.state.config ?? null; }
  get status(): RunStatus { return this.current; }
  /** Whether the loop is running (an iteration in flight or about to start). */
  get busy(): boolean { return this.looping !== null; }
  /** The last iteration's episodes since the run was loaded, for the inspector. */
  get last(): LastIteration | null { return this.recent[this.recent.length - 1] ?? null; }
  /** The kept iterations' numbers, oldest first. */
  get keptIterations(): number[] { return this.recent.map((r) => r.iteration); }
  /** A kept iteration (the last when `iteration` is undefined); null when it is not kept. */
  iterationData(iteration?: number): LastIteration | null {
    return iteration === undefined ? this.last : this.recent.find((r) => r.iteration === iteration) ?? null;
  }
  /** The model the run trains on (its tokenizer decodes the episodes). */
  get model(): SessionModel | null { return this.loaded?.model ?? null; }
  /** The loaded run's team as it stands (config and adapters), for Try the team; null when none is loaded. */
  get team(): { model: SessionModel; config: RunConfig; policy: TrainState['policy']; iteration: number } | null {
    const a = this.loaded;
    return a ? { model: a.model, config: a.state.config, policy: a.state.policy, iteration: a.state.iteration } : null;
  }

  /** Tells the listener; one that fails or went away (the page of a worker's comlink proxy) is ignored. */
  private emit<K extends keyof RunEvents>(k: K, e: Parameters<RunEvents[K]>[0]): void {
    const f = this.events[k] as ((x: typeof e) => unknown) | undefined;
    try {
      void Promise.resolve(f?.call(this.events, e)).catch(() => {});
    } catch { /* the page went away */ }
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
    this.recent = [];
    this.current = 'idle';
  }

  private async save(a: Loaded): Promise<string> {
    this.progress('checkpoint', `saving iteration ${a.state.iteration}`);
    const saved = await saveCheckpoint(a.model.gpu, a.state, this.store, a.id, { baseModel: a.model.source.baseModel, keep: this.opts.keep ?? a.state.config.runLoop.keepCheckpoints });
    a.lastCheckpoint = saved.name;
    return saved.name;
  }

  /**
   * A new run: fresh adapters (or the ones given) and critic, its first checkpoint (iteration 0) saved at
   * once; then it trains. A device lost during that first save starts the run again on a new device (the
   * fresh state is a function of the config's seed, so nothing differs); a second loss in a row is an error.
   */
  async start(input: RunConfig, o: StartOptions): Promise<string> {
    this.assertIdle();
    const config = parseRunConfig(input, { envs: this.session.envs });
    this.close();
    this.setStatus('loading', 'loading the model');
    this.progress('load', config.model.path || BUILTIN_MODEL);
    let m = await this.session.load(config.model.path);
    for (const f of Object.entries(o.files ?? {})) await this.store.write(`${o.id}/${f[0]}`, f[1]);
    for (let attempt = 0; ; attempt++) {
      const state = createTrainState(m.gpu, m.model, config);
      try {
        const adapters = [];
        for (const { role, files, where } of o.adapters ?? []) adapters.push({ role, adapter: await loadAdapterFiles(files, m.model), where });
        if (adapters.length) initAgentAdapters(m.gpu, state, m.model, adapters);
      } catch (e) {
        releaseTrainState(m.gpu, state);
        throw e;
      }
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
        this.emit('onNotice', {
          code: 'DEVICE_LOST',
          message: `The GPU device was lost (${reason}) while the new run saved its first checkpoint. It started again on a new device from the same seed; nothing was lost.`,
          hint: 'If it keeps happening, close other GPU-heavy tabs or lower episodes / max new tokens.',
        });
        m = await this.session.reopen();
        continue;
      }
      this.emit('onLoaded', { runId: a.id, config, history: [], checkpoint: ckpt });
      Object.assign(this.ctrl, { pause: o.paused ?? false, stop: false, stepOnce: o.paused ?? false, now: false });
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
    this.setStatus('loading', `opening ${from.dir || from.store.name}`);
    const { files, path } = await readCheckpointFiles(from.store, from.dir);
    const config = parseRunConfig(new TextDecoder().decode(files['config.json']), { checkEnv: false });
    this.close();
    const m = await this.session.load(config.model.path);
    const state = await loadCheckpoint(m.gpu, from.store, from.dir, m.model);
    const a: Loaded = { id, state, model: m, until: config.iterations, lastCheckpoint: from.store === this.store ? path.split('/').pop() ?? null : null, origin: from };
    this.loaded = a;
    this.emit('onLoaded', { runId: id, config: state.config, history: state.metrics, checkpoint: a.lastCheckpoint });
    this.setStatus('paused', `resumed from ${path || from.store.name}`);
    return state.iteration;
  }

  /** Continues the loaded run until iteration `until` (default: its config.iterations, or as many more once there). */
  train(until?: number): void {
    const a = this.need();
    if (this.looping) { Object.assign(this.ctrl, { pause: false, now: false }); return; }
    const it = a.state.iteration;
    const n = a.state.config.iterations;
    a.until = until ?? (it >= n ? it + n : n);
    Object.assign(this.ctrl, { pause: false, stop: false, stepOnce: false, now: false });
    this.launch();
  }

  /** One iteration, then paused; while training, it pauses after the iteration in flight. */
  step(): void {
    const a = this.need();
    if (this.looping) { this.ctrl.pause = true; return; }
    a.until = Math.max(a.until, a.state.iteration + 1);
    Object.assign(this.ctrl, { pause: true, stop: false, stepOnce: true, now: false });
    this.launch();
  }

  /** Pauses within seconds: the iteration in flight is abandoned (see the header). */
  pause(): void {
    if (!this.looping || this.ctrl.stop) return;
    Object.assign(this.ctrl, { pause: true, now: true });
    this.setStatus('pausing', 'pausing…');
  }

  /** Stops within seconds, like pause (the run stays loaded at its last completed iteration). */
  stop(): void {
    this.ctrl.stop = true;
    if (this.looping) this.setStatus('stopping', 'stopping…');
    else if (this.loaded) this.setStatus('stopped');
  }

  /** Arms (or disarms) profiling of the next iteration to start. */
  profileNext(on: boolean): boolean {
    this.profileArmed = on;
    return on;
  }

  /** Waits until the loop halts; its status then ('done', 'paused', 'stopped'), or the error that ended it. */
  async wait(): Promise<RunStatus> {
    await this.looping;
    if (this.failure) throw this.failure;
    return this.current;
  }

  /**
   * The loaded run's PEFT adapters (per-agent folders, config.json and, from the GPU, README.md) and the
   * iteration they belong to: mid-iteration the adapters are being updated, so they come from the last checkpoint.
   */
  async adapterFiles(): Promise<{ files: Record<string, Uint8Array | string>; iteration: number }> {
    const a = this.need();
    if (!this.looping) {
      return this.session.exclusive('an adapter export', async () => {
        if (a.model.gpu.lostReason !== null) await this.reopenIdle(a); // lost during an earlier export: retry on a new device
        try {
          return { files: await exportAdapters(a.model.gpu, a.state, { baseModel: a.model.source.baseModel }), iteration: a.state.iteration };
        } catch (e) {
          const reason = await lostReason(a.model.gpu, e);
          if (reason === null) throw e;
          throw new GpuError('DEVICE_LOST', `the adapter export stopped: the GPU device was lost (${reason}). Nothing was written; the run is unchanged (last checkpoint ${a.lastCheckpoint ?? 'none'}).`, 'Export again: the run reopens on a new device from its last checkpoint.');
        }
      });
    }
    const ck = await readCheckpointFiles(this.store, a.id);
    return { files: checkpointAdapterFiles(ck), iteration: ck.manifest.iteration };
  }

  /** A paused run whose device was lost: a new device, the state from the run folder's last checkpoint. */
  private async reopenIdle(a: Loaded): Promise<void> {
    this.setStatus('recovering', 'GPU device lost; reloading the last checkpoint');
    a.model = await this.session.reopen();
    a.state = await loadCheckpoint(a.model.gpu, a.origin?.store ?? this.store, a.origin?.dir ?? a.id, a.model.model);
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
    this.looping = this.drive().finally(() => { release(); this.looping = null; });
  }

  /** Iterations until the target, a pause, a stop (both abandoning the iteration in flight) or a single step. */
  private async drive(): Promise<void> {
    let abandoned: string | undefined; // the status message after an interrupted iteration
    try {
      for (;;) {
        const a = this.loaded;
        if (!a) return;
        if (this.ctrl.stop) { this.ctrl.stop = false; this.setStatus('stopped', abandoned); return; }
        if (!this.ctrl.stepOnce && this.ctrl.pause) { this.ctrl.now = false; this.setStatus('paused', abandoned); return; }
        if (!this.ctrl.stepOnce && a.state.iteration >= a.until) { this.setStatus('done'); return; }
        const single = this.ctrl.stepOnce;
        this.ctrl.stepOnce = false;
        this.setStatus('running');
        try {
          abandoned = await this.iterate(a, single);
        } catch (e) {
          if (!(e instanceof RunPaused)) throw e;
          // storage full or unwritable: paused, so no iteration runs without a checkpoint; the last good
          // checkpoint stays intact (saves are atomic) and training continues once space is freed.
          // An environment module that failed: paused at the last checkpoint (the loop reloaded it)
          a.state = e.state;
          this.ctrl.pause = true;
          this.emit('onNotice', { ...errorNotice(e), pauseReason: e.reason });
        }
        if (single) this.ctrl.pause = true;
      }
    } catch (e) {
      this.failure = e;
      this.emit('onNotice', errorNotice(e));
      this.setStatus('error', errorNotice(e).message);
    }
  }

  /** What a loop event means for the run and its listeners; `state` is the one the loop now uses. */
  private onLoopEvent(a: Loaded, e: RunLoopEvent, state: TrainState): void {
    if (e.kind === 'saving') this.progress('checkpoint', `saving iteration ${e.iteration}`);
    else if (e.kind === 'saved') {
      a.lastCheckpoint = e.checkpoint;
      a.origin = undefined;
      this.emit('onCheckpoint', { runId: a.id, checkpoint: e.checkpoint, iteration: e.iteration, savedAt: Date.now() });
    }
    else if (e.kind === 'rollback' || e.kind === 'recovered') {
      a.state = state;
      this.recent = [];
      this.emit('onLoaded', { runId: a.id, config: state.config, history: state.metrics, checkpoint: a.lastCheckpoint });
      this.emit('onNotice', e.kind === 'rollback'
        ? {
          code: 'ROLLBACK', iteration: e.to,
          message: `Iterations ${e.to}-${e.from - 1} had non-finite losses or gradients (their steps were skipped); the run went back to iteration ${e.to}, its last good one, and continues with a new random draw.`,
          hint: 'If it happens again, lower the learning rate or the clip range, or set a target KL.',
        }
        : {
          code: 'DEVICE_LOST', iteration: e.iteration,
          message: `The GPU device was lost (${e.reason}). The run resumed on a new device from iteration ${e.iteration}, its last good one; no saved data was lost.`,
          hint: 'If it keeps happening, close other GPU-heavy tabs or lower episodes / max new tokens.',
        });
    }
  }

  /**
   * Runs `a` through the shared loop until its target, a pause or a stop (one iteration for a single step);
   * the status message when a pause or stop abandoned the iteration in flight.
   */
  private async iterate(a: Loaded, single: boolean): Promise<string | undefined> {
    const kernels = new Map<number, KernelTime[] | null>(); // by iteration, from onProfile to onIteration
    // the first iterations make the pipelines (asynchronously, in parallel): the phase's line says how far
    let shown: ProgressPhase = 'rollout';
    a.model.gpu.onPipelineMade = (made, asked) => {
      if (made === asked || made % 8 === 0) this.progress(shown, `preparing kernels ${made}/${asked}`);
    };
    const done = await runLoop(a.model, a.state, {
      store: this.store, dir: a.id, baseModel: a.model.source.baseModel, keep: this.opts.keep, maxTokens: this.opts.maxTokens,
      until: single ? a.state.iteration + 1 : a.until, origin: a.origin,
      halt: () => this.ctrl.stop || (this.ctrl.pause && !single),
      interrupt: () => this.ctrl.stop || this.ctrl.now,
      reopen: async (reason) => {
        this.setStatus('recovering', `GPU device lost (${reason}); reloading the last checkpoint`);
        a.model = await this.session.reopen();
        return a.model;
      },
      profile: () => {
        const on = this.profileArmed;
        this.profileArmed = false;
        return on;
      },
      onProfile: (iteration, k) => { kernels.set(iteration, k); },
      onProgress: (phase, detail) => { shown = phase; this.progress(phase, detail); },
      onEvent: (e, ctx) => this.onLoopEvent(a, e, ctx.state),
      onIteration: (res) => {
        const it = res.metrics.iteration;
        const profile = kernels.has(it) ? iterationProfile(a.model, res, kernels.get(it)!) : undefined;
        kernels.clear();
        this.recent = [...this.recent, { iteration: it, config: a.state.config, episodes: res.episodes, scores: res.scores ?? new Map(), targets: res.targets ?? new Map() }].slice(-KEPT_ITERATIONS);
        const first = res.metrics.skipped.find((x) => hadNonFiniteSkip([x]));
        const notice = first ? `iteration ${it} had non-finite values (${first}); it is not kept (a rollback or reload goes back to the iteration before it)` : undefined;
        this.emit('onIteration', { metrics: res.metrics, episodes: res.episodes.map(summarize), notice, profile });
      },
    });
    a.state = done.state;
    const ab = done.abandoned;
    if (!ab) return undefined;
    if (ab.reloaded) this.emit('onLoaded', { runId: a.id, config: a.state.config, history: a.state.metrics, checkpoint: a.lastCheckpoint });
    return `${messageWithoutHint(ab.message)}${ab.reloaded ? ` (reloaded from its checkpoint ${a.lastCheckpoint ?? ''})` : ''}; Continue re-runs it`;
  }
}
