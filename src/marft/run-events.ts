// What a Run tells its front end (the lab's worker, the CLI): status, progress, iterations, checkpoints,
// loaded runs and notices, all plain data (they cross the worker boundary), and how they are made from the
// engine's results and the loop's events.

import type { KernelTime } from '../common/profile-table.ts';
import { messageWithoutHint } from '../common/errors.ts';
import type { RunConfig } from '../config/run-config.ts';
import type { IterationMetrics } from '../config/metrics.ts';
import type { EpisodeRecord } from './rollout.ts';
import { type IterationAbandoned, type RunLoopEvent, hadNonFiniteSkip } from './run-loop.ts';
import type { SessionModel } from './session.ts';
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

/**
 * A checkpoint being written to the run folder (on the cadence, at a pause, a stop or the end: the one at a
 * halt finishes after the run shows paused), then written.
 */
export type CheckpointEvent =
  | { runId: string; iteration: number; saving: true }
  /** The write failed (a notice says why; the run pauses before it trains on). */
  | { runId: string; iteration: number; saving: false; failed: true }
  | {
      runId: string;
      checkpoint: string;
      iteration: number;
      saving: false;
      /** When the write finished (ms since the epoch). */
      savedAt: number;
    };

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

/** Any thrown value as a Notice (a coded error keeps its code and hint; its message loses the hint line). */
export function errorNotice(e: unknown): Notice {
  if (e && typeof e === 'object' && 'code' in e && 'message' in e) {
    const g = e as { code: string; message: string; hint?: string };
    return { code: String(g.code), message: messageWithoutHint(g.message), hint: g.hint };
  }
  return { code: 'INTERNAL', message: e instanceof Error ? e.message : String(e) };
}

/** An episode as the IterationEvent lists it (the Inspect tab's episode list). */
export const summarize = (ep: EpisodeRecord): EpisodeSummary => {
  const lastTurn = ep.turns[ep.turns.length - 1];
  const answers = lastTurn ? Object.values(lastTurn.answers).filter((x) => x.answer !== null) : [];
  return {
    index: ep.index,
    task: ep.task,
    correct: ep.correct,
    teamReward: ep.turns.reduce((s, t) => s + t.teamReward, 0),
    actions: ep.actions.length,
    answer: answers.length ? answers[answers.length - 1].answer : null,
  };
};

/** The IterationEvent's profile: the kernel table (null: the adapter lacks timestamp-query) and phase times. */
function iterationProfile(m: SessionModel, res: IterationResult, kernels: KernelTime[] | null): IterationProfile {
  const adapter =
    [m.gpu.adapter.vendor, m.gpu.adapter.architecture, m.gpu.adapter.description].filter(Boolean).join(' / ') || 'unknown adapter';
  return {
    iteration: res.metrics.iteration,
    seconds: res.metrics.seconds,
    adapter,
    kernels,
    unavailable: kernels
      ? undefined
      : `this GPU adapter (${adapter}) does not expose the WebGPU feature timestamp-query, so per-kernel GPU times cannot be measured; only the phase wall times are shown`,
  };
}

/** The notice of a loop event that changed the run's state: a rollback, or a recovery on a new device. */
export function loopNotice(e: Extract<RunLoopEvent, { kind: 'rollback' | 'recovered' }>): Notice {
  return e.kind === 'rollback'
    ? {
        code: 'ROLLBACK',
        iteration: e.to,
        message: `Iterations ${e.to}-${e.from - 1} had non-finite losses or gradients (their steps were skipped); the run went back to iteration ${e.to}, its last good one, and continues with a new random draw.`,
        hint: 'If it happens again, lower the learning rate or the clip range, or set a target KL.',
      }
    : {
        code: 'DEVICE_LOST',
        iteration: e.iteration,
        message: `The GPU device was lost (${e.reason}). The run resumed on a new device from iteration ${e.iteration}, its last good one; no saved data was lost.`,
        hint: LOST_AGAIN,
      };
}

/** The notice of a device lost while a new run saved its first checkpoint (the run starts again). */
export const firstSaveLostNotice = (reason: string): Notice => ({
  code: 'DEVICE_LOST',
  message: `The GPU device was lost (${reason}) while the new run saved its first checkpoint. It started again on a new device from the same seed; nothing was lost.`,
  hint: LOST_AGAIN,
});

const LOST_AGAIN = 'If it keeps happening, close other GPU-heavy tabs or lower episodes / max new tokens.';

/** Calls a listener; one that fails or went away (the page of a worker's comlink proxy) is ignored. */
export function emitTo<K extends keyof RunEvents>(events: Partial<RunEvents>, k: K, e: Parameters<RunEvents[K]>[0]): void {
  const f = events[k] as ((x: typeof e) => unknown) | undefined;
  try {
    void Promise.resolve(f?.call(events, e)).catch(() => {});
  } catch {
    /* the page went away */
  }
}

/** An iteration as the front end hears of it; kernels: its per-kernel table when it was profiled (null: no timestamps). */
export function iterationEvent(m: SessionModel, res: IterationResult, kernels: KernelTime[] | null | undefined): IterationEvent {
  const it = res.metrics.iteration;
  const first = res.metrics.skipped.find((x) => hadNonFiniteSkip([x]));
  return {
    metrics: res.metrics,
    episodes: res.episodes.map(summarize),
    notice: first
      ? `iteration ${it} had non-finite values (${first}); it is not kept (a rollback or reload goes back to the iteration before it)`
      : undefined,
    profile: kernels === undefined ? undefined : iterationProfile(m, res, kernels),
  };
}

/** The status message after a pause or stop abandoned the iteration in flight. */
export const abandonedMessage = (ab: IterationAbandoned, lastCheckpoint: string | null): string =>
  `${messageWithoutHint(ab.message)}${ab.reloaded ? ` (reloaded from its checkpoint ${lastCheckpoint ?? ''})` : ''}; Continue re-runs it`;
