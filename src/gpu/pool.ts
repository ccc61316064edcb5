// A buffer pool keyed by size and usage (tfjs-backend-webgpu's habit): released buffers are reused by the
// next request of the same bucket instead of being destroyed and recreated every step. Micro-batches of
// varying length ask for slightly different sizes, so a request also takes the smallest free buffer of up
// to REUSE_SLACK times its bucket before a new one is made: without that, every new length added buffers.
// Of the free buffers of a size, a request gets the oldest (first made), not the last released: the same
// sequence of requests and releases from the same free buffers then gets the same buffers, whatever order
// the previous step released them in, so a step's bind groups (cached by buffer) are found again at the
// next micro-batch or iteration of the same shapes instead of made anew. LIFO permuted them every step.
// Free buffers stay in the pool as long as it holds no more than its in-use peak (the most its users ever
// held at once) plus a headroom: a new buffer that would take it past that first retires the least recently
// taken free buffers, but none taken in the last RECENT_REQUESTS requests, which a loop over layers or
// micro-batches asks for again (PyTorch's caching allocator keeps everything; this one keeps what the work
// has needed at once, and what it took lately). A training loop's phases and iterations so reuse each
// other's buffers and bind groups: a new GPU buffer costs a driver allocation and a clear (a 135M scoring
// with every buffer new took 140 ms, with them reused 115 ms, on an H200: bench/results/iteration/same-sequences/1-score).

/**
 * Free buffers taken within this many requests do not retire. Retiring whatever was least recently taken
 * made a 135M update's backward, at its memory peak, retire the temporaries its previous layer had just
 * released and create 367 buffers (141 ms of its 475; bench/results/iteration/same-sequences/4-marks); a layer takes ~20 buffers.
 * With this rule that backward creates 19 (bench/results/iteration/same-sequences/6-recent).
 */
export const RECENT_REQUESTS = 256;

export interface PoolStats {
  /** Bytes in buffers handed out and not yet released. */
  bytesInUse: number;
  /** Bytes in all live buffers the pool made (in use + free). */
  bytesAllocated: number;
  /** Peak of bytesAllocated since creation (resetPeak). */
  peakBytes: number;
  /** Peak of bytesInUse since creation or the last trim(): the most free and used buffers the pool holds. */
  peakInUse: number;
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
  /** Each buffer's last request number: the least recently taken free buffers retire first. */
  private readonly lastRequest = new WeakMap<GPUBuffer, number>();
  private requests = 0;
  readonly stats: PoolStats = { bytesInUse: 0, bytesAllocated: 0, peakBytes: 0, peakInUse: 0, buffers: 0 };
  /**
   * Bytes of free buffers the pool may hold beyond its in-use peak (default 0). Work whose shapes vary from
   * step to step (sampled lengths) otherwise retires buffers that a later step of another length asks for again.
   */
  headroom = 0;
  /** Free buffers taken within this many requests do not retire (RECENT_REQUESTS; the tests set fewer). */
  protectRecent = RECENT_REQUESTS;
  /** Free buffers retired to stay within the in-use peak, to destroy once the work encoded so far is submitted. */
  private retired: GPUBuffer[] = [];

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
      this.makeRoom(size);
      buf = this.device.createBuffer({ size, usage, label });
      this.sizes.set(buf, size);
      this.serial.set(buf, this.made++);
      this.stats.bytesAllocated += size;
      this.stats.buffers++;
      this.stats.peakBytes = Math.max(this.stats.peakBytes, this.stats.bytesAllocated);
    } // a reused buffer keeps its first label: relabelling crosses into the native binding on every acquire
    this.stats.bytesInUse += size;
    this.stats.peakInUse = Math.max(this.stats.peakInUse, this.stats.bytesInUse);
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

  /**
   * Before a new buffer of `size` bytes: retires free buffers not taken lately (protectRecent), least recently
   * taken first, while the pool would hold more than its in-use peak (this request counted in use) plus the headroom.
   */
  private makeRoom(size: number): void {
    const bound = Math.max(this.stats.peakInUse, this.stats.bytesInUse + size) + this.headroom;
    if (this.stats.bytesAllocated + size <= bound) return;
    const free = [...this.free.values()]
      .flatMap((m) => [...m.values()])
      .flat()
      .filter((b) => this.lastRequest.get(b)! <= this.requests - this.protectRecent)
      .sort((a, b) => this.lastRequest.get(a)! - this.lastRequest.get(b)!);
    const gone = new Set<GPUBuffer>();
    for (const b of free) {
      if (this.stats.bytesAllocated + size <= bound) break;
      gone.add(b);
      this.forget(b);
    }
    for (const bySize of this.free.values()) {
      for (const [s, list] of bySize) {
        const keep = list.filter((b) => !gone.has(b));
        if (keep.length) bySize.set(s, keep);
        else bySize.delete(s);
      }
    }
    this.retired.push(...gone);
  }

  /** Takes a free buffer out of the pool's accounting (the caller destroys it). */
  private forget(b: GPUBuffer): void {
    this.stats.bytesAllocated -= this.sizes.get(b) ?? 0;
    this.stats.buffers--;
  }

  /**
   * Destroys the buffers retired since the last call. The owner calls it after submitting: a retired buffer
   * may be bound in work encoded before it was retired (destroy() after submit lets that work finish).
   */
  destroyRetired(): void {
    for (const b of this.retired.splice(0)) b.destroy();
  }

  /** Destroys every free buffer (the retired ones too), and starts the in-use peak again from what is in use. */
  trim(): void {
    for (const bySize of this.free.values())
      for (const list of bySize.values())
        for (const b of list) {
          this.forget(b);
          b.destroy();
        }
    this.free.clear();
    this.destroyRetired();
    this.stats.peakInUse = this.stats.bytesInUse;
  }
}
