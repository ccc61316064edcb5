// A buffer pool keyed by size and usage (tfjs-backend-webgpu's habit): released buffers are reused by the
// next request of the same bucket instead of being destroyed and recreated every step.

export interface PoolStats {
  /** Bytes in buffers handed out and not yet released. */
  bytesInUse: number;
  /** Bytes in all live buffers the pool made (in use + free). */
  bytesAllocated: number;
  /** Peak of bytesAllocated since creation. */
  peakBytes: number;
  buffers: number;
}

/** Sizes are rounded up to 256 bytes below 1 MiB and to 1/8 of their power of two above, to raise reuse. */
export function bucketSize(bytes: number): number {
  if (bytes <= 1 << 20) return Math.max(256, Math.ceil(bytes / 256) * 256);
  const step = 2 ** (Math.floor(Math.log2(bytes)) - 3);
  return Math.ceil(bytes / step) * step;
}

export class BufferPool {
  private readonly free = new Map<string, GPUBuffer[]>();
  private readonly sizes = new WeakMap<GPUBuffer, number>();
  readonly stats: PoolStats = { bytesInUse: 0, bytesAllocated: 0, peakBytes: 0, buffers: 0 };

  constructor(private readonly device: GPUDevice) {}

  acquire(bytes: number, usage: GPUBufferUsageFlags, label: string): GPUBuffer {
    const size = bucketSize(bytes);
    const list = this.free.get(`${size}:${usage}`);
    let buf = list?.pop();
    if (!buf) {
      buf = this.device.createBuffer({ size, usage, label });
      this.sizes.set(buf, size);
      this.stats.bytesAllocated += size;
      this.stats.buffers++;
      this.stats.peakBytes = Math.max(this.stats.peakBytes, this.stats.bytesAllocated);
    } else {
      buf.label = label;
    }
    this.stats.bytesInUse += size;
    return buf;
  }

  release(buf: GPUBuffer): void {
    const size = this.sizes.get(buf);
    if (size === undefined) throw new Error(`BufferPool.release: buffer '${buf.label}' was not made by this pool`);
    this.stats.bytesInUse -= size;
    const key = `${size}:${buf.usage}`;
    const list = this.free.get(key) ?? [];
    list.push(buf);
    this.free.set(key, list);
  }

  /** Destroys the free buffers (e.g. after a phase with large temporaries). */
  trim(): void {
    for (const list of this.free.values()) {
      for (const b of list) {
        this.stats.bytesAllocated -= this.sizes.get(b) ?? 0;
        this.stats.buffers--;
        b.destroy();
      }
    }
    this.free.clear();
  }
}
