import { describe, expect, it } from 'vitest';
import { expectClose, randn, testGpu } from '../testing.ts';
import { kvAppend } from './kvcache.ts';
import { kvAppendRef } from './kvcache.ref.ts';

describe('kvcache', () => {
  for (const [B, Tq, Tcap, NKV, HS, t0] of [
    [1, 1, 1, 1, 1, 0],
    [2, 1, 9, 2, 8, 5],
    [3, 7, 20, 3, 65, 13],
    [2, 65, 130, 1, 64, 0],
  ]) {
    it(`append B=${B} Tq=${Tq} Tcap=${Tcap} W=${NKV}x${HS} t0=${t0}`, async () => {
      const gpu = await testGpu();
      const W = NKV * HS;
      const cache = Float64Array.from(Float32Array.from(randn(B * Tcap * W, 1)));
      const src = Float64Array.from(Float32Array.from(randn(B * Tq * W, 2)));
      const tc = gpu.upload(cache, [B, Tcap, NKV, HS], 'f32', 'cache');
      const ts = gpu.upload(src, [B, Tq, NKV, HS], 'f32', 'src');
      kvAppend(gpu, tc, ts, t0);
      const want = kvAppendRef(cache, src, B, Tq, Tcap, W, t0);
      expectClose('cache', await gpu.read(tc), want, { atol: 0, rtol: 0 });
      // t0 read on the GPU (a recorded decode step)
      const tc2 = gpu.upload(cache, [B, Tcap, NKV, HS], 'f32', 'cache2');
      const t0Gpu = gpu.upload([t0], [1], 'i32', 't0');
      kvAppend(gpu, tc2, ts, t0, t0Gpu);
      expectClose('cache, t0 on the GPU', await gpu.read(tc2), want, { atol: 0, rtol: 0 });
      gpu.release(tc, ts, tc2, t0Gpu);
    });
  }

  it('copies i32 ids bit for bit (no trip through f32)', async () => {
    const gpu = await testGpu();
    const tc = gpu.zeros([2, 3, 1], 'i32', 'ids');
    const ts = gpu.upload([7, 123456], [2, 1, 1], 'i32', 'tok');
    kvAppend(gpu, tc, ts, 1);
    expect(Array.from(await gpu.read(tc))).toEqual([0, 7, 0, 0, 123456, 0]);
    gpu.release(tc, ts);
  });

  it('rejects a write past the capacity before dispatch', async () => {
    const gpu = await testGpu();
    const tc = gpu.tensor([1, 4, 2], 'f32', 'cache');
    const ts = gpu.tensor([1, 2, 2], 'f32', 'src');
    const before = gpu.dispatchCount;
    expect(() => kvAppend(gpu, tc, ts, 3)).toThrow(/kvAppend: positions 3\.\.5 exceed the cache capacity 4/);
    expect(gpu.dispatchCount).toBe(before);
    gpu.release(tc, ts);
  });
});
