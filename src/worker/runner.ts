// The lab's training runs inside the worker. One run is loaded at a time (the TrainState on the GPU); the
// shared run loop (src/marft/run-loop.ts, as in the CLI) runs its iterations until the target, a pause, a
// single step or a stop, each taking effect at an iteration boundary, with the loop's guards: a checkpoint
// to OPFS (runs/<id>/ckpt-NNNNNN) after every good iteration, a rollback to the last checkpoint after three
// iterations in a row with non-finite steps, and on a lost device a new device, the model again and the
// latest checkpoint. A checkpoint that cannot be written (OPFS quota) pauses the run.
// Profiling is opt-in (armProfile): the next iteration to start runs with every dispatch timed in a pass of
// its own (slower), and its IterationEvent carries the per-kernel table and the phase wall times.

import { loadCheckpoint, readCheckpointFiles, saveCheckpoint } from '../marft/checkpoint/checkpoint.ts';
import { type RunConfig, parseConfig } from '../config/run-config.ts';
import type { ActionRecord, EpisodeRecord } from '../marft/rollout.ts';
import { type RunLoopEvent, type RunSession, RunPaused, hadNonFiniteSkip, runLoop } from '../marft/run-loop.ts';
import type { ActionScores } from '../marft/score.ts';
import { type TrainState, createTrainState, releaseTrainState } from '../marft/state.ts';
import type { IterationResult } from '../marft/trainer.ts';
import type { KernelTime } from '../gpu/profiler.ts';
import { BUILTIN_MODEL, type EpisodeSummary, type IterationProfile, type ProgressPhase, type RunEvents, type RunStatus, toWorkerError } from './api.ts';
import { WorkerFail } from './errors.ts';
import { newRunId, runsStore, writeRunMeta } from './runs.ts';
import { type LoadedModel, dropDevice, getModel } from './session.ts';

/** Checkpoints kept per run (newest by iteration). */
const KEEP = 20;
const MAX_RECOVERIES = 3;

export interface LastIteration {
  iteration: number;
  config: RunConfig;
  episodes: EpisodeRecord[];
  scores: Map<ActionRecord, ActionScores>;
}

interface Active {
  runId: string;
  state: TrainState;
  model: LoadedModel;
  until: number;
  lastCheckpoint: string | null;
}

let events: RunEvents | null = null;
let active: Active | null = null;
let last: LastIteration | null = null;
let looping = false;
const ctrl = { pause: false, stop: false, stepOnce: false };
/** Profile the next iteration to start (kept across runs until one is profiled). */
let profileArmed = false;

const fire = (f: () => unknown): void => {
  try {
    void Promise.resolve(f()).catch(() => {});
  } catch { /* the page went away */ }
};

export function setEvents(e: RunEvents): void {
  events = e;
}

function status(s: RunStatus, message?: string): void {
  const a = active;
  fire(() => events?.onStatus({ status: s, runId: a?.runId ?? null, iteration: a?.state.iteration ?? 0, total: a?.until ?? 0, message }));
}

const progress = (phase: ProgressPhase, detail: string): void => fire(() => events?.onProgress({ iteration: active?.state.iteration ?? 0, phase, detail }));

export const getActive = (): Active | null => active;
export const getLast = (): LastIteration | null => last;
export const isLooping = (): boolean => looping;
const baseModelName = (path: string): string => path || BUILTIN_MODEL;

const toSession = (m: LoadedModel): RunSession => ({ gpu: m.gpu, decoder: m.decoder, tokenizer: m.tokenizer, model: m.config });

function summarize(ep: EpisodeRecord): EpisodeSummary {
  const lastTurn = ep.turns[ep.turns.length - 1];
  const answers = lastTurn ? Object.values(lastTurn.answers).filter((x) => x.answer !== null) : [];
  return {
    index: ep.index, task: ep.task, correct: ep.correct, teamReward: ep.turns.reduce((s, t) => s + t.teamReward, 0),
    actions: ep.actions.length, answer: answers.length ? answers[answers.length - 1].answer : null,
  };
}

function release(): void {
  if (active && active.model.gpu.lostReason === null) releaseTrainState(active.model.gpu, active.state);
  active = null;
  last = null;
}

