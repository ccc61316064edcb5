import { describe, expect, it } from 'vitest';
import { BufferPool, REUSE_SLACK, bucketSize } from './pool.ts';

/** A stand-in device: buffers are plain objects with the size and usage they were made with. */
function fakeDevice() {
  const made: Array<{ size: number; usage: number; destroyed: boolean }> = [];
  const device = {
    createBuffer: ({ size, usage, label }: GPUBufferDescriptor) => {
      const b = { size, usage, label, destroyed: false, destroy() { this.destroyed = true; } };
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
    expect(pool.stats.peakBytes).toBe(18 * MiB);
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

  it('trim(since) destroys only the free buffers no request took after the mark', () => {
    const { device, made } = fakeDevice();
    const pool = new BufferPool(device);
    const old = pool.acquire(1000, 128, 'old');
    const mid = pool.acquire(5000, 128, 'mid');
    pool.release(old);
    pool.release(mid);
    const m = pool.mark();
    const again = pool.acquire(5000, 128, 'again'); // takes mid back: recent
    const fresh = pool.acquire(300, 128, 'fresh');
    pool.release(again);
    pool.release(fresh);
    pool.trim(m);
    expect(made.filter((b) => b.destroyed)).toEqual([old]);
    expect(again).toBe(mid);
    expect(pool.acquire(5000, 128, 'x')).toBe(mid); // kept, still served
    expect(pool.stats.buffers).toBe(2);
    pool.trim();
    expect(made.filter((b) => !b.destroyed)).toEqual([mid]); // in use: never destroyed
  });

  it('trim(since, keepBytes) keeps the most recently taken of those, up to keepBytes', () => {
    const { device, made } = fakeDevice();
    const pool = new BufferPool(device);
    const m = pool.mark();
    const [a, b, c] = [pool.acquire(1024, 128, 'a'), pool.acquire(2048, 128, 'b'), pool.acquire(1024, 128, 'c')]; // c taken last
    pool.release(a);
    pool.release(b);
    pool.release(c);
    pool.trim(m, 3072); // c (1 KiB) and b (2 KiB) fit; a, the earliest taken, does not
    expect(made.filter((x) => x.destroyed)).toEqual([a]);
    pool.trim(m, 1024);
    expect(made.filter((x) => x.destroyed)).toEqual([a, b]);
    expect(pool.stats.bytesAllocated).toBe(1024);
  });

  it('refuses a buffer it did not make', () => {
    const { device } = fakeDevice();
    const pool = new BufferPool(device);
    expect(() => pool.release({ label: 'x' } as GPUBuffer)).toThrow(/not made by this pool/);
  });
});
