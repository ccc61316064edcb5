// The command stream: one encoder and one open compute pass that dispatches are recorded into, submitted
// together at the next wait point, or unasked after enough dispatches (submit pacing). Work that needs a
// pipeline still being made waits in order in a deferred list (deferred.ts) and is encoded by flush(). While
// profiling, each dispatch gets a pass of its own bracketed by timestamps (profiler.ts).

import { type DeferredOp, type DispatchOp, copyBytes } from './deferred.ts';
import type { PipelineEntry } from './pipelines.ts';
import { type Program, kernelName } from './program.ts';
import { Profiler } from './profiler.ts';

/**
 * Dispatches recorded before the stream submits them unasked: a long stretch between two reads (a forward and
 * backward of thousands of dispatches) then runs on the GPU while the rest is still being encoded, instead of
 * after all of it. On an H200 the 135M update's GPU time was 290 ms of its 480.
 */
export const SUBMIT_EVERY = 256;
/**
 * After a wait (a readback, sync) the GPU idles until the first submit, so the first unasked one comes after
 * SUBMIT_FIRST dispatches and each next after twice as many, up to SUBMIT_EVERY: the GPU starts after a few
 * dispatches' encoding, not 256 (at 60-100 µs a dispatch in Node, 15-25 ms of a 135M update's start).
 */
export const SUBMIT_FIRST = 16;

export class CommandStream {
  /** Queue submits and compute passes begun: the benches count them. */
  submitCount = 0;
  passCount = 0;
  /** Set while profiling: every dispatch is timed in a pass of its own. */
  profiler: Profiler | null = null;
  /** Work waiting for a pipeline being made, and what follows it, in order; null when none waits. */
  private deferred: DeferredOp[] | null = null;
  /** Set while deferred work is encoded: retired buffers wait for its last submit. */
  private flushing = false;
  private encoder: GPUCommandEncoder | null = null;
  private pass: GPUComputePassEncoder | null = null;
  /** The pipeline the open pass has set: a dispatch of the same pipeline does not set it again. */
  private passPipeline: GPUComputePipeline | null = null;
  /** The dynamic offset of the dispatch being encoded (setBindGroup's offsets, without an array per dispatch). */
  private readonly offsetScratch = new Uint32Array(1);
  /** Dispatches since the last submit, and how many make the next unasked one (SUBMIT_FIRST .. SUBMIT_EVERY). */
  private unsubmitted = 0;
  private submitAt = SUBMIT_FIRST;
  private afterSubmit: Array<() => void> = [];

  /**
   * checkAlive: throws if the device is lost (before any encoder is made). afterEachSubmit: what follows a
   * submit (the pool destroys retired buffers), not while deferred work is still being encoded.
   */
  constructor(
    private readonly device: GPUDevice,
    private readonly checkAlive: () => void,
    private readonly afterEachSubmit: () => void,
  ) {}

  /** Whether work is waiting for a pipeline: then copies, clears and writes wait in order too. */
  get waiting(): boolean {
    return this.deferred !== null;
  }

  /**
   * Records one dispatch of `program` (named in a profile), or defers it (and all that follows) while its
   * pipeline is being made. paced: may submit unasked (not while a recording is made, whose dispatches stay in
   * the open encoder).
   */
  dispatch(
    p: PipelineEntry,
    bindGroup: GPUBindGroup,
    offset: number,
    x: number,
    y: number,
    z: number,
    program: Program,
    paced: boolean,
  ): void {
    if (this.deferred === null && p.pipeline === null) this.deferred = [];
    if (this.deferred) {
      this.deferred.push({ kind: 'dispatch', p, bindGroup, offset, x, y, z });
      return;
    }
    this.encodeDispatch(p.pipeline!, bindGroup, offset, x, y, z, this.profiler ? kernelName(program) : '');
    if (paced && ++this.unsubmitted >= this.submitAt) {
      this.submit();
      this.submitAt = Math.min(SUBMIT_EVERY, 2 * this.submitAt);
    }
  }

  /** Records dispatches made before (a recording's steps), in order. */
  replay(steps: ReadonlyArray<DispatchOp & { label: string }>): void {
    if (this.deferred === null && steps.some((s) => s.p.pipeline === null)) this.deferred = [];
    if (this.deferred) {
      this.deferred.push(...steps);
      return;
    }
    for (const s of steps) this.encodeDispatch(s.p.pipeline!, s.bindGroup, s.offset, s.x, s.y, s.z, s.label);
  }

  copy(src: GPUBuffer, srcOffset: number, dst: GPUBuffer, dstOffset: number, bytes: number): void {
    if (this.deferred) {
      this.deferred.push({ kind: 'copy', src, srcOffset, dst, dstOffset, bytes });
      return;
    }
    this.endPass();
    this.getEncoder().copyBufferToBuffer(src, srcOffset, dst, dstOffset, bytes);
  }

