// The training loop with its guards, shared by the CLI and the lab's worker (and testable on its own):
// iterations until a target (or until `halt` says so at an iteration boundary, or `interrupt` mid-iteration:
// pause, stop), checkpoints, and four recoveries. The policy (checkpoint cadence, checkpoints kept,
// rollbackAfter, maxRecoveries) is the run config's runLoop section, so the lab and the CLI guard a run alike.
// Checkpoints (checkpoint/writer.ts): after every good iteration the state is snapshotted into memory (one
// readback); it is written to the store every runLoop.checkpointEvery iterations or checkpointSeconds, and
// always at the loop's end (a pause, a stop, the target) and after a rollback or a recovery. A write runs
// beside the next iteration; the one at the loop's end is waited for, or with writeBehind left to finish
// after the loop returns (its result in `written`). Every reload below comes from the snapshot in memory,
// so only a crash of the page or process loses iterations: those since the last write.
//   1. A non-finite loss or gradient skips the step (update.ts) and the iteration is not kept;
//      runLoop.rollbackAfter such iterations in a row go back to the last good one (a fresh RNG draw, so
//      the rolled-back run does not replay the same failure).
//   2. A lost GPU device (GpuError DEVICE_LOST, or Gpu.lostReason set once the failed call returns):
//      `reopen` gives a new device with the model on it, and the run goes back to its last good iteration;
//      the iteration in flight is run again, so no iteration is lost or counted twice in the history
//      (runLoop.maxRecoveries losses in a row at most).
//   3. A checkpoint that cannot be written (disk full, quota exceeded, permissions): the loop stops with
//      RunPaused (MarftError RUN_PAUSED) naming the cause, at the first iteration boundary after the failed
//      write; the last good checkpoint is untouched, since a write commits by replacing `latest` last.
//   4. An environment that fails mid-iteration (EnvError: a user's module threw, hung, ran out of memory,
//      returned a malformed or non-deterministic result): the iteration is dropped, the state goes back to
//      the last good iteration (the RNG had moved on), and the loop stops with RunPaused (reason 'environment').
// A pause or stop asked for mid-iteration (`interrupt`, asked between decode steps, scoring chunks and
// minibatches) abandons the iteration in flight (IterationAbandoned) and the loop returns at the last
// completed iteration: before the update only the RNG had moved, so its state is put back; once the update
// began the weights had moved, so the last good iteration is restored. The next run of the loop re-runs that
// iteration from the same state, with the numbers an uninterrupted run gives.
// Before the first iteration the loop saves the starting state when the run folder has no checkpoint of
// it. A device lost during that first save (a Step right after resuming an older checkpoint or an imported
// one) reloads the state from `origin`, where it was loaded from, and saves again: the run folder's latest
// checkpoint is another iteration. The loop starts from a snapshot of the state taken before it when the
// caller holds one (`snapshot`: a new run's first save, the last loop's, which it returns), so a Step reads
// the state back once, after its iteration.

import type { Gpu } from '../gpu/gpu.ts';
import { GpuError } from '../gpu/errors.ts';
import { EnvError } from '../envs/errors.ts';
import type { Envs } from '../envs/registry.ts';
import type { KernelTime } from '../common/profile-table.ts';
import type { ModelConfig } from '../model/config.ts';
import type { Decoder } from '../model/decoder.ts';
import type { LoadedTokenizer } from '../model/tokenizer.ts';
import { type CapturedCheckpoint, listCheckpoints, loadCheckpoint } from './checkpoint/checkpoint.ts';
import { CheckpointWriter } from './checkpoint/writer.ts';
import { MarftError } from './errors.ts';
import { type TrainState, releaseTrainState } from './state.ts';
import { errorMessage } from '../common/errors.ts';
import type { CheckpointStore } from '../platform/storage/store.ts';
import { type IterationResult, type Phase, Trainer } from './trainer.ts';

/** What the loop trains with: a device and the base model on it. */
export interface RunSession {
  gpu: Gpu;
  /** The session's environments (its sandbox for users' modules and code). */
  envs: Envs;
  decoder: Decoder;
  tokenizer: LoadedTokenizer;
  model: ModelConfig;
}

export type RunLoopEvent =
  | { kind: 'saving'; iteration: number }
  | { kind: 'saved'; iteration: number; checkpoint: string }
  | { kind: 'save-failed'; iteration: number }
  | { kind: 'skipped'; iteration: number; steps: string[] }
  | { kind: 'rollback'; from: number; to: number }
  | { kind: 'recovered'; reason: string; iteration: number };

