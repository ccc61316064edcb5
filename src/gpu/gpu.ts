// The GPU context: one device and what works on it, each in a module of its own: the buffer pool (pool.ts),
// pipelines (pipelines.ts), uniform blocks and bind groups (bind-groups.ts), the command stream with its
// submit pacing, deferred work and profiled passes (commands.ts), and recordings (recording.ts). Dispatches
// are recorded into one open compute pass and submitted together at the next read(), write or explicit
// submit(), so a training step costs few submits and no readback inside it.

import { GpuError, shapeError } from './errors.ts';
import { pack16, unpack16 } from './half.ts';
import { BufferPool } from './pool.ts';
import type { KernelTime } from '../common/profile-table.ts';
import { BindGroups } from './bind-groups.ts';
import { CommandStream } from './commands.ts';
import { Pipelines } from './pipelines.ts';
import { type Dispatch, kernelName } from './program.ts';
import { Recorder, type Recording } from './recording.ts';
import { type DType, type Tensor, byteSize, is16, numel, shapeStr } from './tensor.ts';

const STORAGE = 0x80 | 0x04 | 0x08; // STORAGE | COPY_SRC | COPY_DST (GPUBufferUsage is absent before init in Node)
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

/** Device limits a Gpu can be told to stay under (GpuOptions.caps). */
export type LimitCaps = Partial<
  Pick<
    GPUSupportedLimits,
    | 'maxStorageBufferBindingSize'
    | 'maxBufferSize'
    | 'maxStorageBuffersPerShaderStage'
    | 'maxComputeWorkgroupStorageSize'
    | 'maxComputeInvocationsPerWorkgroup'
    | 'maxComputeWorkgroupSizeX'
  >
>;

export interface GpuOptions {
  /**
   * Limits lower than the device's, honoured as if they were the device's: every size check and kernel
   * choice reads `Gpu.limits`. Tests use it to run the paths of a small device (a split embedding) on
   * tiny models.
   */
  caps?: LimitCaps;
}

/** WebGPU's limits by name, copied from the device's so that caps can lower some. */
const LIMIT_NAMES = [
  'maxTextureDimension1D',
  'maxTextureDimension2D',
  'maxTextureDimension3D',
  'maxTextureArrayLayers',
  'maxBindGroups',
  'maxBindGroupsPlusVertexBuffers',
  'maxBindingsPerBindGroup',
  'maxDynamicUniformBuffersPerPipelineLayout',
  'maxDynamicStorageBuffersPerPipelineLayout',
  'maxSampledTexturesPerShaderStage',
  'maxSamplersPerShaderStage',
  'maxStorageBuffersPerShaderStage',
  'maxStorageTexturesPerShaderStage',
  'maxUniformBuffersPerShaderStage',
  'maxUniformBufferBindingSize',
  'maxStorageBufferBindingSize',
  'minUniformBufferOffsetAlignment',
  'minStorageBufferOffsetAlignment',
  'maxVertexBuffers',
  'maxBufferSize',
  'maxVertexAttributes',
  'maxVertexBufferArrayStride',
  'maxInterStageShaderVariables',
  'maxColorAttachments',
  'maxColorAttachmentBytesPerSample',
  'maxComputeWorkgroupStorageSize',
  'maxComputeInvocationsPerWorkgroup',
  'maxComputeWorkgroupSizeX',
  'maxComputeWorkgroupSizeY',
  'maxComputeWorkgroupSizeZ',
  'maxComputeWorkgroupsPerDimension',
] as const;

