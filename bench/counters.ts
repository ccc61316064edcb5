// The Gpu's running counters (dispatches, read()s, queue submits) turned into per-step figures for the
// benches: a snapshot, the difference between two, and a per-phase split of a trainer iteration taken at
// the trainer's onProgress phase changes (each phase announces itself before its first dispatch).

import type { KernelTime } from '../src/common/profile-table.ts';
import type { Gpu } from '../src/gpu/gpu.ts';
import type { Phase } from '../src/marft/trainer.ts';

export interface Counts { dispatches: number; reads: number; submits: number; copies: number; passes: number }

export const counts = (gpu: Gpu): Counts => ({ dispatches: gpu.dispatchCount, reads: gpu.readCount, submits: gpu.submitCount, copies: gpu.copyCount, passes: gpu.passCount });

export const since = (gpu: Gpu, c0: Counts): Counts => {
  const c = counts(gpu);
  return { dispatches: c.dispatches - c0.dispatches, reads: c.reads - c0.reads, submits: c.submits - c0.submits, copies: c.copies - c0.copies, passes: c.passes - c0.passes };
};

/**
 * Counts per phase of trainer iterations: pass `onProgress` to the Trainer, call `begin()` before an
 * iteration and `end()` after it; the result holds each phase's counts and the whole iteration's.
 */
export class PhaseCounter {
  private at: Counts | null = null;
  private phase: Phase | null = null;
  private split: Partial<Record<Phase, Counts>> = {};
  private start: Counts | null = null;
  constructor(private readonly gpu: Gpu) {}

  readonly onProgress = (phase: Phase): void => {
    if (phase === this.phase || !this.at) return;
    this.close();
    this.phase = phase;
    this.at = counts(this.gpu);
  };

  begin(): void {
    this.start = this.at = counts(this.gpu);
    this.phase = null;
    this.split = {};
  }

  end(): { phases: Partial<Record<Phase, Counts>>; iteration: Counts } {
    this.close();
    const iteration = since(this.gpu, this.start!);
    this.at = null;
    return { phases: this.split, iteration };
  }

  private close(): void {
    if (this.phase && this.at) this.split[this.phase] = since(this.gpu, this.at);
  }
}

/** One line: "N dispatches, R readbacks, S submits, C copies, P passes". */
export const countsLine = (c: Counts): string => `${c.dispatches} dispatches, ${c.reads} readbacks, ${c.submits} submits, ${c.copies} copies, ${c.passes} passes`;

/**
 * Per-kernel GPU time per phase of a trainer iteration: between begin() and end() the Gpu profiles, and each
 * phase change (onProgress) closes the running profile and starts the next phase's.
 */
export class PhaseProfile {
  private phase: Phase | null = null;
  private parts: Array<[Phase | 'start', Promise<KernelTime[]>]> | null = null;
  constructor(private readonly gpu: Gpu) {}

  readonly onProgress = (phase: Phase): void => {
    if (!this.parts || phase === this.phase) return;
    this.parts.push([this.phase ?? 'start', this.gpu.stopProfile()]);
    this.gpu.startProfile();
    this.phase = phase;
  };

  begin(): void {
    this.parts = [];
    this.phase = null;
    this.gpu.startProfile();
  }

  async end(): Promise<Array<[Phase | 'start', KernelTime[]]>> {
    const parts = this.parts!;
    parts.push([this.phase ?? 'start', this.gpu.stopProfile()]);
    this.parts = null;
    return Promise.all(parts.map(async ([p, t]) => [p, await t] as [Phase | 'start', KernelTime[]]));
  }
}