export interface RunLoopOptions {
  store: CheckpointStore;
  /** The run folder in the store. */
  dir: string;
  /** base_model_name_or_path of the saved adapters. */
  baseModel: string;
  /** Checkpoints kept (saveCheckpoint's keep); default config.runLoop.keepCheckpoints (`marft train --keep` overrides it). */
  keep?: number;
  /** The write cadence; default config.runLoop.checkpointEvery and checkpointSeconds. */
  checkpointEvery?: number;
  checkpointSeconds?: number;
  /** Train until state.iteration reaches this. */
  until: number;
  /** Asked before every iteration: true ends the loop there (a pause or stop asked for meanwhile). */
  halt?: () => boolean;
  /** Asked between decode steps, scoring chunks and minibatches: true abandons the iteration in flight (see the header). */
  interrupt?: () => boolean;
  /** A new device with the model loaded, after a device loss; without it a loss ends the loop. */
  reopen?: (reason: string) => Promise<RunSession>;
  /**
   * After every iteration, before a rollback it caused; `kept`: the iteration was good, so it is the state
   * a reload goes back to (written to the store on the cadence; the 'saved' event says when).
   */
  onIteration?: (result: IterationResult, kept: boolean) => void;
  /** With the state and session in use after the event (a new one after a rollback or a recovery). */
  onEvent?: (event: RunLoopEvent, ctx: { state: TrainState; session: RunSession }) => void;
  /** The trainer's progress, with the current state and session (fault-injection tests hook in here). */
  onProgress?: (phase: Phase, detail: string, ctx: { state: TrainState; session: RunSession }) => void;
  /** The trainer's maxTokens. */
  maxTokens?: number;
  /** Where `state` was loaded from when the run folder has no checkpoint of it yet (a resume); see the header. */
  origin?: { store: CheckpointStore; dir: string };
  /**
   * Asked before each iteration: whether its GPU work is timed per kernel (Gpu.startProfile: every dispatch
   * in a pass of its own, so it runs slower). An attempt that fails (a lost device) keeps the answer for
   * its retry. The times go to onProfile before onIteration; null kernels: the device lacks timestamp-query.
   */
  profile?: (iteration: number) => boolean;
  onProfile?: (iteration: number, kernels: KernelTime[] | null) => void;
  /**
   * Return at a pause, a stop or the end without waiting for the last checkpoint's write (the lab: the run
   * shows paused at once); `written` settles with it. Without it the loop returns once the write is done.
   */
  writeBehind?: boolean;
  /**
   * A snapshot of `state` exactly as it is (the caller's first save, or the last loop's `snapshot`): the loop
   * starts from it instead of reading the state back. Ignored unless it is of `state.iteration`.
   */
  snapshot?: CapturedCheckpoint | null;
}

export interface RunLoopResult {
  state: TrainState;
  session: RunSession;
  rollbacks: number;
  recoveries: number;
  /** The iteration abandoned by `interrupt` (the state is back at the one before it), or null. */
  abandoned: IterationAbandoned | null;
  /**
   * The last checkpoint's write: null once it is in the store, or the pause its failure means (with
   * writeBehind it may still be running; without it, it has settled and a failure was thrown instead).
   */
  written: Promise<RunPaused | null>;
  /** The snapshot of the returned state, for the next loop on it (`snapshot`); null when the newest is of another iteration. */
  snapshot: CapturedCheckpoint | null;
}

/** The loop stopped because a checkpoint could not be written; `state` and `session` are the live ones. */
export class RunPaused extends MarftError {
  constructor(
    message: string,
    readonly state: TrainState,
    readonly session: RunSession,
    override readonly cause: unknown,
    readonly reason: 'storage' | 'environment' = 'storage',
    hint?: string,
  ) {
    super('RUN_PAUSED', message, hint);
  }
}

/** The iteration in flight was dropped for a pause or stop; `reloaded`: from the last checkpoint (the update had begun). */
export class IterationAbandoned extends MarftError {
  constructor(
    readonly iteration: number,
    readonly reloaded = false,
  ) {
    super(
      'ITERATION_ABANDONED',
      `the iteration in flight was abandoned; the run is back at ${iteration} completed iteration${iteration === 1 ? '' : 's'}`,
    );
  }
}

const NON_FINITE = /non-finite|NaN|Infinity/;

