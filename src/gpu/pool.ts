// A buffer pool keyed by size and usage (tfjs-backend-webgpu's habit): released buffers are reused by the
// next request of the same bucket instead of being destroyed and recreated every step. Micro-batches of
// varying length ask for slightly different sizes, so a request also takes the smallest free buffer of up
// to REUSE_SLACK times its bucket before a new one is made: without that, every new length added buffers.
// Of the free buffers of a size, a request gets the oldest (first made), not the last released: the same
// sequence of requests and releases from the same free buffers then gets the same buffers, whatever order
// the previous step released them in, so a step's bind groups (cached by buffer) are found again at the
// next micro-batch or iteration of the same shapes instead of made anew. LIFO permuted them every step.

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

/** A free buffer up to this factor larger than the request's bucket may serve it. */
export const REUSE_SLACK = 1.5;

export class BufferPool {
  /** Free buffers by usage, then by size. */
  private readonly free = new Map<number, Map<number, GPUBuffer[]>>();
  private readonly sizes = new WeakMap<GPUBuffer, number>();
  /** Each buffer's creation number: free lists are kept sorted by it, newest first, so pop() takes the oldest. */
  private readonly serial = new WeakMap<GPUBuffer, number>();
  private made = 0;
  /** Each buffer's last request number (mark()). */
  private readonly lastRequest = new WeakMap<GPUBuffer, number>();
  private requests = 0;
  readonly stats: PoolStats = { bytesInUse: 0, bytesAllocated: 0, peakBytes: 0, buffers: 0 };

  constructor(private readonly device: GPUDevice) {}

  acquire(bytes: number, usage: GPUBufferUsageFlags, label: string): GPUBuffer {
    let size = bucketSize(bytes);
    let buf: GPUBuffer | undefined;
    const bySize = this.free.get(usage);
    const exact = bySize?.get(size);
    if (exact?.length) {
      buf = exact.pop();
    } else if (bySize) {
      let best = Infinity;
      for (const [s, list] of bySize) if (s >= size && s < best && s <= size * REUSE_SLACK && list.length) best = s;
      if (best !== Infinity) {
        buf = bySize.get(best)!.pop();
        size = best;
      }
    }
    if (!buf) {
      buf = this.device.createBuffer({ size, usage, label });
      this.sizes.set(buf, size);
      this.serial.set(buf, this.made++);
      this.stats.bytesAllocated += size;
      this.stats.buffers++;
      this.stats.peakBytes = Math.max(this.stats.peakBytes, this.stats.bytesAllocated);
    } // a reused buffer keeps its first label: relabelling crosses into the native binding on every acquire
    this.stats.bytesInUse += size;
    this.lastRequest.set(buf, ++this.requests);
    return buf;
  }

  release(buf: GPUBuffer): void {
    const size = this.sizes.get(buf);
    if (size === undefined) throw new Error(`BufferPool.release: buffer '${buf.label}' was not made by this pool`);
    this.stats.bytesInUse -= size;
    let bySize = this.free.get(buf.usage);
    if (!bySize) this.free.set(buf.usage, (bySize = new Map()));
    const list = bySize.get(size);
    if (!list) {
      bySize.set(size, [buf]);
      return;
    }
    // insert by creation number, newest first (free lists hold a few buffers: a linear scan from the end)
    const n = this.serial.get(buf)!;
    let i = list.length;
    while (i > 0 && this.serial.get(list[i - 1])! < n) i--;
    list.splice(i, 0, buf);
  }

  /** Starts a new peak measurement from what is allocated now. */
  resetPeak(): void {
    this.stats.peakBytes = this.stats.bytesAllocated;
  }

  /** The count of requests served so far: trim(since) keeps the free buffers a later request took. */
  mark(): number {
    return this.requests;
  }

  /**
   * Destroys the free buffers (e.g. after a phase with large temporaries); with `since` (a mark()), keeps
   * those a request took after it, the most recently taken first, up to `keepBytes`. A training loop keeps
   * last iteration's buffers this way: the next iteration's same-sized micro-batches get them back, and the
   * bind groups cached on them, instead of making both anew; keepBytes bounds what that holds back.
   */
  trim(since = Infinity, keepBytes = Infinity): void {
    // the free buffers taken after `since`, most recently taken first, up to keepBytes in all
    const recent = [...this.free.values()].flatMap((m) => [...m.values()]).flat()
      .filter((b) => this.lastRequest.get(b)! > since)
      .sort((a, b) => this.lastRequest.get(b)! - this.lastRequest.get(a)!);
    const kept = new Set<GPUBuffer>();
    let bytes = 0;
    for (const b of recent) {
      bytes += this.sizes.get(b)!;
      if (bytes > keepBytes) break;
      kept.add(b);
    }
    for (const bySize of this.free.values()) {
      for (const [size, list] of bySize) {
        const keep = list.filter((b) => kept.has(b));
        for (const b of list) {
          if (kept.has(b)) continue;
          this.stats.bytesAllocated -= this.sizes.get(b) ?? 0;
          this.stats.buffers--;
          b.destroy();
        }
        if (keep.length) bySize.set(size, keep);
        else bySize.delete(size);
      }
    }
  }
}
