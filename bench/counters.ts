// The Gpu's running counters (dispatches, read()s, queue submits) turned into per-step figures for the
// benches: a snapshot, the difference between two, and a per-phase split of a trainer iteration taken at
// the trainer's onProgress phase changes (each phase announces itself before its first dispatch).

import type { KernelTime } from '../src/common/profile-table.ts';
import type { Gpu } from '../src/gpu/gpu.ts';
import type { Phase } from '../src/marft/trainer.ts';

export interface Counts {
  dispatches: number;
  reads: number;
  submits: number;
  copies: number;
  passes: number;
}

export const counts = (gpu: Gpu): Counts => ({
  dispatches: gpu.dispatchCount,
  reads: gpu.readCount,
  submits: gpu.submitCount,
  copies: gpu.copyCount,
  passes: gpu.passCount,
});

export const since = (gpu: Gpu, c0: Counts): Counts => {
  const c = counts(gpu);
  return {
    dispatches: c.dispatches - c0.dispatches,
    reads: c.reads - c0.reads,
    submits: c.submits - c0.submits,
    copies: c.copies - c0.copies,
    passes: c.passes - c0.passes,
  };
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
export const countsLine = (c: Counts): string =>
  `${c.dispatches} dispatches, ${c.reads} readbacks, ${c.submits} submits, ${c.copies} copies, ${c.passes} passes`;

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

/** Where one phase's JS-thread time went (PhaseCpu): ms and calls. */
export interface CpuSplit {
  wallMs: number;
  /** Gpu.run: recording dispatches (bind groups and submits it triggers included). */
  runMs: number;
  runs: number;
  bindGroupMs: number;
  bindGroups: number;
  submitMs: number;
  submits: number;
  /** Awaiting the GPU: readMany (readbacks) and sync. */
  waitMs: number;
  waits: number;
  /** New uniform arenas: each makes every cached bind group of the uniform-taking kernels miss once. */
  arenas: number;
  /** Other new buffers (the pool's, staging): a bind group naming one is new too. */
  buffers: number;
}

/**
 * The JS thread's time per phase of trainer iterations: wall, and within it recording dispatches (Gpu.run),
 * creating bind groups, queue submits and awaiting readbacks. Wraps those methods of this Gpu and its device
 * between begin() and end(). The GPU idles wherever the thread records less than a submit's worth of work
 * after a wait: wall - wait is the thread's own time.
 */
export class PhaseCpu {
  private phase: Phase | null = null;
  private t0 = 0;
  private cur: CpuSplit | null = null;
  private split: Partial<Record<Phase, CpuSplit>> = {};
  private undo: Array<() => void> = [];
  constructor(private readonly gpu: Gpu) {}

  readonly onProgress = (phase: Phase): void => {
    if (!this.cur || phase === this.phase) return;
    this.close();
    this.phase = phase;
    this.open();
  };

  begin(): void {
    this.split = {};
    this.phase = null;
    const timeSync = <K extends string>(
      obj: Record<K, unknown>,
      k: K,
      ms: 'runMs' | 'bindGroupMs' | 'submitMs',
      n: 'runs' | 'bindGroups' | 'submits',
    ): void => {
      const f = obj[k] as (...a: unknown[]) => unknown;
      obj[k] = (...a: unknown[]) => {
        const t = performance.now();
        try {
          return f.apply(obj, a);
        } finally {
          if (this.cur) {
            this.cur[ms] += performance.now() - t;
            this.cur[n]++;
          }
        }
      };
      this.undo.push(() => {
        obj[k] = f;
      });
    };
    const timeWait = <K extends string>(obj: Record<K, unknown>, k: K): void => {
      const f = obj[k] as (...a: unknown[]) => Promise<unknown>;
      obj[k] = async (...a: unknown[]) => {
        const t = performance.now();
        try {
          return await f.apply(obj, a);
        } finally {
          if (this.cur) {
            this.cur.waitMs += performance.now() - t;
            this.cur.waits++;
          }
        }
      };
      this.undo.push(() => {
        obj[k] = f;
      });
    };
    const g = this.gpu as unknown as Record<string, unknown>;
    const dev = this.gpu.device as unknown as Record<string, unknown>;
    timeSync(g, 'run', 'runMs', 'runs');
    timeSync(dev, 'createBindGroup', 'bindGroupMs', 'bindGroups');
    timeSync(this.gpu.device.queue as unknown as Record<string, unknown>, 'submit', 'submitMs', 'submits');
    const createBuffer = dev.createBuffer as (d: GPUBufferDescriptor) => GPUBuffer;
    dev.createBuffer = (d: GPUBufferDescriptor) => {
      if (this.cur) this.cur[d.label === 'uniforms' ? 'arenas' : 'buffers']++;
      return createBuffer.call(dev, d);
    };
    this.undo.push(() => {
      dev.createBuffer = createBuffer;
    });
    timeWait(g, 'readMany');
    timeWait(g, 'sync');
    this.open();
  }

  end(): Partial<Record<Phase, CpuSplit>> {
    this.close();
    this.cur = null;
    for (const u of this.undo.splice(0).reverse()) u();
    return this.split;
  }

  private open(): void {
    this.t0 = performance.now();
    this.cur = {
      wallMs: 0,
      runMs: 0,
      runs: 0,
      bindGroupMs: 0,
      bindGroups: 0,
      submitMs: 0,
      submits: 0,
      waitMs: 0,
      waits: 0,
      arenas: 0,
      buffers: 0,
    };
  }

  private close(): void {
    if (!this.cur) return;
    this.cur.wallMs = performance.now() - this.t0;
    if (this.phase) this.split[this.phase] = this.cur;
  }
}

/** One line: "wall W ms: run() R ms (n), bind groups B ms (n), submits S ms (n), waiting X ms (n), new buffers N, new uniform arenas A". */
export const cpuLine = (c: CpuSplit): string =>
  `wall ${c.wallMs.toFixed(1)} ms: run() ${c.runMs.toFixed(1)} ms (${c.runs}), bind groups ${c.bindGroupMs.toFixed(1)} ms (${c.bindGroups}), ` +
  `submits ${c.submitMs.toFixed(1)} ms (${c.submits}), waiting ${c.waitMs.toFixed(1)} ms (${c.waits}), new buffers ${c.buffers}, new uniform arenas ${c.arenas}`;