/** Did this iteration skip a step for a non-finite loss or gradient? */
export const hadNonFiniteSkip = (skipped: readonly string[]): boolean => skipped.some((x) => NON_FINITE.test(x));

/**
 * The device's loss reason when `e` came from a lost device. device.lost resolves asynchronously (in a
 * browser a destroyed device may first surface as a failed mapAsync or a validation error), so this
 * waits for it a moment before deciding.
 */
export async function lostReason(gpu: Gpu, e: unknown): Promise<string | null> {
  const known = e instanceof GpuError && e.code === 'DEVICE_LOST';
  for (let i = 0; i < 30 && !known && gpu.lostReason === null; i++) await new Promise((r) => setTimeout(r, 100));
  return gpu.lostReason ?? (known ? e.message : null);
}

export async function runLoop(session: RunSession, state: TrainState, o: RunLoopOptions): Promise<RunLoopResult> {
  const { rollbackAfter, maxRecoveries, keepCheckpoints, checkpointEvery, checkpointSeconds } = state.config.runLoop;
  let rollbacks = 0;
  let recoveries = 0;
  let lostInRow = 0;
  let badRun = 0;
  let phase: Phase | null = null; // of the iteration in flight: from 'update' on, the weights may have moved
  const trainer = (): Trainer =>
    new Trainer({
      gpu: session.gpu,
      envs: session.envs,
      decoder: session.decoder,
      tokenizer: session.tokenizer,
      state,
      maxTokens: o.maxTokens,
      onProgress: (p, detail) => {
        phase = p;
        o.onProgress?.(p, detail, { state, session });
      },
      interrupt: () => {
        if (o.interrupt?.()) throw new IterationAbandoned(state.iteration);
      },
    });
  const event = (e: RunLoopEvent): void => o.onEvent?.(e, { state, session });
  const writer = new CheckpointWriter({
    store: o.store,
    dir: o.dir,
    baseModel: o.baseModel,
    keep: o.keep ?? keepCheckpoints,
    cadence: { every: o.checkpointEvery ?? checkpointEvery, seconds: o.checkpointSeconds ?? checkpointSeconds },
    onSaving: (iteration) => event({ kind: 'saving', iteration }),
    onSaved: (saved) => event({ kind: 'saved', iteration: saved.manifest.iteration, checkpoint: saved.name }),
    onFailed: (iteration) => event({ kind: 'save-failed', iteration }),
  });
  /** Waits for the writes asked for; a failed one pauses the run. */
  const settle = async (): Promise<void> => {
    const failed = await writer.settle();
    if (!failed) return;
    const e = failed.error;
    const latest = (await listCheckpoints(o.store, o.dir).catch(() => [])).find((c) => c.latest);
    throw new RunPaused(
      `training paused at iteration ${state.iteration}: the checkpoint of iteration ${failed.iteration} could not be written to ${o.store.name} (${errorMessage(e).split('\n')[0]}). ` +
        `The last good checkpoint is ${latest ? `${latest.name} (iteration ${latest.iteration})` : 'none'}; nothing saved was changed.`,
      state,
      session,
      e,
    );
  };
  /** Writes the newest snapshot now (unless written) and waits for it. */
  const flush = async (): Promise<void> => {
    writer.persist();
    await settle();
  };
  /** The loop's last write: waited for, or (writeBehind) left running, its failure as a settled value. */
  const finalWrite = async (): Promise<{ written: Promise<RunPaused | null> }> => {
    writer.persist();
    const written = settle().then(
      () => null,
      (e: unknown) => {
        if (e instanceof RunPaused) return e;
        throw e;
      },
    );
    if (!o.writeBehind) {
      const failed = await written;
      if (failed) throw failed;
    }
    return { written }; // wrapped: an async function's result would wait for a promise it returns
  };
  /** The newest snapshot when it is of the state as it is (a bad iteration moves the state past it). */
  const newest = (): CapturedCheckpoint | null => (writer.newest?.iteration === state.iteration ? writer.newest : null);
  /** Back to the newest snapshot (in memory; the store's latest when the snapshot died with the device). */
  const reload = async (): Promise<void> => {
    state = await writer.restore(session.gpu, session.model);
  };

  /** The environment failed: back to the last snapshot, paused (nothing of the iteration was kept). */
  const envPaused = async (e: EnvError): Promise<RunPaused> => {
    releaseTrainState(session.gpu, state);
    await reload();
    await flush();
    return new RunPaused(
      `training paused at iteration ${state.iteration}: ${e.message.split('\n')[0]}. The run is back at its last checkpoint (iteration ${state.iteration}); nothing saved was lost.`,
      state,
      session,
      e,
      'environment',
      e.hint,
    );
  };

  let t = trainer();
  /** After a lost device: a new session, the last snapshot (or `from`), a new trainer. False when not recoverable. */
  const recoverFrom = async (reason: string | null, from?: { store: CheckpointStore; dir: string }): Promise<boolean> => {
    if (reason === null || !o.reopen || ++lostInRow > maxRecoveries) return false;
    session = await o.reopen(reason);
    state = from
      ? await loadCheckpoint(session.gpu, from.store, from.dir, session.model)
      : await writer.restore(session.gpu, session.model);
    recoveries++;
    event({ kind: 'recovered', reason, iteration: state.iteration });
    t = trainer();
    await writer.snapshot(session.gpu, state, 'now'); // the state came back from elsewhere: stored before the next iteration risks it
    return true;
  };
  /** Whether `e` is a lost device that was recovered from (`from`, else the newest snapshot). */
  const recovered = async (e: unknown, from?: { store: CheckpointStore; dir: string }): Promise<boolean> =>
    !(e instanceof RunPaused) && recoverFrom(await lostReason(session.gpu, e), from);
  const latest = (await listCheckpoints(o.store, o.dir)).find((c) => c.latest);
  const taken = o.snapshot?.iteration === state.iteration ? o.snapshot : undefined;
  if (!latest || latest.iteration !== state.iteration) {
    for (;;) {
      try {
        await writer.snapshot(session.gpu, state, 'now', taken);
        await flush();
        break;
      } catch (e) {
        if (!o.origin || !(await recovered(e, o.origin))) throw e; // recoverFrom snapshotted the reloaded state
        await flush();
        break;
      }
    }
  } else {
    await writer.snapshot(session.gpu, state, 'stored', taken);
  }

  let retryProfile = false;
  while (state.iteration < o.until && !(o.halt?.() ?? false)) {
    if (writer.failure) await settle(); // a background write failed: pause before training on without a checkpoint
    let res: IterationResult;
    const profiled: boolean = retryProfile || (o.profile?.(state.iteration) ?? false);
    const timed = profiled && session.gpu.hasTimestamps;
    retryProfile = false;
    if (timed) session.gpu.startProfile();
    const rngAt = state.rng.state;
    phase = null;
    try {
      res = await t.iteration();
    } catch (e) {
      if (timed) void session.gpu.stopProfile().catch(() => {});
      if (e instanceof IterationAbandoned) {
        if (phase !== 'update') state.rng.state = rngAt;
        else {
          releaseTrainState(session.gpu, state);
          await reload();
        }
        const { written } = await finalWrite();
        const abandoned = new IterationAbandoned(state.iteration, phase === 'update');
        return { state, session, rollbacks, recoveries, abandoned, written, snapshot: newest() };
      }
      retryProfile = profiled;
      if (e instanceof EnvError) throw await envPaused(e);
      if (!(await recovered(e))) throw e;
      continue;
    }
    if (profiled) o.onProfile?.(res.metrics.iteration, timed ? await session.gpu.stopProfile() : null);
    lostInRow = 0;
    const bad = hadNonFiniteSkip(res.metrics.skipped);
    badRun = bad ? badRun + 1 : 0;
    if (bad) event({ kind: 'skipped', iteration: res.metrics.iteration, steps: res.metrics.skipped });
    if (badRun >= rollbackAfter) {
      o.onIteration?.(res, false);
      const from = state.iteration;
      releaseTrainState(session.gpu, state);
      await reload();
      state.rng.next(); // a different draw, so the rolled-back run does not replay the same failure
      rollbacks++;
      badRun = 0;
      event({ kind: 'rollback', from, to: state.iteration });
      t = trainer();
      await writer.snapshot(session.gpu, state, 'now'); // the new draw is part of the state to go back to
      continue;
    }
    if (!bad) {
      try {
        await writer.snapshot(session.gpu, state, 'cadence');
      } catch (e) {
        // lost while reading the state back: the iteration runs again from the snapshot before it
        if (!(await recovered(e))) throw e;
        continue;
      }
    }
    o.onIteration?.(res, !bad);
  }
  const { written } = await finalWrite();
  return { state, session, rollbacks, recoveries, abandoned: null, written, snapshot: newest() };
}
