// The GPU context: one device, its buffer pool, pipeline / uniform / bind-group caches, and a batched
// command encoder. Dispatches are recorded into one open compute pass and submitted together at the next
// read(), write or explicit submit(), so a training step costs few submits and no readback inside it.

import { GpuError, shapeError } from './errors.ts';
import { pack16, unpack16 } from './half.ts';
import { BufferPool } from './pool.ts';
import type { KernelTime } from '../common/profile-table.ts';
import { Profiler } from './profiler.ts';
import { IntKeyCache, intKeyHash } from './int-key-cache.ts';
import { type Dispatch, type Program, encodeUniformsInto } from './program.ts';
import { type DType, type Tensor, byteSize, is16, numel, shapeStr } from './tensor.ts';
import { type DeferredOp, type DispatchOp, copyBytes } from './deferred.ts';

const STORAGE = 0x80 | 0x04 | 0x08; // STORAGE | COPY_SRC | COPY_DST (GPUBufferUsage is absent before init in Node)
const UNIFORM = 0x40 | 0x08; // UNIFORM | COPY_DST
const MAP_READ = 0x01 | 0x08; // MAP_READ | COPY_DST

export interface AdapterSummary {
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  features: string[];
  isFallback: boolean;
}

export function summarizeAdapter(adapter: GPUAdapter): AdapterSummary {
  const info = adapter.info;
  return {
    vendor: info?.vendor ?? '',
    architecture: info?.architecture ?? '',
    device: info?.device ?? '',
    description: info?.description ?? '',
    features: [...adapter.features].sort(),
    isFallback: Boolean((info as { isFallbackAdapter?: boolean } | undefined)?.isFallbackAdapter),
  };
}

/** A pipeline with what a dispatch needs of it, kept per Program object (launchers keep one object per key). */
/** A pipeline and its layout; `pipeline` is null while createComputePipelineAsync makes it. */
interface PipelineEntry {
  pipeline: GPUComputePipeline | null;
  layout: GPUBindGroupLayout;
}

interface ProgramInfo {
  p: PipelineEntry;
  /** The program's number in bind-group keys. */
  id: number;
}

/**
 * Uniform blocks live in arenas of UNIFORM_BLOCKS blocks of UNIFORM_BLOCK bytes (WebGPU's largest allowed
 * minUniformBufferOffsetAlignment, so any device takes the offsets), one block per distinct value, written once,
 * and a dispatch binds its block with a dynamic offset: a bind group then depends on the dispatch's storage
 * buffers only. With a uniform buffer per value every new shape (each micro-batch of the update has its own)
 * made new bind groups for all its dispatches, and creating bind groups was the update's largest CPU cost.
 */
/**
 * Dispatches recorded before the Gpu submits them unasked: a long stretch between two reads (a forward and
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
const UNIFORM_BLOCK = 256;
const UNIFORM_BLOCKS = 4096;

/**
 * The bind group layout of a dispatch: its uniform block (binding 0, dynamic offset) if it has uniforms and
 * the storage bindings it passes, typed as `code` declares them (var<storage, read> or var<storage, read_write>).
 * 'auto' layouts cannot have dynamic offsets; like them, this one holds the bindings the entry point uses,
 * which are the ones its launcher passes (an 'auto' layout refuses any other).
 */
