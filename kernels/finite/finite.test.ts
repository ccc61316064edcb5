// The non-finite count against its float64 reference: NaNs of every bit pattern (quiet, signalling, with
// the sign bit), ±Inf, and the finite extremes (max float, denormals, -0) at sizes around the workgroup
// and the stride of one dispatch; slots accumulate and stay apart. Both paths (the GPU's 'grid', the CPU
// adapters' 'few', which reads four values a step and then the n % 4 tail) run every case, so the CPU form
// is checked against the reference and against the form it replaces. The op has no backward (it only reads).

import { describe, expect, it } from 'vitest';
import { Rng } from '../../src/common/rng.ts';
import { randn, testGpu } from '../testing.ts';
import { type FinitePath, MANY, countNonFinite, countNonFiniteMany } from './finite.ts';
import { countNonFiniteRef } from './finite.ref.ts';

// raw bit patterns, written through a u32 view (a JS NaN stored as f32 may be canonicalised)
const BAD = [0x7fc00000, 0x7f800000, 0xff800000, 0xffc00000, 0x7f800001, 0x7fbfffff, 0xffffffff];
const EDGE = [0x7f7fffff, 0xff7fffff, 0x00000001, 0x80000000, 0x807fffff];

describe('finite', () => {
  for (const [n, path] of [1, 3, 255, 256, 257, 70_000, 70_003, 1_050_001].flatMap((n) =>
    (['grid', 'few'] as FinitePath[]).map((p) => [n, p] as const),
  )) {
    it(`counts non-finite values, n=${n}, ${path}`, async () => {
      const gpu = await testGpu();
      const r = new Rng(n);
      const x = Float32Array.from(randn(n, n, 10));
      const u = new Uint32Array(x.buffer);
      for (let k = 0; k < Math.min(n, 7); k++) u[r.int(n)] = EDGE[k % EDGE.length];
      const nBad = n === 1 ? 1 : 1 + r.int(Math.min(n, 40));
      if (n > 4) u[n - 1] = BAD[0]; // the last value (in the n % 4 tail when there is one)
      for (let k = 0; k < nBad; k++) u[r.int(n)] = BAD[k % BAD.length];
      const clean = Float32Array.from(randn(n, n + 1));
      const flags = gpu.zeros([3], 'u32', 'flags');
      const tx = gpu.upload(x, [n], 'f32', 'x');
      const tc = gpu.upload(clean, [n], 'f32', 'clean');
      countNonFinite(gpu, flags, 0, tx, path);
      countNonFinite(gpu, flags, 2, tx, path);
      countNonFinite(gpu, flags, 2, tx, path); // accumulates
      countNonFinite(gpu, flags, 1, tc, path);
      const want = countNonFiniteRef(x);
      expect(want).toBeGreaterThan(0);
      expect(Array.from(await gpu.read(flags))).toEqual([want, 0, 2 * want]);
      gpu.release(flags, tx, tc);
    });
  }

  for (const path of ['grid', 'few'] as FinitePath[]) {
    it(`counts many tensors in dispatches of ${MANY}, as one call each would, ${path}`, async () => {
      const gpu = await testGpu();
      const sizes = [1, 3, 255, 257, 70_003, 4, 0, 1_050_001, 9, 256, 5, 70_000, 2]; // 13 tensors: three dispatches, one of 1
      const slots = [0, 1, 2, 3, 4, 5, 6, 7, 8, 1, 9, 10, 11]; // slot 1 twice: the counts add
      const r = new Rng(7);
      const xs = sizes.map((n, k) => {
        const x = Float32Array.from(randn(n, 100 + k, 10));
        const u = new Uint32Array(x.buffer);
        if (n && k % 3 !== 2) for (let b = 0; b < 1 + r.int(Math.min(n, 9)); b++) u[r.int(n)] = BAD[(b + k) % BAD.length];
        if (n > 4 && k % 2) u[n - 1] = BAD[1]; // in the n % 4 tail
        return x;
      });
      const ts = xs.map((x, k) => gpu.upload(x, [sizes[k]], 'f32', `x${k}`));
      const many = gpu.zeros([12], 'u32', 'many');
      const one = gpu.zeros([12], 'u32', 'one');
      const d0 = gpu.dispatchCount;
      countNonFiniteMany(
        gpu,
        many,
        ts.map((x, k) => ({ slot: slots[k], x })),
        path,
      );
      expect(gpu.dispatchCount - d0).toBe(Math.ceil(12 / MANY)); // the empty tensor takes no place
      ts.forEach((x, k) => countNonFinite(gpu, one, slots[k], x, path));
      const want = new Array(12).fill(0);
      xs.forEach((x, k) => {
        want[slots[k]] += countNonFiniteRef(x);
      });
      expect(want.filter((c) => c > 0).length).toBeGreaterThan(5);
      expect(Array.from(await gpu.read(many))).toEqual(want);
      expect(Array.from(await gpu.read(one))).toEqual(want);
      gpu.release(many, one, ...ts);
    });
  }

  it('refuses a slot outside the flags and a tensor that is not f32', async () => {
    const gpu = await testGpu();
    const flags = gpu.zeros([2], 'u32', 'flags');
    const x = gpu.zeros([4], 'f32', 'x');
    const i = gpu.zeros([4], 'i32', 'i');
    expect(() => countNonFinite(gpu, flags, 2, x)).toThrow(/slot 2 is outside flags \(2\)/);
    expect(() => countNonFinite(gpu, flags, 0, i)).toThrow(/x must be f32/);
    expect(() =>
      countNonFiniteMany(gpu, flags, [
        { slot: 0, x },
        { slot: 0, x: i },
      ]),
    ).toThrow(/countNonFiniteMany: x must be f32/);
    gpu.release(flags, x, i);
  });
});
