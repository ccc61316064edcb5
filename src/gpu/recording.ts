// Dispatches recorded once (Gpu.startRecording .. stopRecording) and replayed as they are: the pipelines and
// bind groups, hence the buffers, fixed. Every buffer released while recording stays out of the pool until
// dispose(), so what the commands read and write belongs to them alone; the caller keeps the buffers it was
// handed (e.g. a forward's outputs) until then, and keeps per-call values out of the uniforms (kernels read
// them from buffers). A decode step recorded once replays with no JS work but three calls a dispatch.

import type { DispatchOp } from './deferred.ts';
import { GpuError } from './errors.ts';

export type RecordedStep = DispatchOp & { label: string };

export class Recording {
  disposed = false;
  /** release: gives a held buffer back to the pool. */
  constructor(
    readonly steps: readonly RecordedStep[],
    readonly held: readonly GPUBuffer[],
    private readonly release: (b: GPUBuffer) => void,
  ) {}

  /** Returns the buffers released while recording to the pool; later replays throw. */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    for (const b of this.held) this.release(b);
  }
}

/** The recording being made, if any: its steps, and the buffers released meanwhile. */
export class Recorder {
  private current: { steps: RecordedStep[]; held: GPUBuffer[] } | null = null;

  get active(): boolean {
    return this.current !== null;
  }

  start(): void {
    this.current = { steps: [], held: [] };
  }

  stop(release: (b: GPUBuffer) => void): Recording {
    const r = this.current;
    if (!r) throw new GpuError('RECORDING', 'stopRecording without startRecording');
    this.current = null;
    return new Recording(r.steps, r.held, release);
  }

  step(s: RecordedStep): void {
    this.current?.steps.push(s);
  }

  /** Keeps a buffer released while recording: a replay still uses it, so the pool gets it at dispose(). */
  hold(b: GPUBuffer): boolean {
    if (!this.current) return false;
    this.current.held.push(b);
    return true;
  }

  /** Throws for work a recording cannot hold (copies, clears, writes, reads): it holds dispatches only. */
  refuse(what: string): void {
    if (this.current) throw new GpuError('RECORDING', `${what} while recording dispatches: a recording holds dispatches only`);
  }
}