export function layoutEntries(code: string, d: Pick<Dispatch, 'bindings' | 'uniforms'>, what: string): GPUBindGroupLayoutEntry[] {
  const declared = new Map<number, string>();
  for (const m of code.matchAll(/@group\(0\)\s*@binding\((\d+)\)\s*var\s*<\s*(\w+)\s*(?:,\s*(\w+)\s*)?>/g)) {
    declared.set(Number(m[1]), m[2] === 'uniform' ? 'uniform' : m[3] === 'read_write' ? 'storage' : 'read-only-storage');
  }
  const COMPUTE = 0x4; // GPUShaderStage.COMPUTE (absent before init in Node)
  const entries: GPUBindGroupLayoutEntry[] = [];
  if (d.uniforms) {
    if (declared.get(0) !== 'uniform') throw new GpuError('VALIDATION', `${what}: uniforms passed, but binding 0 is not declared var<uniform>`);
    entries.push({ binding: 0, visibility: COMPUTE, buffer: { type: 'uniform', hasDynamicOffset: true } });
  }
  d.bindings.forEach((b, i) => {
    if (!b) return;
    const type = declared.get(i + 1);
    if (type !== 'storage' && type !== 'read-only-storage') throw new GpuError('VALIDATION', `${what}: binding ${i + 1} is passed but not declared as var<storage>`);
    entries.push({ binding: i + 1, visibility: COMPUTE, buffer: { type } });
  });
  return entries;
}

/** A buffer's number in bind-group keys, kept on the buffer object: a property read, not a WeakMap lookup. */
const BUFFER_ID = Symbol('marft.bufferId');
type NumberedBuffer = GPUBuffer & { [BUFFER_ID]?: number };

/** Words of the scratch keys: a uniform block's words, or a bind group's program, uniform and binding ids. */
const KEY_WORDS = 64;

/**
 * Dispatches recorded once (Gpu.startRecording .. stopRecording) and replayed as they are: the pipelines and
 * bind groups, hence the buffers, fixed. Every buffer released while recording stays out of the pool until
 * dispose(), so what the commands read and write belongs to them alone; the caller keeps the buffers it was
 * handed (e.g. a forward's outputs) until then, and keeps per-call values out of the uniforms (kernels read
 * them from buffers). A decode step recorded once replays with no JS work but three calls a dispatch.
 */
export class Recording {
  disposed = false;
  constructor(
    /** offset: the uniform block's dynamic offset, -1 for a dispatch without uniforms. */
    readonly steps: ReadonlyArray<DispatchOp & { label: string }>,
    readonly held: GPUBuffer[],
    private readonly gpu: Gpu,
  ) {}

  /** Returns the buffers released while recording to the pool; later replays throw. */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    for (const b of this.held) this.gpu.pool.release(b);
  }
}

export class Gpu {
  readonly pool: BufferPool;
  readonly adapter: AdapterSummary;
  readonly hasSubgroups: boolean;
  readonly hasTimestamps: boolean;
  /**
   * A CPU implementation (SwiftShader, lavapipe): every invocation runs as CPU code, every barrier is a
   * switch between invocations and a load at a per-lane index is a gather, so kernels pick barrier-free
   * variants with few invocations and few loads per multiply-add here (matmul 'block', LoRA 'wide',
   * attention 'regs', RMSNorm 'row', reduce 'one', the finite count's 'few').
   */
  readonly cpu: boolean;
  /** Set when the device is lost; every later call throws DEVICE_LOST. */
  lostReason: string | null = null;
  /** Prints generated WGSL when a pipeline is built (STYLE: a debug flag). */
  debugShaders = false;