async function save(a: Active): Promise<string> {
  progress('checkpoint', `saving iteration ${a.state.iteration}`);
  const saved = await saveCheckpoint(a.model.gpu, a.state, runsStore(), a.runId, { baseModel: baseModelName(a.state.config.model.path), keep: KEEP });
  a.lastCheckpoint = saved.name;
  return saved.name;
}

/** A new run: fresh adapters and critic, its first checkpoint (iteration 0) saved at once. */
export async function startRun(input: RunConfig, paused: boolean): Promise<string> {
  if (looping) throw new WorkerFail('BUSY', 'a run is training');
  const config = parseConfig(input);
  release();
  status('loading', 'loading the model');
  progress('load', config.model.path || BUILTIN_MODEL);
  const m = await getModel(config.model.path);
  const state = createTrainState(m.gpu, m.config, config);
  const runId = newRunId();
  active = { runId, state, model: m, until: config.iterations, lastCheckpoint: null };
  await writeRunMeta({ id: runId, createdAt: new Date().toISOString(), source: 'new' });
  const ckpt = await save(active);
  fire(() => events?.onLoaded({ runId, config, history: [], checkpoint: ckpt }));
  Object.assign(ctrl, { pause: paused, stop: false, stepOnce: paused });
  void loop();
  return runId;
}

/** Loads a run's checkpoint (its latest, or the one named) and leaves it paused. */
export async function openRun(runId: string, checkpoint?: string): Promise<number> {
  if (looping) throw new WorkerFail('BUSY', 'a run is training');
  const dir = checkpoint ? `${runId}/${checkpoint}` : runId;
  const store = runsStore();
  status('loading', `opening ${dir}`);
  const { files, path } = await readCheckpointFiles(store, dir);
  const config = parseConfig(new TextDecoder().decode(files['config.json']), { checkEnv: false });
  release();
  const m = await getModel(config.model.path);
  const state = await loadCheckpoint(m.gpu, store, dir, m.config);
  active = { runId, state, model: m, until: config.iterations, lastCheckpoint: path.split('/').pop() ?? null };
  fire(() => events?.onLoaded({ runId, config: state.config, history: state.metrics, checkpoint: active!.lastCheckpoint }));
  status('paused', `resumed from ${path}`);
  return state.iteration;
}

export function resume(until?: number): void {
  const a = active;
  if (!a) throw new WorkerFail('NO_RUN', 'no run is loaded');
  if (looping) { ctrl.pause = false; return; }
  const it = a.state.iteration;
  const n = a.state.config.iterations;
  a.until = until ?? (it >= n ? it + n : n);
  Object.assign(ctrl, { pause: false, stop: false, stepOnce: false });
  void loop();
}

export function step(): void {
  if (!active) throw new WorkerFail('NO_RUN', 'no run is loaded');
  if (looping) { ctrl.pause = true; return; } // stop after the iteration in flight
  active.until = Math.max(active.until, active.state.iteration + 1);
  Object.assign(ctrl, { pause: true, stop: false, stepOnce: true });
  void loop();
}

export function armProfile(on: boolean): boolean {
  profileArmed = on;
  return profileArmed;
}

export function pause(): void {
  if (!looping) return;
  ctrl.pause = true;
  status('running', 'pausing after this iteration');
}

export function stop(): void {
  ctrl.stop = true;
  if (!looping && active) status('stopped');
}

/** The IterationEvent's profile: the kernel table (null: the adapter lacks timestamp-query) and phase times. */
function iterationProfile(m: LoadedModel, res: IterationResult, kernels: KernelTime[] | null): IterationProfile {
  const adapter = [m.gpu.adapter.vendor, m.gpu.adapter.architecture, m.gpu.adapter.description].filter(Boolean).join(' / ') || 'unknown adapter';
  return {
    iteration: res.metrics.iteration, seconds: res.metrics.seconds, adapter, kernels,
    unavailable: kernels ? undefined : `this GPU adapter (${adapter}) does not expose the WebGPU feature timestamp-query, so per-kernel GPU times cannot be measured; only the phase wall times are shown`,
  };
}