/** The device's limits with `caps` applied (each the smaller of the two). */
export function cappedLimits(limits: GPUSupportedLimits, caps: LimitCaps): GPUSupportedLimits {
  const out: Record<string, number> = {};
  for (const k of LIMIT_NAMES) out[k] = limits[k];
  for (const [k, v] of Object.entries(caps)) if (v !== undefined) out[k] = Math.min(out[k], v);
  return Object.freeze(out) as unknown as GPUSupportedLimits;
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
  /** Pipelines by program (made asynchronously by default: `pipelines.async`). */
  readonly pipelines: Pipelines;
  private readonly bindGroups: BindGroups;
  private readonly commands: CommandStream;
  private readonly recorder = new Recorder();
  /**
   * The device's limits (lowered by GpuOptions.caps), read once: each read of device.limits crosses into the
   * native binding in Node.
   */
  private readonly deviceLimits: GPUSupportedLimits;
  private readonly maxWorkgroups: number;
  private readonly errors: string[] = [];
  /** Running totals for the benches (bench:dispatch and the per-step figures): dispatches recorded, read()s. */
  dispatchCount = 0;
  readCount = 0;
  /** Buffer copies (not a readback's): each ends the open pass (the decode step counts them). */
  copyCount = 0;
  /** Holds the GPU instance (Dawn's in Node): if it were garbage-collected, the device would die with it. */
  instance: unknown = null;

  constructor(
    readonly device: GPUDevice,
    adapter: GPUAdapter,
    opts: GpuOptions = {},
  ) {
    this.pool = new BufferPool(device);
    this.pipelines = new Pipelines(device, (m) => this.errors.push(m));
    this.bindGroups = new BindGroups(device);
    this.commands = new CommandStream(
      device,
      () => this.checkAlive(),
      () => this.pool.destroyRetired(),
    );
    this.deviceLimits = opts.caps ? cappedLimits(device.limits, opts.caps) : device.limits;
    this.maxWorkgroups = this.deviceLimits.maxComputeWorkgroupsPerDimension;
    this.adapter = summarizeAdapter(adapter);
    this.hasSubgroups = device.features.has('subgroups');
    this.hasTimestamps = device.features.has('timestamp-query');
    const a = this.adapter;
    this.cpu = a.isFallback || /swiftshader|llvmpipe|lavapipe|softpipe/i.test(`${a.vendor} ${a.architecture} ${a.device} ${a.description}`);
    device.addEventListener('uncapturederror', (ev) => {
      this.errors.push(ev.error.message);
    });
    void device.lost.then((info) => {
      this.lostReason = `${info.reason}: ${info.message || 'no message'}`;
    });
  }

  /** The limits every check and kernel choice goes by: the device's, or lower ones (GpuOptions.caps). */
  get limits(): GPUSupportedLimits {
    return this.deviceLimits;
  }
  /** Queue submits and compute passes begun (the benches count them). */
  get submitCount(): number {
    return this.commands.submitCount;
  }
  get passCount(): number {
    return this.commands.passCount;
  }

  // ---- tensors ------------------------------------------------------------------------------------

  /** An uninitialised tensor from the pool. Release it with release(). */
  tensor(shape: readonly number[], dtype: DType, label: string): Tensor {
    this.checkAlive();
    const bytes = byteSize(shape, dtype);
    if (bytes > this.limits.maxStorageBufferBindingSize) {
      throw new GpuError(
        'LIMIT',
        `${label}: ${shapeStr({ shape, dtype })} needs ${bytes} bytes, over this device's storage binding limit of ${this.limits.maxStorageBufferBindingSize}`,
      );
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

  /** Writes bytes into a tensor, after the work recorded so far (which may read this buffer, e.g. one just released). */
  write(t: Tensor, bytes: ArrayBufferView, byteOffset = 0): void {
    this.recorder.refuse('write');
    this.commands.write(t.buffer, bytes, byteOffset, Math.min(bytes.byteLength, t.buffer.size - byteOffset));
  }

  zeros(shape: readonly number[], dtype: DType, label: string): Tensor {
    const t = this.tensor(shape, dtype, label);
    this.fill(t, 0);
    return t;
  }

  /** Clears a tensor to zero (value 0) in the command stream, ordered with the dispatches around it. */
  fill(t: Tensor, value: 0): void {
    void value;
    this.recorder.refuse('fill');
    this.commands.clear(t.buffer, byteSize(t.shape, t.dtype));
  }

  release(...ts: Array<Tensor | undefined>): void {
    for (const t of ts) {
      if (t?.pooled && !this.recorder.hold(t.buffer)) this.pool.release(t.buffer);
    }
  }

  /** Copies `bytes` (default: all of src) between buffers inside the command stream. */
  copy(src: Tensor, dst: Tensor, bytes = byteSize(src.shape, src.dtype), srcOffset = 0, dstOffset = 0): void {
    this.recorder.refuse('copy');
    this.copyCount++;
    this.commands.copy(src.buffer, srcOffset, dst.buffer, dstOffset, bytes);
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
    this.recorder.refuse('read');
    if (!ts.length) return [];
    const sizes = ts.map((t) => byteSize(t.shape, t.dtype));
    const offsets: number[] = [];
    let total = 0;
    for (const b of sizes) {
      offsets.push(total);
      total += b;
    }
    this.readCount++;
    const staging = this.device.createBuffer({
      size: total,
      usage: MAP_READ,
      label: `read:${ts.map((t) => t.label).join(',')}`.slice(0, 200),
    });
    ts.forEach((t, i) => this.commands.copy(t.buffer, 0, staging, offsets[i], sizes[i])); // now: the values of this moment
    try {
      await this.flush();
      this.commands.submit();
      await staging.mapAsync(1 /* GPUMapMode.READ */);
      this.commands.idle();
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

  // ---- dispatches ---------------------------------------------------------------------------------

  /** Entries in the device-side caches (pipelines, uniform blocks, bind groups): a soak checks they stay bounded. */
  get cacheSizes(): { pipelines: number; uniformBuffers: number; bindGroups: number } {
    const { uniformBlocks, bindGroups } = this.bindGroups.sizes;
    return { pipelines: this.pipelines.size, uniformBuffers: uniformBlocks, bindGroups };
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
    const program = this.pipelines.get(d.program, d, this.commands.profiler !== null);
    const block = d.uniforms ? this.bindGroups.uniformBlock(d.uniforms) : null;
    const bindGroup = this.bindGroups.bindGroup(d, program, block?.arena ?? null);
    const offset = block ? block.offset : -1;
    const recording = this.recorder.active;
    if (recording) this.recorder.step({ kind: 'dispatch', p: program.p, bindGroup, offset, x, y, z, label: kernelName(d.program) });
    this.commands.dispatch(program.p, bindGroup, offset, x, y, z, d.program, !recording);
    this.dispatchCount++;
  }

  /**
   * Starts recording the dispatches that follow (they run as usual too) until stopRecording(). Copies,
   * clears, writes and reads are refused meanwhile: a recording holds dispatches only.
   */
  startRecording(): void {
    this.recorder.refuse('startRecording');
    this.recorder.start();
  }

  stopRecording(): Recording {
    return this.recorder.stop((b) => this.pool.release(b));
  }

  /** Records a recording's dispatches again, in order, into the open pass (timed one by one when profiling). */
  replay(rec: Recording): void {
    this.checkAlive();
    if (rec.disposed) throw new GpuError('RECORDING', 'replay of a disposed recording');
    this.commands.replay(rec.steps);
    this.dispatchCount += rec.steps.length;
  }

  // ---- profiling ----------------------------------------------------------------------------------

  /** Starts timing every dispatch (needs the timestamp-query feature). */
  startProfile(): void {
    if (!this.hasTimestamps) throw new GpuError('LIMIT', 'profiling needs the timestamp-query feature, which this device lacks');
    this.commands.startProfile();
  }

  /** Stops profiling and returns GPU milliseconds per kernel (`<program key>/<entry point>`), largest first. */
  async stopProfile(): Promise<KernelTime[]> {
    if (!this.commands.profiler) return [];
    await this.flush();
    const p = this.commands.stopProfile()!;
    const times = await p.report();
    p.destroy();
    return times;
  }

  // ---- submits and waits --------------------------------------------------------------------------

  /** Ends the open pass and submits everything recorded so far. */
  submit(): void {
    this.commands.submit();
  }

  /** Waits until the GPU has finished all submitted work, then surfaces any validation error. */
  async sync(): Promise<void> {
    await this.flush();
    this.commands.submit();
    await this.device.queue.onSubmittedWorkDone();
    this.commands.idle();
    this.checkAlive();
    this.throwErrors();
  }

  /** Destroys the pool's free buffers (BufferPool.trim), after submitting recorded work that may still use them. */
  trim(): void {
    if (this.commands.waiting) return; // deferred work may use the free buffers: trimmed at a later call
    this.commands.submit();
    this.pool.trim();
  }

  destroy(): void {
    this.pool.trim();
    this.device.destroy();
  }

  checkAlive(): void {
    if (this.lostReason !== null) throw new GpuError('DEVICE_LOST', `GPU device lost (${this.lostReason})`);
  }

  /**
   * Encodes the work deferred while pipelines were being made, once they are (a pipeline that failed
   * surfaces as a VALIDATION error).
   */
  private async flush(): Promise<void> {
    if (!this.commands.waiting) return;
    await this.commands.flush(
      () => this.pipelines.settled(),
      () => {
        this.throwErrors();
        return new GpuError('VALIDATION', 'a pipeline could not be made');
      },
    );
  }

  private throwErrors(): void {
    if (this.errors.length) {
      const msg = this.errors.splice(0).join('\n');
      throw new GpuError('VALIDATION', msg);
    }
  }
}
