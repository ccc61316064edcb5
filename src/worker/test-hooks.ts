// The engine worker's test hooks (the page's marftLab.crashWorker and holdWorker; e2e/reload.spec.ts and
// e2e/export-interrupt.spec.ts): the worker dies, or stops and tells the page, at a chosen point of a run
// or an export, so a test can kill the worker or reload the tab exactly there. A point is a run phase
// (a progress event) or 'export' (an export starting, after it took the ExportGate).
//   crash(point)  at the point's next event: an uncaught error (the page's Worker gets an 'error' event),
//                 then the worker closes itself there.
//   hold(point, iteration, onHeld)  at the point's event (of that iteration, for a run phase) it calls
//                 onHeld and waits. A run phase's event is synchronous code, so that hold blocks the worker's
//                 thread (a busy wait: without cross-origin isolation a worker has no other synchronous
//                 sleep) until the page goes away, HOLD_SPIN_MS at most. The checkpoint phase holds instead
//                 after the first file written into the checkpoint's temporary folder, i.e. mid-write, and
//                 an export as it starts; both wait asynchronously, until release().

import type { ProgressEvent, ProgressPhase } from '../marft/run-events.ts';
import type { CheckpointStore } from '../platform/storage/store.ts';

export type HookPoint = ProgressPhase | 'export';

/** The longest a run phase's hold blocks the worker (a test reloads the tab within seconds). */
export const HOLD_SPIN_MS = 60_000;

/** A checkpoint being written: saveCheckpoint's hidden temporary folder (.tmp-*). */
const IN_TEMP_FOLDER = /(^|\/)\.tmp-[^/]+\//;

export class TestHooks {
  private crashAt: HookPoint | null = null;
  private holdAt: { point: HookPoint; iteration?: number; onHeld: () => void } | null = null;
  /** Armed by a checkpoint-phase hold: the next write into a temporary folder holds after it. */
  private holdWrite: (() => void) | null = null;
  private waiting: Array<() => void> = [];

  constructor(private readonly die: (why: string) => void) {}

  crash(point: HookPoint): void {
    this.crashAt = point;
  }

  hold(point: HookPoint, iteration: number | undefined, onHeld: () => void): void {
    this.holdAt = { point, iteration, onHeld };
  }

  /** Ends the asynchronous holds (a checkpoint write, an export). */
  release(): void {
    for (const go of this.waiting.splice(0)) go();
  }

  /** A run's progress event, before it goes to the page. */
  onProgress(e: ProgressEvent): void {
    if (this.crashAt === e.phase) this.die(`test hook: the engine worker crashed in the ${e.phase} phase`);
    const h = this.holdAt;
    if (!h || h.point !== e.phase || (h.iteration !== undefined && h.iteration !== e.iteration)) return;
    this.holdAt = null;
    if (e.phase === 'checkpoint') {
      this.holdWrite = h.onHeld;
      return;
    }
    h.onHeld(); // posted to the page now, though this thread stays busy
    const end = Date.now() + HOLD_SPIN_MS;
    while (Date.now() < end) {
      // held: the page reloads (ending this worker) within seconds
    }
  }

  /** An export starting. */
  async onExport(): Promise<void> {
    if (this.crashAt === 'export') {
      this.die('test hook: the engine worker crashed during an export');
      await new Promise(() => {}); // closed: nothing more runs
    }
    const h = this.holdAt;
    if (h?.point !== 'export') return;
    this.holdAt = null;
    h.onHeld();
    await this.held();
  }

  /** `store` whose writes into a checkpoint's temporary folder hold when a checkpoint hold is armed. */
  store(store: CheckpointStore): CheckpointStore {
    return {
      ...store,
      write: async (path, data) => {
        await store.write(path, data);
        const onHeld = this.holdWrite;
        if (onHeld === null || !IN_TEMP_FOLDER.test(path)) return;
        this.holdWrite = null;
        onHeld();
        await this.held();
      },
    };
  }

  private held(): Promise<void> {
    return new Promise((go) => this.waiting.push(go));
  }
}
