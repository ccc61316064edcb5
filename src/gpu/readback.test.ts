// ReadQueue: queued tensors come back in one readback (Gpu.readMany), a snapshot as it was when taken, a
// read as it is at the flush; a value asked for before its flush is an error.
import { describe, expect, it } from 'vitest';
import { addInto } from '../../kernels/elementwise/elementwise.ts';
import { testGpu } from '../../kernels/testing.ts';
import { ReadQueue } from './readback.ts';

describe('ReadQueue', () => {
  it('reads every queued tensor in one readback: snapshots as they were, reads as they are at the flush', async () => {
    const gpu = await testGpu();
    const a = gpu.upload([1, 2, 3], [3], 'f32', 'a');
    const b = gpu.upload([10, 20, 30], [3], 'f32', 'b');
    const h = gpu.upload([1.5, -2, 0.25], [3], 'bf16', 'h');
    const i = gpu.upload([7, -8], [2], 'i32', 'i');
    const q = new ReadQueue(gpu);
    const before = q.snapshot(a, (x) => Array.from(x));
    const after = q.read(a, (x) => Array.from(x));
    const [hL, iL] = [q.read(h), q.read(i)];
    expect(() => before.get()).toThrow(/read before its queue was flushed/);
    addInto(gpu, a, b); // a += b, after the snapshot
    const r0 = gpu.readCount;
    await q.flush();
    expect(gpu.readCount - r0).toBe(1);
    expect(before.get()).toEqual([1, 2, 3]);
    expect(after.get()).toEqual([11, 22, 33]);
    expect(Array.from(hL.get())).toEqual([1.5, -2, 0.25]);
    expect(iL.get()).toBeInstanceOf(Int32Array);
    expect(Array.from(iL.get())).toEqual([7, -8]);
    await q.flush(); // nothing queued: no readback
    expect(gpu.readCount - r0).toBe(1);
    gpu.release(a, b, h, i);
  });
});