  /** Pipelines and their bind group layouts by `<program key>#<entry point>`. */
  private readonly pipelines = new Map<string, PipelineEntry>();
  /**
   * Pipelines are made with createComputePipelineAsync (the browser compiles them in parallel, off the
   * thread that records): a dispatch whose pipeline is not made yet, and everything recorded after it, waits
   * in `deferred` until the next wait point (a read, sync), which awaits the pipelines and encodes it all in
   * order. False: made synchronously at first use, as createComputePipeline does (the same numbers).
   */
  asyncPipelines = true;
  private deferred: DeferredOp[] | null = null;
  /** Pipelines being made, and counts for the "preparing kernels" line: made so far and asked for. */
  private readonly making = new Set<Promise<void>>();
  pipelinesAsked = 0;
  pipelinesMade = 0;
  /** Called as each asynchronously made pipeline is ready (the lab's "preparing kernels n/N"). */
  onPipelineMade: ((made: number, asked: number) => void) | null = null;
  /** Set while deferred work is being encoded: retired buffers wait for its last submit. */
  private flushing = false;
  /**
   * Uniform blocks (arena, offset) by their words; bind groups by their program, uniform arena and storage
   * buffer ids (no key strings per dispatch).
   */
  private readonly uniformBlocks = new IntKeyCache<{ arena: GPUBuffer; offset: number }>(UNIFORM_BLOCKS);
  private readonly bindGroups = new IntKeyCache<GPUBindGroup>(8192);
  /** The arena new uniform blocks go to, and its next free offset. */
  private uniformArena: GPUBuffer | null = null;
  private uniformArenaUsed = 0;
  /** The dynamic offset of the dispatch being recorded (setBindGroup's offsets, without an array per dispatch). */
  private readonly offsetScratch = new Uint32Array(1);
  /** Each dispatch's uniform words (views of one block) and bind-group key are built here. */
  private readonly uniformScratch = new Uint32Array(KEY_WORDS);
  private readonly uniformScratchI = new Int32Array(this.uniformScratch.buffer);
  private readonly uniformScratchF = new Float32Array(this.uniformScratch.buffer);
  private readonly keyScratch = new Uint32Array(KEY_WORDS);
  /** Pipelines, their layouts and small ids by Program object (launchers keep one object per key). */
  private readonly programs = new WeakMap<Program, ProgramInfo>();
  /** The device's limits, read once: each read of device.limits crosses into the native binding in Node. */
  private readonly deviceLimits: GPUSupportedLimits;
  private readonly maxWorkgroups: number;
  private nextId = 1;
  private encoder: GPUCommandEncoder | null = null;
  private pass: GPUComputePassEncoder | null = null;
  private readonly errors: string[] = [];
  private profiler: Profiler | null = null;
  /** Dispatches since the last submit, and how many make the next unasked one (SUBMIT_FIRST .. SUBMIT_EVERY). */
  private unsubmitted = 0;
  private submitAt = SUBMIT_FIRST;
  private afterSubmit: Array<() => void> = [];
  private recording: { steps: Recording['steps'][number][]; held: GPUBuffer[] } | null = null;
  /** Running totals for the benches (bench:dispatch and the per-step figures): dispatches recorded, read()s, queue submits. */
  dispatchCount = 0;
  readCount = 0;
  submitCount = 0;
  /** Buffer copies and compute passes begun: each copy or clear ends the open pass (the decode step counts both). */
  copyCount = 0;
  passCount = 0;
  /** Holds the GPU instance (Dawn's in Node): if it were garbage-collected, the device would die with it. */
  instance: unknown = null;

  constructor(readonly device: GPUDevice, adapter: GPUAdapter) {
    this.pool = new BufferPool(device);
    this.deviceLimits = device.limits;
    this.maxWorkgroups = this.deviceLimits.maxComputeWorkgroupsPerDimension;
    this.adapter = summarizeAdapter(adapter);
    this.hasSubgroups = device.features.has('subgroups');
    this.hasTimestamps = device.features.has('timestamp-query');
    const a = this.adapter;
    this.cpu = a.isFallback || /swiftshader|llvmpipe|lavapipe|softpipe/i.test(`${a.vendor} ${a.architecture} ${a.device} ${a.description}`);
    device.addEventListener('uncapturederror', (ev) => {
      this.errors.push((ev as GPUUncapturedErrorEvent).error.message);
    });
    void device.lost.then((info) => {
      this.lostReason = `${info.reason}: ${info.message || 'no message'}`;
    });
  }

  get limits(): GPUSupportedLimits { return this.deviceLimits; }

  // ---- tensors ------------------------------------------------------------------------------------

  /** An uninitialised tensor from the pool. Release it with release(). */
  tensor(shape: readonly number[], dtype: DType, label: string): Tensor {
    this.checkAlive();
    const bytes = byteSize(shape, dtype);
    if (bytes > this.limits.maxStorageBufferBindingSize) {
      throw new GpuError('LIMIT', `${label}: ${shapeStr({ shape, dtype })} needs ${bytes} bytes, over this device's storage binding limit of ${this.limits.maxStorageBufferBindingSize}`);
    }
    return { buffer: this.pool.acquire(bytes, STORAGE, label), shape: [...shape], dtype, pooled: true, label };
  }

