// The training loop inside the worker. One run is loaded at a time (the TrainState on the GPU); the loop
// runs iterations until the target iteration, a pause, a single step or a stop, each taking effect at an
// iteration boundary. After every iteration a checkpoint goes to OPFS (runs/<id>/ckpt-NNNNNN), so a
// reload, a crash or a lost GPU device loses at most the iteration in flight: on a device loss the loop
// acquires a new device, reloads the model and the run's latest checkpoint, and carries on.
// Profiling is opt-in (armProfile): the next iteration to start runs with every dispatch timed in a pass of
// its own (slower), and its IterationEvent carries the per-kernel table and the phase wall times.

import { loadCheckpoint, readCheckpointFiles, saveCheckpoint } from '../marft/checkpoint.ts';
import { type RunConfig, parseConfig } from '../marft/config.ts';
import type { ActionRecord, EpisodeRecord } from '../marft/rollout.ts';
import type { ActionScores } from '../marft/score.ts';
import { type TrainState, createTrainState, releaseTrainState } from '../marft/state.ts';
import { Trainer } from '../marft/trainer.ts';
import { BUILTIN_MODEL, type EpisodeSummary, type IterationProfile, type ProgressPhase, type RunEvents, type RunStatus, toWorkerError } from './api.ts';
import { WorkerFail } from './errors.ts';
import { newRunId, runsStore, writeRunMeta } from './runs.ts';
import { type LoadedModel, currentGpu, dropDevice, getModel } from './session.ts';

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
  trainer: Trainer;
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

function makeTrainer(state: TrainState, m: LoadedModel): Trainer {
  return new Trainer({ gpu: m.gpu, decoder: m.decoder, tokenizer: m.tokenizer, state, onProgress: (phase, d) => progress(phase, d) });
}

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
  active = { runId, state, model: m, trainer: makeTrainer(state, m), until: config.iterations, lastCheckpoint: null };
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
  active = { runId, state, model: m, trainer: makeTrainer(state, m), until: config.iterations, lastCheckpoint: path.split('/').pop() ?? null };
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

/**
 * Whether an iteration failed because the GPU device went away. device.lost resolves asynchronously
 * (and a destroyed device may first surface as a failed mapAsync or a validation error), so this polls
 * the devices in use for a moment before deciding.
 */
async function deviceLost(e: unknown): Promise<boolean> {
  const gpus = [active?.model.gpu, currentGpu()].filter((g): g is NonNullable<typeof g> => Boolean(g));
  for (let i = 0; i < 30; i++) {
    if (gpus.some((g) => g.lostReason !== null)) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return (e as { code?: string } | null)?.code === 'DEVICE_LOST';
}

/** A new device, the model again, and the run's latest checkpoint. */
async function recover(reason: string): Promise<void> {
  const a = active!;
  status('recovering', `GPU device lost (${reason}); reloading the last checkpoint`);
  dropDevice();
  const m = await getModel(a.state.config.model.path);
  const state = await loadCheckpoint(m.gpu, runsStore(), a.runId, m.config);
  active = { ...a, state, model: m, trainer: makeTrainer(state, m) };
  last = null;
  fire(() => events?.onLoaded({ runId: a.runId, config: state.config, history: state.metrics, checkpoint: a.lastCheckpoint }));
  fire(() => events?.onNotice({
    code: 'DEVICE_LOST',
    message: `The GPU device was lost (${reason}). The run resumed from its last checkpoint ${a.lastCheckpoint ?? ''} (iteration ${state.iteration}); no saved data was lost.`,
    hint: 'If it keeps happening, close other GPU-heavy tabs or lower episodes / max new tokens.',
  }));
}

async function loop(): Promise<void> {
  if (looping) return;
  looping = true;
  let recoveries = 0;
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
      const gpu = a.model.gpu;
      const profiling = profileArmed;
      const timed = profiling && gpu.hasTimestamps;
      profileArmed = false;
      if (timed) gpu.startProfile();
      let res;
      try {
        res = await a.trainer.iteration();
      } catch (e) {
        if (profiling) {
          profileArmed = true; // the retried iteration (after a recovery) or the next one is profiled instead
          if (timed) void gpu.stopProfile().catch(() => {});
        }
        if (await deviceLost(e)) {
          if (++recoveries > MAX_RECOVERIES) throw e;
          try {
            await recover(a.model.gpu.lostReason ?? currentGpu()?.lostReason ?? 'device lost');
          } catch (e2) {
            fire(() => events?.onNotice(toWorkerError(e2)));
            status('error', 'could not recover from the device loss');
            return;
          }
          if (single) ctrl.stepOnce = true;
          continue;
        }
        throw e;
      }
      recoveries = 0;
      let profile: IterationProfile | undefined;
      if (profiling) {
        const adapter = [gpu.adapter.vendor, gpu.adapter.architecture, gpu.adapter.description].filter(Boolean).join(' / ') || 'unknown adapter';
        profile = {
          iteration: res.metrics.iteration, seconds: res.metrics.seconds, adapter,
          kernels: timed ? await gpu.stopProfile() : null,
          unavailable: timed ? undefined : `this GPU adapter (${adapter}) does not expose the WebGPU feature timestamp-query, so per-kernel GPU times cannot be measured; only the phase wall times are shown`,
        };
      }
      last = { iteration: res.metrics.iteration, config: a.state.config, episodes: res.episodes, scores: res.scores ?? new Map() };
      const bad = res.metrics.skipped.some((x) => /non-finite|NaN|Infinity/.test(x));
      let checkpoint: string | null = null;
      let notice: string | undefined;
      if (bad) notice = `iteration ${res.metrics.iteration} had non-finite steps (skipped); no checkpoint saved for it`;
      else {
        try {
          checkpoint = await save(a);
        } catch (e) {
          // storage full (OPFS quota) or unwritable: pause, so no iteration runs without a checkpoint;
          // the last good checkpoint stays intact (saves are atomic) and Train continues once space is freed
          notice = `checkpoint not saved: ${toWorkerError(e).message}; training paused`;
          ctrl.pause = true;
          fire(() => events?.onNotice({ ...toWorkerError(e), message: `The checkpoint of iteration ${a.state.iteration} was not saved: ${toWorkerError(e).message}. Training is paused; the last good checkpoint is intact.` }));
        }
      }
      const ev = { metrics: res.metrics, episodes: res.episodes.map(summarize), checkpoint, notice, profile };
      fire(() => events?.onIteration(ev));
      if (single) ctrl.pause = true;
    }
  } catch (e) {
    fire(() => events?.onNotice(toWorkerError(e)));
    status('error', toWorkerError(e).message);
  } finally {
    looping = false;
  }
}