/** What the UI hears of the run loop's events; `a` follows the state and model the loop now uses. */
function onLoopEvent(a: Active, e: RunLoopEvent, state: TrainState): void {
  if (e.kind === 'saving') progress('checkpoint', `saving iteration ${e.iteration}`);
  else if (e.kind === 'saved') a.lastCheckpoint = e.checkpoint;
  else if (e.kind === 'rollback' || e.kind === 'recovered') {
    a.state = state;
    last = null;
    fire(() => events?.onLoaded({ runId: a.runId, config: state.config, history: state.metrics, checkpoint: a.lastCheckpoint }));
    fire(() => events?.onNotice(e.kind === 'rollback'
      ? {
        code: 'ROLLBACK',
        message: `Iterations ${e.to}-${e.from - 1} had non-finite losses or gradients (their steps were skipped); the run went back to its last checkpoint ${a.lastCheckpoint ?? ''} (iteration ${e.to}) and continues with a new random draw.`,
        hint: 'If it happens again, lower the learning rate or the clip range, or set a target KL.',
      }
      : {
        code: 'DEVICE_LOST',
        message: `The GPU device was lost (${e.reason}). The run resumed from its last checkpoint ${a.lastCheckpoint ?? ''} (iteration ${e.iteration}); no saved data was lost.`,
        hint: 'If it keeps happening, close other GPU-heavy tabs or lower episodes / max new tokens.',
      }));
  }
}

/** Runs `a` through the shared loop until its target, a pause or a stop (one iteration for a single step). */
async function train(a: Active, single: boolean): Promise<void> {
  const kernels = new Map<number, KernelTime[] | null>(); // by iteration, from onProfile to onIteration
  const done = await runLoop(toSession(a.model), a.state, {
    store: runsStore(), dir: a.runId, baseModel: baseModelName(a.state.config.model.path), keep: KEEP,
    until: single ? a.state.iteration + 1 : a.until, maxRecoveries: MAX_RECOVERIES,
    halt: () => ctrl.stop || (ctrl.pause && !single),
    reopen: async (reason) => {
      status('recovering', `GPU device lost (${reason}); reloading the last checkpoint`);
      dropDevice();
      a.model = await getModel(a.state.config.model.path);
      return toSession(a.model);
    },
    profile: () => {
      const on = profileArmed;
      profileArmed = false;
      return on;
    },
    onProfile: (iteration, k) => { kernels.set(iteration, k); },
    onProgress: (phase, detail) => progress(phase, detail),
    onEvent: (e, ctx) => onLoopEvent(a, e, ctx.state),
    onIteration: (res, checkpoint) => {
      const it = res.metrics.iteration;
      const profile = kernels.has(it) ? iterationProfile(a.model, res, kernels.get(it)!) : undefined;
      kernels.clear();
      last = { iteration: res.metrics.iteration, config: a.state.config, episodes: res.episodes, scores: res.scores ?? new Map() };
      const notice = hadNonFiniteSkip(res.metrics.skipped) ? `iteration ${res.metrics.iteration} had non-finite steps (skipped); no checkpoint saved for it` : undefined;
      const ev = { metrics: res.metrics, episodes: res.episodes.map(summarize), checkpoint, notice, profile };
      fire(() => events?.onIteration(ev));
    },
  });
  a.state = done.state;
}

async function loop(): Promise<void> {
  if (looping) return;
  looping = true;
  try {
    for (;;) {
      const a = active;
      if (!a) return;
      if (ctrl.stop) { ctrl.stop = false; status('stopped'); return; }
      if (!ctrl.stepOnce && ctrl.pause) { status('paused'); return; }
      if (!ctrl.stepOnce && a.state.iteration >= a.until) { status('done'); return; }
      const single = ctrl.stepOnce;
      ctrl.stepOnce = false;
      status('running');
      try {
        await train(a, single);
      } catch (e) {
        if (!(e instanceof RunPaused)) throw e;
        // storage full (OPFS quota) or unwritable: paused, so no iteration runs without a checkpoint; the last
        // good checkpoint stays intact (saves are atomic) and Train continues once space is freed.
        // An environment module that failed: paused at the last checkpoint (the loop reloaded it)
        a.state = e.state;
        ctrl.pause = true;
        const then = e.reason === 'storage' ? 'Free some space and press Train to continue.' : 'Press Train to retry from it; a fixed module starts a new run from the Build tab.';
        fire(() => events?.onNotice({ ...toWorkerError(e), message: `${e.message} ${then}` }));
      }
      if (single) ctrl.pause = true;
    }
  } catch (e) {
    fire(() => events?.onNotice(toWorkerError(e)));
    status('error', toWorkerError(e).message);
  } finally {
    looping = false;
  }
}