  /** A tensor holding `data`. For bf16/f16, pass the values (packed here) or already packed Uint32 words. */
  upload(data: ArrayLike<number> | Uint32Array, shape: readonly number[], dtype: DType, label: string): Tensor {
    const n = numel(shape);
    const t = this.tensor(shape, dtype, label);
    let bytes: ArrayBufferView;
    if (is16(dtype)) {
      const packed = data instanceof Uint32Array && data.length === Math.ceil(n / 2) && n > 1 ? data : pack16(data, dtype);
      bytes = packed;
    } else {
      if (data.length !== n) shapeError(label, `upload of ${data.length} values into shape ${shapeStr({ shape })}`);
      bytes = dtype === 'f32' ? Float32Array.from(data) : dtype === 'i32' ? Int32Array.from(data) : Uint32Array.from(data);
    }
    this.write(t, bytes);
    return t;
  }

  /**
   * Writes bytes into a tensor. queue.writeBuffer runs before the next submit, so work still being
   * recorded (which may read this buffer, e.g. one just released to the pool) is submitted first.
   */
  write(t: Tensor, bytes: ArrayBufferView, byteOffset = 0): void {
    this.notRecording('write');
    const n = Math.min(bytes.byteLength, t.buffer.size - byteOffset);
    if (this.deferred) { this.deferred.push({ kind: 'write', buffer: t.buffer, offset: byteOffset, data: copyBytes(bytes, n) }); return; }
    this.submit();
    this.device.queue.writeBuffer(t.buffer, byteOffset, bytes.buffer, bytes.byteOffset, n);
  }

  zeros(shape: readonly number[], dtype: DType, label: string): Tensor {
    const t = this.tensor(shape, dtype, label);
    this.fill(t, 0);
    return t;
  }

  /** Clears a tensor to zero (value 0) in the command stream, ordered with the dispatches around it. */
  fill(t: Tensor, value: 0): void {
    void value;
    this.notRecording('fill');
    if (this.deferred) { this.deferred.push({ kind: 'clear', buffer: t.buffer, bytes: byteSize(t.shape, t.dtype) }); return; }
    this.endPass();
    this.getEncoder().clearBuffer(t.buffer, 0, byteSize(t.shape, t.dtype));
  }

  release(...ts: Array<Tensor | undefined>): void {
    for (const t of ts) {
      if (!t?.pooled) continue;
      if (this.recording) this.recording.held.push(t.buffer); // a replay still uses it: pooled at dispose()
      else this.pool.release(t.buffer);
    }
  }

  /** Copies `bytes` (default: all of src) between buffers inside the command stream. */
  copy(src: Tensor, dst: Tensor, bytes = byteSize(src.shape, src.dtype), srcOffset = 0, dstOffset = 0): void {
    this.notRecording('copy');
    this.copyBuffer(src.buffer, srcOffset, dst.buffer, dstOffset, bytes);
  }

  private copyBuffer(src: GPUBuffer, srcOffset: number, dst: GPUBuffer, dstOffset: number, bytes: number): void {
    this.copyCount++;
    if (this.deferred) { this.deferred.push({ kind: 'copy', src, srcOffset, dst, dstOffset, bytes }); return; }
    this.endPass();
    this.getEncoder().copyBufferToBuffer(src, srcOffset, dst, dstOffset, bytes);
  }

  /** Reads a tensor back: f32 and 16-bit dtypes as Float32Array, i32 as Int32Array, u32 as Uint32Array. */
  async read(t: Tensor): Promise<Float32Array | Int32Array | Uint32Array> {
    return (await this.readMany([t]))[0];
  }

