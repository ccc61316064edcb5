import { describe, expect, it } from 'vitest';
import { dot, expectClose, finiteDiff, randn, testGpu } from '../testing.ts';
import { addBias, addInto, reluBackward, reluForward } from './elementwise.ts';
import { addBiasRef, addRef, reluBackwardRef, reluRef } from './elementwise.ref.ts';

const f32 = (a: Float64Array) => Float64Array.from(Float32Array.from(a));

describe('elementwise', () => {
  for (const n of [1, 7, 256, 257, 1030]) {
    it(`add, relu, relu backward, bias n=${n}`, async () => {
      const gpu = await testGpu();
      const x = f32(randn(n, n));
      const y = f32(randn(n, n + 1));
      const dy = f32(randn(n, n + 2));
      const tx = gpu.upload(x, [n], 'f32', 'x');
      const ty = gpu.upload(y, [n], 'f32', 'y');
      const tdy = gpu.upload(dy, [n], 'f32', 'dy');
      addInto(gpu, ty, tx, 0.5);
      expectClose('add', await gpu.read(ty), addRef(y, x, 0.5), { atol: 1e-6, rtol: 1e-6 });
      const tr = gpu.tensor([n], 'f32', 'r');
      reluForward(gpu, tr, tx);
      expectClose('relu', await gpu.read(tr), reluRef(x), { atol: 0, rtol: 0 });
      reluBackward(gpu, tr, tdy, tx);
      expectClose('relu backward', await gpu.read(tr), reluBackwardRef(dy, x), { atol: 0, rtol: 0 });
      const C = n % 2 ? 1 : 2;
      const b = f32(randn(C, 9));
      const tb = gpu.upload(b, [C], 'f32', 'b');
      const ty2 = gpu.upload(y, [n / C, C], 'f32', 'y2');
      addBias(gpu, ty2, tb);
      expectClose('bias', await gpu.read(ty2), addBiasRef(y, b), { atol: 1e-6, rtol: 1e-6 });
      gpu.release(tx, ty, tdy, tr, tb, ty2);
    });
  }

  it('add covers every element past 65535 workgroups, where the grid spreads over rows', async () => {
    const gpu = await testGpu();
    const n = 65535 * 256 + 70 * 256 + 3; // grid1d: 65606 workgroups as 2 rows of 32803
    const x = new Float32Array(n).map((_, i) => (i % 1009) * 0.25);
    const tx = gpu.upload(x, [n], 'f32', 'x');
    const ty = gpu.zeros([n], 'f32', 'y');
    addInto(gpu, ty, tx, 2);
    const y = await gpu.readF32(ty);
    let wrong = 0;
    for (let i = 0; i < n; i++) if (y[i] !== 2 * x[i]) wrong++;
    expect(wrong).toBe(0);
    gpu.release(tx);
    gpu.release(ty);
  });

  it('relu backward reference matches finite differences', () => {
    const x = randn(20, 3).map((v) => (Math.abs(v) < 0.01 ? 0.5 : v)); // keep away from the kink
    const w = randn(20, 4);
    const fd = finiteDiff((z) => dot(reluRef(z), w), x);
    expectClose('drelu vs fd', reluBackwardRef(w, x), fd, { atol: 1e-8, rtol: 1e-6 });
  });

  it('rejects mismatched sizes before dispatch', async () => {
    const gpu = await testGpu();
    const a = gpu.tensor([4], 'f32', 'a');
    const b = gpu.tensor([5], 'f32', 'b');
    const before = gpu.dispatchCount;
    expect(() => addInto(gpu, a, b)).toThrow(/addInto: sizes differ: \[4\] f32 vs \[5\] f32/);
    expect(gpu.dispatchCount).toBe(before);
    gpu.release(a, b);
  });
});
