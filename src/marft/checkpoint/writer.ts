// The run loop's checkpoints: a snapshot in memory after every good iteration (one readback, awaited: the
// GPU is idle between iterations, so it costs a round trip), written to the store on a cadence
// (runLoop.checkpointEvery iterations or checkpointSeconds, whichever comes first) and whenever the loop
// asks (pause, stop, the end, after a rollback or a recovery). A write (encoding, checksums, the files)
// runs in the background, overlapping the next iteration; writes go one at a time and in order, each
// committing by replacing `latest` last (writeCheckpoint), so a crash leaves the newest complete one. The
// snapshot in memory serves every reload that does not outlive the page or process (a rollback, an
// abandoned update, an environment failure, a lost device), so only a crash loses iterations: those since
// the last write.

import type { Gpu } from '../../gpu/gpu.ts';
import type { ModelConfig } from '../../model/config.ts';
import { type CheckpointStore, memoryStore } from '../../platform/storage/store.ts';
import type { TrainState } from '../state.ts';
import { type CapturedCheckpoint, type SavedCheckpoint, captureCheckpoint, loadCheckpoint, writeCheckpoint } from './checkpoint.ts';

export interface Cadence {
  every: number;
  seconds: number;
}

export interface WriterOptions {
  store: CheckpointStore;
  dir: string;
  baseModel: string;
  keep: number;
  cadence: Cadence;
  onSaving?: (iteration: number) => void;
  onSaved?: (saved: SavedCheckpoint) => void;
  /** A write failed (the loop pauses at its next boundary, or its caller learns it from `written`). */
  onFailed?: (iteration: number) => void;
  /** A clock in ms (tests pass their own). */
  now?: () => number;
}

/** 'cadence': write when the cadence asks; 'now': always; 'stored': never, the store holds it already (a resume). */
export type WriteWhen = 'cadence' | 'now' | 'stored';

export class CheckpointWriter {
  /** The newest snapshot (its tensors on the CPU), or null before the first. */
  private memo: CapturedCheckpoint | null = null;
  /** The newest iteration written or being written, and when its write was asked for. */
  private scheduled = -1;
  private scheduledAt: number;
  private chain: Promise<void> = Promise.resolve();
  /** The first write that failed, with its iteration; later writes are not attempted. */
  private failed: { iteration: number; error: unknown } | null = null;
  private readonly now: () => number;

  constructor(private readonly o: WriterOptions) {
    this.now = o.now ?? (() => performance.now());
    this.scheduledAt = this.now();
  }

  /**
   * The state, as of now, is the one to go back to: snapshots it (resolving once its tensors are on the
   * CPU; a lost device rejects, and the previous snapshot stays) and writes it when `when` says so.
   * `taken`: a snapshot of exactly this state made earlier (the caller's), used instead of a readback.
   */
  async snapshot(gpu: Gpu, state: TrainState, when: WriteWhen, taken?: CapturedCheckpoint): Promise<void> {
    const write = when === 'now' || (when === 'cadence' && this.due(state.iteration));
    if (write) this.o.onSaving?.(state.iteration); // before the readback: a fault-injection hook may end the device here
    const c = taken ?? captureCheckpoint(gpu, state, this.o.baseModel);
    await c.read;
    this.memo = c;
    if (when === 'stored') {
      this.scheduled = c.iteration;
      this.scheduledAt = this.now();
    }
    if (write) this.schedule(c);
  }

  /** Whether the cadence asks for a write of iteration `iteration`'s snapshot. */
  private due(iteration: number): boolean {
    if (iteration <= this.scheduled) return false;
    const { every, seconds } = this.o.cadence;
    return (every > 0 && iteration - this.scheduled >= every) || (seconds > 0 && this.now() - this.scheduledAt >= seconds * 1000);
  }

  /** Starts writing the newest snapshot (after the writes before it) unless it is written already. */
  persist(): void {
    const c = this.memo;
    if (!c || c.iteration === this.scheduled) return;
    this.o.onSaving?.(c.iteration);
    this.schedule(c);
  }

  private schedule(c: CapturedCheckpoint): void {
    this.scheduled = c.iteration;
    this.scheduledAt = this.now();
    this.chain = this.chain.then(async () => {
      if (this.failed) return;
      try {
        const saved = await writeCheckpoint(await c.ready, this.o.store, this.o.dir, this.o.keep); // not inside `onSaved?.(…)`: skipped without a listener
        this.o.onSaved?.(saved);
      } catch (error) {
        this.failed = { iteration: c.iteration, error };
        this.o.onFailed?.(c.iteration);
      }
    });
  }

  /** Waits for the writes asked for so far; the first that failed, if any (it stays). */
  async settle(): Promise<{ iteration: number; error: unknown } | null> {
    await this.chain;
    return this.failed;
  }

  /** The newest snapshot, or null before the first. */
  get newest(): CapturedCheckpoint | null {
    return this.memo;
  }

  /** A write failed (known without waiting). */
  get failure(): { iteration: number; error: unknown } | null {
    return this.failed;
  }

  /** The newest snapshot as a new state on `gpu` (a new device after a loss works too); the store's latest before the first. */
  async restore(gpu: Gpu, model: ModelConfig): Promise<TrainState> {
    if (this.memo) return loadCheckpoint(gpu, memoryStore((await this.memo.ready).files), '', model);
    await this.chain;
    return loadCheckpoint(gpu, this.o.store, this.o.dir, model);
  }
}