  /**
   * Reads several tensors back through one staging buffer: one submit, one wait, one readback in the
   * counters (each value as read() gives it).
   */
  async readMany(ts: readonly Tensor[]): Promise<Array<Float32Array | Int32Array | Uint32Array>> {
    this.notRecording('read');
    if (!ts.length) return [];
    const sizes = ts.map((t) => byteSize(t.shape, t.dtype));
    const offsets: number[] = [];
    let total = 0;
    for (const b of sizes) { offsets.push(total); total += b; }
    this.readCount++;
    const staging = this.device.createBuffer({ size: total, usage: MAP_READ, label: `read:${ts.map((t) => t.label).join(',')}`.slice(0, 200) });
    const copies = this.copyCount;
    ts.forEach((t, i) => this.copyBuffer(t.buffer, 0, staging, offsets[i], sizes[i])); // now: the values of this moment
    this.copyCount = copies; // a readback's copies are not the work's (the decode step counts those)
    try {
      if (this.deferred) await this.flushDeferred();
      else this.submit();
      await staging.mapAsync(1 /* GPUMapMode.READ */);
      this.submitAt = SUBMIT_FIRST; // the GPU is idle now
    } catch (e) {
      this.checkAlive();
      throw e;
    }
    const raw = staging.getMappedRange().slice(0);
    staging.unmap();
    staging.destroy();
    this.throwErrors();
    return ts.map((t, i) => {
      const n = numel(t.shape);
      if (t.dtype === 'f32') return new Float32Array(raw, offsets[i], n);
      if (t.dtype === 'i32') return new Int32Array(raw, offsets[i], n);
      if (t.dtype === 'u32') return new Uint32Array(raw, offsets[i], n);
      return unpack16(new Uint32Array(raw, offsets[i], sizes[i] / 4), n, t.dtype);
    });
  }

  async readF32(t: Tensor): Promise<Float32Array> {
    const r = await this.read(t);
    return r instanceof Float32Array ? r : Float32Array.from(r);
  }

  // ---- programs -----------------------------------------------------------------------------------

  /** The program's pipeline and layout, made at its first dispatch (the layout holds the bindings it passes). */
  private program(program: Program, d: Dispatch): ProgramInfo {
    const cached = this.programs.get(program);
    if (cached) return cached;
    const key = `${program.key}#${program.entryPoint}`;
    let p = this.pipelines.get(key);
    if (!p) {
      const code = program.code();
      if (this.debugShaders) console.log(`// ---- ${key}\n${code}`);
      const layout = this.device.createBindGroupLayout({ entries: layoutEntries(code, d, key), label: key });
      this.device.pushErrorScope('validation');
      const module = this.device.createShaderModule({ code, label: program.key });
      const desc: GPUComputePipelineDescriptor = {
        layout: this.device.createPipelineLayout({ bindGroupLayouts: [layout], label: key }), compute: { module, entryPoint: program.entryPoint }, label: key,
      };
      const entry: PipelineEntry = { pipeline: null, layout };
      this.pipelinesAsked++;
      if (this.asyncPipelines && !this.profiler) {
        const making: Promise<void> = this.device.createComputePipelineAsync(desc).then(
          (pipeline) => { entry.pipeline = pipeline; this.pipelinesMade++; this.onPipelineMade?.(this.pipelinesMade, this.pipelinesAsked); },
          (err: Error) => { this.errors.push(`pipeline ${key}: ${err.message}`); },
        ).finally(() => this.making.delete(making));
        this.making.add(making);
      } else {
        entry.pipeline = this.device.createComputePipeline(desc);
        this.pipelinesMade++;
      }
      void this.device.popErrorScope().then((err) => {
        if (err) this.errors.push(`pipeline ${key}: ${err.message}`);
      });
      p = entry;
      this.pipelines.set(key, p);
    }
    const info = { p, id: this.nextId++ };
    this.programs.set(program, info);
    return info;
  }

