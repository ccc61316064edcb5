import { describe, expect, it } from 'vitest';
import { round16 } from '../../src/gpu/half.ts';
import { dot, expectClose, finiteDiff, randInt, randn, testGpu } from '../testing.ts';
import { embeddingBackward, embeddingForward } from './embedding.ts';
import { embeddingBackwardRef, embeddingForwardRef } from './embedding.ref.ts';

const SHAPES: Array<[N: number, V: number, C: number]> = [
  [1, 1, 1],
  [7, 5, 3],
  [64, 17, 64],
  [65, 33, 65],
  [130, 9, 7],
];

describe('embedding', () => {
  for (const dtype of ['f32', 'bf16', 'f16'] as const) {
    for (const [N, V, C] of SHAPES) {
      it(`forward ${dtype} N=${N} V=${V} C=${C}`, async () => {
        const gpu = await testGpu();
        const ids = randInt(N, 1 + N, V);
        if (N > 2) ids[1] = -1; // padding id: a zero row
        const w = randn(V * C, 2 + C);
        const wRef = dtype === 'f32' ? Float64Array.from(Float32Array.from(w)) : round16(w, dtype);
        const tIds = gpu.upload(ids, [N], 'i32', 'ids');
        const tW = gpu.upload(w, [V, C], dtype, 'w');
        const out = gpu.tensor([N, C], 'f32', 'out');
        embeddingForward(gpu, out, tIds, tW);
        expectClose('out', await gpu.read(out), embeddingForwardRef(ids, wRef, V, C), { atol: 0, rtol: 0 });
        gpu.release(tIds, tW, out);
      });
    }
  }

  for (const dtype of ['f32', 'bf16'] as const) {
    it(`forward ${dtype} over a table split by rows equals the whole table's`, async () => {
      const gpu = await testGpu();
      const [N, V, C] = [9, 11, 6];
      const ids = Int32Array.from([0, 10, 4, -1, 5, 11, 3, 7, 4]); // ids past the table and padding give zero rows
      const w = randn(V * C, 9);
      const wRef = dtype === 'f32' ? Float64Array.from(Float32Array.from(w)) : round16(w, dtype);
      const tIds = gpu.upload(ids, [N], 'i32', 'ids');
      const out = gpu.tensor([N, C], 'f32', 'out');
      const parts = [
        [0, 4],
        [4, 5],
        [5, 11],
      ].map(([a, b]) => ({ first: a, t: gpu.upload(w.subarray(a * C, b * C), [b - a, C], dtype, `w${a}`) }));
      for (const p of parts) embeddingForward(gpu, out, tIds, p.t, { first: p.first, total: V });
      expectClose('out', await gpu.read(out), embeddingForwardRef(ids, wRef, V, C), { atol: 0, rtol: 0 });
      gpu.release(tIds, out, ...parts.map((p) => p.t));
    });
  }

  for (const [N, V, C] of SHAPES) {
    it(`backward N=${N} V=${V} C=${C}`, async () => {
      const gpu = await testGpu();
      const ids = randInt(N, 3 + N, V);
      const dout = randn(N * C, 4 + N);
      const dw0 = randn(V * C, 5); // backward accumulates into dweight
      const tDout = gpu.upload(dout, [N, C], 'f32', 'dout');
      const tDw = gpu.upload(dw0, [V, C], 'f32', 'dw');
      embeddingBackward(gpu, tDw, tDout, ids);
      const ref = embeddingBackwardRef(ids, dout, V, C).map((g, i) => g + dw0[i]);
      expectClose('dweight', await gpu.read(tDw), ref, { atol: 1e-5, rtol: 1e-5 });
      gpu.release(tDout, tDw);
    });
  }

  it('backward reference matches finite differences of the forward', () => {
    const [N, V, C] = [6, 4, 3];
    const ids = Int32Array.from([0, 2, 2, 3, 0, 2]);
    const w = randn(V * C, 7);
    const dout = randn(N * C, 8);
    const fd = finiteDiff((x) => dot(embeddingForwardRef(ids, x, V, C), dout), w);
    expectClose('dweight vs fd', embeddingBackwardRef(ids, dout, V, C), fd, { atol: 1e-8, rtol: 1e-6 });
  });

  it('rejects mismatched shapes before dispatch', async () => {
    const gpu = await testGpu();
    const ids = gpu.upload([0, 1], [2], 'i32', 'ids');
    const w = gpu.upload(randn(12, 1), [4, 3], 'f32', 'w');
    const out = gpu.tensor([2, 4], 'f32', 'out');
    const before = gpu.dispatchCount;
    expect(() => embeddingForward(gpu, out, ids, w)).toThrow(/embeddingForward: out must be \(2, 3\) f32, got \[2, 4\] f32/);
    expect(gpu.dispatchCount).toBe(before);
    gpu.release(ids, w, out);
  });
});
