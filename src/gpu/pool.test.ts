import { describe, expect, it } from 'vitest';
import { BufferPool, REUSE_SLACK, bucketSize } from './pool.ts';

/** A stand-in device: buffers are plain objects with the size and usage they were made with. */
function fakeDevice() {
  const made: Array<{ size: number; usage: number; destroyed: boolean }> = [];
  const device = {
    createBuffer: ({ size, usage, label }: GPUBufferDescriptor) => {
      const b = {
        size,
        usage,
        label,
        destroyed: false,
        destroy() {
          this.destroyed = true;
        },
      };
      made.push(b);
      return b as unknown as GPUBuffer;
    },
  } as unknown as GPUDevice;
  return { device, made };
}

describe('BufferPool', () => {
  it('rounds sizes into buckets (256 B below 1 MiB, eighths of the power of two above)', () => {
    expect(bucketSize(1)).toBe(256);
    expect(bucketSize(257)).toBe(512);
    expect(bucketSize((1 << 20) + 1)).toBe((1 << 20) + (1 << 17));
    expect(bucketSize(3 << 20)).toBe(3 << 20);
  });

  it('reuses a released buffer of the same bucket and usage, not of another usage', () => {
    const { device, made } = fakeDevice();
    const pool = new BufferPool(device);
    const a = pool.acquire(1000, 128, 'a');
    pool.release(a);
    expect(pool.acquire(900, 128, 'b')).toBe(a);
    pool.acquire(900, 64, 'c');
    expect(made.length).toBe(2);
    expect(pool.stats.bytesAllocated).toBe(2048);
  });

  it('serves a request from the smallest free buffer within REUSE_SLACK of its bucket', () => {
    const { device, made } = fakeDevice();
    const pool = new BufferPool(device);
    const MiB = 1 << 20;
    const big = pool.acquire(8 * MiB, 128, 'big');
    const mid = pool.acquire(6 * MiB, 128, 'mid');
    pool.release(big);
    pool.release(mid);
    // 5 MiB: 6 MiB is within 1.5x, 8 MiB is not the smallest fit.
    const r = pool.acquire(5 * MiB, 128, 'r');
    expect(r).toBe(mid);
    expect(pool.stats.bytesInUse).toBe(6 * MiB);
    // 4 MiB: 8 MiB is over 1.5x -> a new buffer.
    const s = pool.acquire(4 * MiB, 128, 's');
    expect(s).not.toBe(big);
    expect(made.length).toBe(3);
    expect(8 / 4).toBeGreaterThan(REUSE_SLACK);
    pool.release(r);
    pool.release(s);
    expect(pool.stats.bytesInUse).toBe(0);
    pool.trim();
    expect(made.every((b) => b.destroyed)).toBe(true);
    expect(pool.stats.bytesAllocated).toBe(0);
    expect(pool.stats.peakBytes).toBe(18 * MiB); // big was taken lately (RECENT_REQUESTS): it did not retire
  });

  it('hands out the oldest free buffer of a size, so a repeated step gets the same buffers whatever order it released them in', () => {
    const { device, made } = fakeDevice();
    const pool = new BufferPool(device);
    const step = (releaseOrder: (bufs: GPUBuffer[]) => GPUBuffer[]): GPUBuffer[] => {
      const bufs = ['x', 'h', 'q', 'att'].map((l) => pool.acquire(4096, 128, l));
      for (const b of releaseOrder(bufs)) pool.release(b);
      return bufs;
    };
    const first = step((b) => b);
    expect(step((b) => [...b].reverse())).toEqual(first);
    expect(step((b) => [b[2], b[0], b[3], b[1]])).toEqual(first);
    expect(step((b) => b)).toEqual(first);
    expect(made.length).toBe(4);
    // a buffer in use is skipped; the oldest of the rest comes next
    const held = pool.acquire(4096, 128, 'held');
    expect(held).toBe(first[0]);
    expect(pool.acquire(4096, 128, 'next')).toBe(first[1]);
  });

  it('keeps free buffers within its in-use peak: a new buffer past it first retires the least recently taken', () => {
    const { device, made } = fakeDevice();
    const pool = new BufferPool(device);
    pool.protectRecent = 0; // any free buffer may retire
    const [a, b, c] = [pool.acquire(1024, 128, 'a'), pool.acquire(2048, 128, 'b'), pool.acquire(1024, 128, 'c')];
    expect(pool.stats.peakInUse).toBe(4096);
    pool.release(a);
    pool.release(b);
    pool.release(c);
    pool.acquire(2048, 128, 'b again'); // b taken again: now the most recently taken
    // 3 KiB more would hold 4 KiB free and used + 3 KiB > the 4 KiB peak: a (taken first), then c, retire
    const d = pool.acquire(3072, 128, 'd');
    expect(pool.stats.bytesAllocated).toBe(5120);
    expect(pool.stats.peakInUse).toBe(5120); // b and d in use: the peak grew with the work
    expect(made.filter((x) => x.destroyed)).toEqual([]); // retired, destroyed only after the next submit
    pool.destroyRetired();
    expect(made.filter((x) => x.destroyed)).toEqual([a, c]);
    expect(pool.stats.buffers).toBe(2);
    pool.release(d);
    const e = pool.acquire(1000, 128, 'e'); // 1 KiB bucket: 5 KiB + 1 KiB > peak 5 KiB, with 3 KiB free to retire
    pool.destroyRetired();
    expect(made.filter((x) => x.destroyed)).toEqual([a, c, d]);
    expect(pool.stats.bytesAllocated).toBe(3072); // b (in use) and e
    expect(pool.stats.bytesAllocated).toBeLessThanOrEqual(pool.stats.peakInUse);
    void e;
  });

  it('never retires a buffer in use, and grows past the peak when the work needs it', () => {
    const { device, made } = fakeDevice();
    const pool = new BufferPool(device);
    const held = [pool.acquire(1024, 128, 'x'), pool.acquire(1024, 128, 'y')];
    pool.acquire(4096, 128, 'z');
    pool.destroyRetired();
    expect(made.filter((x) => x.destroyed)).toEqual([]);
    expect(pool.stats.bytesAllocated).toBe(6144);
    expect(pool.stats.peakInUse).toBe(6144);
    void held;
  });

  it('holds up to its headroom of free buffers beyond the in-use peak', () => {
    const { device, made } = fakeDevice();
    const pool = new BufferPool(device);
    pool.headroom = 4096;
    pool.protectRecent = 0;
    pool.release(pool.acquire(4096, 128, 'a'));
    pool.release(pool.acquire(8192, 128, 'b')); // 4 KiB free + 8 KiB: within the 8 KiB peak + 4 KiB headroom
    pool.release(pool.acquire(2048, 128, 'c')); // 14 KiB > 12 KiB: a, the least recently taken, retires
    pool.destroyRetired();
    expect(made.filter((x) => x.destroyed).map((x) => x.size)).toEqual([4096]);
    expect(pool.stats.bytesAllocated).toBe(10240);
  });

  it('never retires a free buffer taken within protectRecent requests: past the bound, it grows instead', () => {
    const { device, made } = fakeDevice();
    const pool = new BufferPool(device);
    pool.protectRecent = 2;
    const old = pool.acquire(1024, 128, 'long ago');
    pool.release(old);
    const saved = pool.acquire(8192, 128, 'saved activations');
    // a backward at the peak: a layer's temporary, released for the next layer
    const dx = pool.acquire(2048, 128, 'dx');
    pool.release(dx);
    // 11 KiB held + 4 KiB > the bound (8 + 4 KiB in use): the old buffer retires, dx (taken 1 request ago) stays
    pool.acquire(4096, 128, 'other');
    expect(pool.acquire(2048, 128, 'dx again')).toBe(dx);
    pool.destroyRetired();
    expect(made.filter((x) => x.destroyed)).toEqual([old]);
    expect(made.length).toBe(4);
    void saved;
  });

  it('trim() destroys every free buffer and starts the in-use peak again', () => {
    const { device, made } = fakeDevice();
    const pool = new BufferPool(device);
    const [a, b] = [pool.acquire(1024, 128, 'a'), pool.acquire(4096, 128, 'b')];
    pool.release(b);
    pool.trim();
    expect(made.filter((x) => x.destroyed)).toEqual([b]);
    expect(pool.stats.peakInUse).toBe(1024);
    expect(pool.stats.bytesAllocated).toBe(1024);
    void a;
  });

  it('refuses a buffer it did not make', () => {
    const { device } = fakeDevice();
    const pool = new BufferPool(device);
    expect(() => pool.release({ label: 'x' } as GPUBuffer)).toThrow(/not made by this pool/);
  });
});