  /** Entries in the device-side caches (pipelines, uniform buffers, bind groups): a soak checks they stay bounded. */
  get cacheSizes(): { pipelines: number; uniformBuffers: number; bindGroups: number } {
    return { pipelines: this.pipelines.size, uniformBuffers: this.uniformBlocks.size, bindGroups: this.bindGroups.size };
  }

  /** Records one dispatch into the open compute pass. */
  run(d: Dispatch): void {
    this.checkAlive();
    const [x, y = 1, z = 1] = d.workgroups;
    if (x === 0 || y === 0 || z === 0) return;
    const max = this.maxWorkgroups;
    if (x > max || y > max || z > max) {
      throw new GpuError('LIMIT', `${d.program.key}: dispatch of [${x}, ${y}, ${z}] workgroups exceeds ${max} per dimension`);
    }
    const program = this.program(d.program, d);
    const block = d.uniforms ? this.uniformBlock(d.uniforms) : null;
    const bindGroup = this.bindGroup(d, program, block?.arena ?? null);
    const offset = block ? block.offset : -1;
    if (this.recording) this.recording.steps.push({ kind: 'dispatch', p: program.p, bindGroup, offset, x, y, z, label: `${d.program.key}/${d.program.entryPoint}` });
    if (this.deferred === null && program.p.pipeline === null) this.deferred = [];
    if (this.deferred) {
      this.deferred.push({ kind: 'dispatch', p: program.p, bindGroup, offset, x, y, z });
      this.dispatchCount++;
      return;
    }
    const pipeline = program.p.pipeline!;
    let pass: GPUComputePassEncoder;
    if (this.profiler) {
      pass = this.profiledPass(`${d.program.key}/${d.program.entryPoint}`);
    } else {
      pass = this.getPass();
    }
    pass.setPipeline(pipeline);
    if (block) {
      this.offsetScratch[0] = block.offset;
      pass.setBindGroup(0, bindGroup, this.offsetScratch, 0, 1);
    } else {
      pass.setBindGroup(0, bindGroup);
    }
    pass.dispatchWorkgroups(x, y, z);
    if (this.profiler) this.endPass();
    this.dispatchCount++;
    if (!this.recording && ++this.unsubmitted >= this.submitAt) {
      this.submit();
      this.submitAt = Math.min(SUBMIT_EVERY, 2 * this.submitAt);
    }
  }

  /**
   * Starts recording the dispatches that follow (they run as usual too) until stopRecording(). Copies,
   * clears, writes and reads are refused meanwhile: a recording holds dispatches only.
   */
  startRecording(): void {
    this.notRecording('startRecording');
    this.recording = { steps: [], held: [] };
  }

  stopRecording(): Recording {
    const r = this.recording;
    if (!r) throw new GpuError('RECORDING', 'stopRecording without startRecording');
    this.recording = null;
    return new Recording(r.steps, r.held, this);
  }

  /** Records a recording's dispatches again, in order, into the open pass (timed one by one when profiling). */
  replay(rec: Recording): void {
    this.checkAlive();
    if (rec.disposed) throw new GpuError('RECORDING', 'replay of a disposed recording');
    if (this.deferred === null && rec.steps.some((s) => s.p.pipeline === null)) this.deferred = [];
    if (this.deferred) {
      this.deferred.push(...rec.steps);
      this.dispatchCount += rec.steps.length;
      return;
    }
    let last: GPUComputePipeline | null = null;
    for (const s of rec.steps) {
      let pass: GPUComputePassEncoder;
      if (this.profiler) {
        pass = this.profiledPass(s.label);
        last = null;
      } else {
        pass = this.getPass();
      }
      if (s.p.pipeline !== last) { pass.setPipeline(s.p.pipeline!); last = s.p.pipeline; }
      if (s.offset >= 0) {
        this.offsetScratch[0] = s.offset;
        pass.setBindGroup(0, s.bindGroup, this.offsetScratch, 0, 1);
      } else {
        pass.setBindGroup(0, s.bindGroup);
      }
      pass.dispatchWorkgroups(s.x, s.y, s.z);
      if (this.profiler) this.endPass();
    }
    this.dispatchCount += rec.steps.length;
  }