  clear(buffer: GPUBuffer, bytes: number): void {
    if (this.deferred) {
      this.deferred.push({ kind: 'clear', buffer, bytes });
      return;
    }
    this.endPass();
    this.getEncoder().clearBuffer(buffer, 0, bytes);
  }

  /** queue.writeBuffer runs before the next submit, so work recorded so far (which may read the buffer) goes first. */
  write(buffer: GPUBuffer, view: ArrayBufferView, offset: number, bytes: number): void {
    if (this.deferred) {
      this.deferred.push({ kind: 'write', buffer, offset, data: copyBytes(view, bytes) });
      return;
    }
    this.submit();
    this.device.queue.writeBuffer(buffer, offset, view.buffer, view.byteOffset, bytes);
  }

  /** Ends the open pass and submits everything encoded so far (deferred work waits for flush()). */
  submit(): void {
    this.unsubmitted = 0;
    if (this.deferred) return;
    this.endPass();
    if (this.encoder) {
      this.device.queue.submit([this.encoder.finish()]);
      this.encoder = null;
      this.submitCount++;
    }
    for (const fn of this.afterSubmit.splice(0)) fn();
    if (!this.flushing) this.afterEachSubmit();
  }

  /** The GPU has been waited for: the next unasked submit comes early again. */
  idle(): void {
    this.submitAt = SUBMIT_FIRST;
  }

  /**
   * Once `ready` resolves (every pipeline made), encodes the deferred work in order and submits it (work
   * deferred meanwhile, by other callers, goes with it). Throws `failed()` when a pipeline could not be made.
   */
  async flush(ready: () => Promise<void>, failed: () => Error): Promise<void> {
    while (this.deferred) {
      await ready();
      const ops = this.deferred;
      if (!ops) return; // another caller's flush encoded it meanwhile (this caller's work with it)
      this.deferred = null;
      if (ops.some((op) => op.kind === 'dispatch' && op.p.pipeline === null)) throw failed();
      this.flushing = true;
      try {
        for (const op of ops) {
          if (op.kind === 'dispatch') this.encodeDispatch(op.p.pipeline!, op.bindGroup, op.offset, op.x, op.y, op.z, null);
          else if (op.kind === 'copy') this.copy(op.src, op.srcOffset, op.dst, op.dstOffset, op.bytes);
          else if (op.kind === 'clear') this.clear(op.buffer, op.bytes);
          else this.write(op.buffer, op.data, op.offset, op.data.byteLength);
        }
        this.submit();
      } finally {
        this.flushing = false;
      }
      this.afterEachSubmit();
    }
  }

  /** Starts timing every dispatch: each one is then encoded as it is recorded, in a pass of its own. */
  startProfile(): void {
    this.profiler ??= new Profiler(this.device);
  }

  /** Stops profiling and submits the timestamp readback; the profiler's report() gives the times. */
  stopProfile(): Profiler | null {
    const p = this.profiler;
    if (!p) return null;
    p.flush(this.getEncoder(), (fn) => this.afterSubmit.push(fn));
    this.profiler = null;
    this.submit();
    return p;
  }

  /** label: the kernel a profiled pass is timed as; null puts the dispatch in the open pass even while profiling. */
  private encodeDispatch(
    pipeline: GPUComputePipeline,
    bindGroup: GPUBindGroup,
    offset: number,
    x: number,
    y: number,
    z: number,
    label: string | null,
  ): void {
    const timed = this.profiler !== null && label !== null;
    const pass = timed ? this.profiledPass(label) : this.openPass();
    if (pipeline !== this.passPipeline) {
      pass.setPipeline(pipeline);
      this.passPipeline = pipeline;
    }
    if (offset >= 0) {
      this.offsetScratch[0] = offset;
      pass.setBindGroup(0, bindGroup, this.offsetScratch, 0, 1);
    } else {
      pass.setBindGroup(0, bindGroup);
    }
    pass.dispatchWorkgroups(x, y, z);
    if (timed) this.endPass();
  }

  private getEncoder(): GPUCommandEncoder {
    this.checkAlive();
    this.encoder ??= this.device.createCommandEncoder({ label: 'marft' });
    return this.encoder;
  }

  /** A pass of its own for one dispatch, bracketed by timestamps (profiling). */
  private profiledPass(label: string): GPUComputePassEncoder {
    const p = this.profiler!;
    this.endPass();
    if (p.full) p.flush(this.getEncoder(), (fn) => this.afterSubmit.push(fn));
    this.pass = this.getEncoder().beginComputePass({ label, timestampWrites: p.next(label)! });
    return this.pass;
  }

  private openPass(): GPUComputePassEncoder {
    if (!this.pass) {
      this.pass = this.getEncoder().beginComputePass({ label: 'marft' });
      this.passCount++;
    }
    return this.pass;
  }

  private endPass(): void {
    if (this.pass) {
      this.pass.end();
      this.pass = null;
      this.passPipeline = null;
    }
  }
}
