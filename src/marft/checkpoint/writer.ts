// The run loop's checkpoints: a snapshot in memory after every good iteration, written to the store on a
// cadence (runLoop.checkpointEvery iterations or checkpointSeconds, whichever comes first) and whenever
// the loop asks (pause, stop, the end, after a rollback or a recovery). A write runs in the background,
// overlapping the next iteration; writes go one at a time and in order, each committing by replacing
// `latest` last (writeCheckpoint), so a crash leaves the newest complete checkpoint. The snapshot in
// memory serves every reload that does not outlive the page or process (a rollback, an abandoned update,
// an environment failure, a lost device), so only a crash loses iterations: those since the last write.

import type { Gpu } from '../../gpu/gpu.ts';
import type { ModelConfig } from '../../model/config.ts';
import { type CheckpointStore, memoryStore } from '../../platform/storage/store.ts';
import type { TrainState } from '../state.ts';
import { type CapturedCheckpoint, type SavedCheckpoint, captureCheckpoint, loadCheckpoint, writeCheckpoint } from './checkpoint.ts';

export interface Cadence { every: number; seconds: number }

export interface WriterOptions {
  store: CheckpointStore;
  dir: string;
  baseModel: string;
  keep: number;
  cadence: Cadence;
  onSaving?: (iteration: number) => void;
  onSaved?: (saved: SavedCheckpoint) => void;
  /** A clock in ms (tests pass their own). */
  now?: () => number;
}

export class CheckpointWriter {
  /** The newest snapshot, and the one before it (a fallback when the newest's readback died with the device). */
  private memo: CapturedCheckpoint | null = null;
  private previous: CapturedCheckpoint | null = null;
  /** The newest iteration written or being written, and when its write was asked for. */
  private scheduled = -1;
  private scheduledAt: number;
  private chain: Promise<void> = Promise.resolve();
  /** The first write that failed (with its iteration); later writes are not attempted. */
  private failed: { iteration: number; error: unknown } | null = null;
  private readonly now: () => number;

  constructor(private readonly o: WriterOptions) {
    this.now = o.now ?? (() => performance.now());
    this.scheduledAt = this.now();
  }

  /** The snapshot's iteration, or -1. */
  get snapshotIteration(): number { return this.memo?.iteration ?? -1; }

  /** The state, as of now, is the one to go back to; `onDisk`: the store already holds it (a resume). */
  snapshot(gpu: Gpu, state: TrainState, onDisk = false): void {
    this.previous = this.memo;
    this.memo = captureCheckpoint(gpu, state, this.o.baseModel);
    if (onDisk) { this.scheduled = state.iteration; this.scheduledAt = this.now(); }
  }

  /** Whether the cadence asks for a write of the snapshot now. */
  get due(): boolean {
    if (!this.memo || this.memo.iteration <= this.scheduled) return false;
    const { every, seconds } = this.o.cadence;
    return (every > 0 && this.memo.iteration - this.scheduled >= every) ||
      (seconds > 0 && this.now() - this.scheduledAt >= seconds * 1000);
  }

  /** Starts writing the snapshot (after the writes before it) unless it is written already; returns at once. */
  persist(): void {
    const c = this.memo;
    if (!c || c.iteration === this.scheduled) return;
    this.scheduled = c.iteration;
    this.scheduledAt = this.now();
    this.o.onSaving?.(c.iteration);
    this.chain = this.chain.then(async () => {
      if (this.failed) return;
      // A capture whose readback died with the device has nothing to write: the loop's recovery restores
      // an older snapshot, so this is not a storage failure.
      const files = await c.ready.catch(() => null);
      if (!files) return;
      try {
        this.o.onSaved?.(await writeCheckpoint(files, this.o.store, this.o.dir, this.o.keep));
      } catch (error) {
        this.failed = { iteration: c.iteration, error };
      }
    });
  }

  /** Waits for the writes asked for so far; the first failure, if any (it stays until the loop ends). */
  async settle(): Promise<{ iteration: number; error: unknown } | null> {
    await this.chain;
    return this.failed;
  }

  /** A write failed (known without waiting). */
  get failure(): { iteration: number; error: unknown } | null { return this.failed; }

  /**
   * The snapshot as a new state on `gpu` (a new device after a loss works too: the snapshot is in memory).
   * When its readback died with the device, the snapshot before it; failing both, the store's latest.
   */
  async restore(gpu: Gpu, model: ModelConfig): Promise<TrainState> {
    for (const c of [this.memo, this.previous]) {
      const files = await c?.ready.catch(() => null);
      if (files) return loadCheckpoint(gpu, memoryStore(files.files), '', model);
    }
    await this.chain;
    return loadCheckpoint(gpu, this.o.store, this.o.dir, model);
  }
}