  private notRecording(what: string): void {
    if (this.recording) throw new GpuError('RECORDING', `${what} while recording dispatches: a recording holds dispatches only`);
  }

  /** Starts timing every dispatch (needs the timestamp-query feature). */
  startProfile(): void {
    if (!this.hasTimestamps) throw new GpuError('LIMIT', 'profiling needs the timestamp-query feature, which this device lacks');
    this.profiler ??= new Profiler(this.device);
  }

  /** Stops profiling and returns GPU milliseconds per kernel (`<program key>/<entry point>`), largest first. */
  async stopProfile(): Promise<KernelTime[]> {
    const p = this.profiler;
    if (!p) return [];
    if (this.deferred) await this.flushDeferred();
    p.flush(this.getEncoder(), (fn) => this.afterSubmit.push(fn));
    this.profiler = null;
    this.submit();
    const times = await p.report();
    p.destroy();
    return times;
  }

  /** Ends the open pass and submits everything recorded so far. */
  submit(): void {
    this.unsubmitted = 0;
    if (this.deferred) return; // encoded, and submitted, once its pipelines are made (flushDeferred)
    this.endPass();
    if (this.encoder) {
      this.device.queue.submit([this.encoder.finish()]);
      this.encoder = null;
      this.submitCount++;
    }
    for (const fn of this.afterSubmit.splice(0)) fn();
    if (!this.flushing) this.pool.destroyRetired();
  }

  /**
   * Awaits the pipelines being made, then encodes the deferred work in order and submits it (work deferred
   * meanwhile, by other callers, goes with it). A pipeline that failed surfaces as a VALIDATION error.
   */
  private async flushDeferred(): Promise<void> {
    while (this.deferred) {
      while (this.making.size) await Promise.all(this.making); // pipelines asked for meanwhile too
      const ops = this.deferred;
      if (!ops) return; // another caller's flush encoded it meanwhile (this caller's work with it)
      this.deferred = null;
      if (ops.some((op) => op.kind === 'dispatch' && op.p.pipeline === null)) { this.throwErrors(); throw new GpuError('VALIDATION', 'a pipeline could not be made'); }
      this.flushing = true;
      try {
        let last: GPUComputePipeline | null = null;
        for (const op of ops) {
          if (op.kind === 'dispatch') {
            const pass = this.getPass();
            if (op.p.pipeline !== last) { pass.setPipeline(op.p.pipeline!); last = op.p.pipeline; }
            if (op.offset >= 0) {
              this.offsetScratch[0] = op.offset;
              pass.setBindGroup(0, op.bindGroup, this.offsetScratch, 0, 1);
            } else {
              pass.setBindGroup(0, op.bindGroup);
            }
            pass.dispatchWorkgroups(op.x, op.y, op.z);
            continue;
          }
          this.endPass();
          last = null;
          if (op.kind === 'copy') this.getEncoder().copyBufferToBuffer(op.src, op.srcOffset, op.dst, op.dstOffset, op.bytes);
          else if (op.kind === 'clear') this.getEncoder().clearBuffer(op.buffer, 0, op.bytes);
          else {
            this.submit();
            this.device.queue.writeBuffer(op.buffer, op.offset, op.data);
          }
        }
        this.submit();
      } finally {
        this.flushing = false;
      }
      this.pool.destroyRetired();
    }
  }

  /** Waits until the GPU has finished all submitted work, then surfaces any validation error. */
  async sync(): Promise<void> {
    if (this.deferred) await this.flushDeferred();
    this.submit();
    await this.device.queue.onSubmittedWorkDone();
    this.submitAt = SUBMIT_FIRST;
    this.checkAlive();
    this.throwErrors();
  }

  /** Destroys the pool's free buffers (BufferPool.trim), after submitting recorded work that may still use them. */
  trim(): void {
    if (this.deferred) return; // deferred work may use the free buffers: trimmed at a later call
    this.submit();
    this.pool.trim();
  }

  destroy(): void {
    this.pool.trim();
    this.device.destroy();
  }

  // ---- internals ----------------------------------------------------------------------------------

  private bufferId(b: GPUBuffer): number {
    return ((b as NumberedBuffer)[BUFFER_ID] ??= this.nextId++);
  }

  /**
   * The uniform block holding these fields' words: one per distinct words, written once and never changed
   * (commands recorded earlier never use a new block, so writing it before they are submitted is safe).
   */
  private uniformBlock(fields: NonNullable<Dispatch['uniforms']>): { arena: GPUBuffer; offset: number } {
    const u = this.uniformScratch;
    const n = encodeUniformsInto(fields, u, this.uniformScratchI, this.uniformScratchF);
    const h = intKeyHash(u, n);
    let block = this.uniformBlocks.get(u, n, h);
    if (!block) {
      if (!this.uniformArena || this.uniformArenaUsed + UNIFORM_BLOCK > this.uniformArena.size) {
        // a full arena is left to the GC, not destroyed: cached bind groups, recordings and pending passes may use it
        this.uniformArena = this.device.createBuffer({ size: UNIFORM_BLOCK * UNIFORM_BLOCKS, usage: UNIFORM, label: 'uniforms' });
        this.uniformArenaUsed = 0;
      }
      block = { arena: this.uniformArena, offset: this.uniformArenaUsed };
      this.uniformArenaUsed += UNIFORM_BLOCK;
      this.device.queue.writeBuffer(block.arena, block.offset, u, 0, n);
      this.uniformBlocks.set(u, n, h, block);
    }
    return block;
  }

  /**
   * The bind group of a dispatch, cached by its program, uniform arena and storage buffers (ids). A buffer
   * keeps its id while the pool hands it out again, so its bind groups stay valid (they name the buffer, not
   * the tensor); a destroyed buffer's are never asked for again (a new buffer gets a new id).
   */
  private bindGroup(d: Dispatch, program: ProgramInfo, arena: GPUBuffer | null): GPUBindGroup {
    const bs = d.bindings;
    const key = this.keyScratch;
    const n = bs.length + 2;
    if (n > key.length) throw new GpuError('LIMIT', `${d.program.key}: ${bs.length} bindings, more than the ${key.length - 2} a dispatch may have here`);
    key[0] = program.id;
    key[1] = arena ? this.bufferId(arena) : 0;
    for (let i = 0; i < bs.length; i++) {
      const b = bs[i];
      key[i + 2] = b ? this.bufferId('buffer' in b ? b.buffer : b) : 0;
    }
    const h = intKeyHash(key, n);
    let bg = this.bindGroups.get(key, n, h);
    if (!bg) {
      const entries: GPUBindGroupEntry[] = [];
      if (arena) entries.push({ binding: 0, resource: { buffer: arena, offset: 0, size: UNIFORM_BLOCK } });
      bs.forEach((b, i) => { if (b) entries.push({ binding: i + 1, resource: { buffer: 'buffer' in b ? b.buffer : b } }); });
      bg = this.device.createBindGroup({ layout: program.p.layout, entries, label: d.program.key });
      this.bindGroups.set(key, n, h, bg);
    }
    return bg;
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

  private getPass(): GPUComputePassEncoder {
    if (!this.pass) {
      this.pass = this.getEncoder().beginComputePass({ label: 'marft' });
      this.passCount++;
    }
    return this.pass;
  }

  private endPass(): void {
    if (this.pass) { this.pass.end(); this.pass = null; }
  }

  checkAlive(): void {
    if (this.lostReason !== null) throw new GpuError('DEVICE_LOST', `GPU device lost (${this.lostReason})`);
  }

  private throwErrors(): void {
    if (this.errors.length) {
      const msg = this.errors.splice(0).join('\n');
      throw new GpuError('VALIDATION', msg);
    }
  }
}
