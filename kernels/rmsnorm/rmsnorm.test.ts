import { describe, expect, it } from 'vitest';
import { round16 } from '../../src/gpu/half.ts';
import { dot, expectClose, finiteDiff, randn, testGpu } from '../testing.ts';
import { type RmsnormPath, rmsnormBackward, rmsnormForward } from './rmsnorm.ts';
import { rmsnormBackwardRef, rmsnormForwardRef } from './rmsnorm.ref.ts';

const SHAPES: Array<[N: number, C: number]> = [
  [1, 1],
  [7, 7],
  [64, 64],
  [65, 65],
  [130, 130],
  [3, 4096],
  [200, 33],
];
const EPS = 1e-6;
const f32 = (a: Float64Array) => Float64Array.from(Float32Array.from(a));

describe('rmsnorm', () => {
  // Both paths ('wg' for GPUs; 'row', the CPU adapters' default, which replaced 'wg' there) on every case,
  // each against the reference, and 'row' against 'wg' (bit for bit: the fused kernels rely on it).
  const runs = new Map<string, Float32Array[]>();
  for (const dtype of ['f32', 'bf16', 'f16'] as const) {
    for (const [N, C] of SHAPES)
      for (const path of ['wg', 'row'] as RmsnormPath[]) {
        it(`forward and backward ${dtype} N=${N} C=${C} ${path}`, async () => {
          const gpu = await testGpu();
          const x = f32(randn(N * C, 1 + N + C, 3));
          const w = randn(C, 2 + C, 1.5);
          const wRef = dtype === 'f32' ? f32(w) : round16(w, dtype);
          const dy = f32(randn(N * C, 3 + N));
          const dw0 = f32(randn(C, 4 + C)); // dw accumulates
          const tX = gpu.upload(x, [N, C], 'f32', 'x');
          const tW = gpu.upload(w, [C], dtype, 'w');
          const tDy = gpu.upload(dy, [N, C], 'f32', 'dy');
          const tDw = gpu.upload(dw0, [C], 'f32', 'dw');
          const out = gpu.tensor([N, C], 'f32', 'out');
          const rstd = gpu.tensor([N], 'f32', 'rstd');
          const dx = gpu.tensor([N, C], 'f32', 'dx');
          rmsnormForward(gpu, out, rstd, tX, tW, EPS, path);
          rmsnormBackward(gpu, dx, tDw, tDy, tX, tW, rstd, path);
          const fwd = rmsnormForwardRef(x, wRef, N, C, EPS);
          const bwd = rmsnormBackwardRef(dy, x, wRef, N, C, EPS);
          const tol = { atol: 1e-5, rtol: 1e-4 };
          expectClose('out', await gpu.read(out), fwd.out, tol);
          expectClose('rstd', await gpu.read(rstd), fwd.rstd, tol);
          expectClose('dx', await gpu.read(dx), bwd.dx, tol);
          expectClose(
            'dw',
            await gpu.read(tDw),
            bwd.dw.map((g, i) => g + dw0[i]),
            { atol: 1e-4, rtol: 1e-4 },
          );
          const got = [await gpu.read(out), await gpu.read(rstd), await gpu.read(dx)] as Float32Array[];
          const key = `${dtype} ${N}x${C}`;
          const other = runs.get(key);
          // the same operations in the same order: the same bits
          if (other)
            for (const [i, name] of ['out', 'rstd', 'dx'].entries())
              expectClose(`${name} row vs wg`, got[i], other[i], { atol: 0, rtol: 0 });
          else runs.set(key, got);
          gpu.release(tX, tW, tDy, tDw, out, rstd, dx);
        });
      }
  }

  it('backward without dw leaves nothing else written', async () => {
    const gpu = await testGpu();
    const [N, C] = [5, 9];
    const x = f32(randn(N * C, 21));
    const w = f32(randn(C, 22));
    const dy = f32(randn(N * C, 23));
    const tX = gpu.upload(x, [N, C], 'f32', 'x');
    const tW = gpu.upload(w, [C], 'f32', 'w');
    const tDy = gpu.upload(dy, [N, C], 'f32', 'dy');
    const out = gpu.tensor([N, C], 'f32', 'out');
    const rstd = gpu.tensor([N], 'f32', 'rstd');
    const dx = gpu.tensor([N, C], 'f32', 'dx');
    const before = gpu.dispatchCount;
    rmsnormForward(gpu, out, rstd, tX, tW, EPS);
    rmsnormBackward(gpu, dx, null, tDy, tX, tW, rstd);
    expect(gpu.dispatchCount - before).toBe(2);
    expectClose('dx', await gpu.read(dx), rmsnormBackwardRef(dy, x, w, N, C, EPS).dx, { atol: 1e-5, rtol: 1e-4 });
    gpu.release(tX, tW, tDy, out, rstd, dx);
  });

  it('backward reference matches finite differences of the forward', () => {
    const [N, C] = [3, 5];
    const x = randn(N * C, 31, 2);
    const w = randn(C, 32);
    const dy = randn(N * C, 33);
    const eps = 1e-5;
    const ref = rmsnormBackwardRef(dy, x, w, N, C, eps);
    const fdX = finiteDiff((v) => dot(rmsnormForwardRef(v, w, N, C, eps).out, dy), x);
    const fdW = finiteDiff((v) => dot(rmsnormForwardRef(x, v, N, C, eps).out, dy), w);
    expectClose('dx vs fd', ref.dx, fdX, { atol: 1e-8, rtol: 1e-6 });
    expectClose('dw vs fd', ref.dw, fdW, { atol: 1e-8, rtol: 1e-6 });
  });

  it('rejects mismatched shapes before dispatch', async () => {
    const gpu = await testGpu();
    const x = gpu.upload(randn(6, 1), [2, 3], 'f32', 'x');
    const w = gpu.upload(randn(4, 2), [4], 'bf16', 'w');
    const w3 = gpu.upload(randn(3, 2), [3], 'f32', 'w3');
    const out = gpu.tensor([2, 3], 'f32', 'out');
    const rstd = gpu.tensor([3], 'f32', 'rstd');
    const before = gpu.dispatchCount;
    expect(() => rmsnormForward(gpu, out, rstd, x, w, EPS)).toThrow(
      /rmsnormForward: w must be \(3\) f32\/bf16\/f16 for x \[2, 3\] f32, got \[4\] bf16/,
    );
    expect(() => rmsnormForward(gpu, out, rstd, x, w3, EPS)).toThrow(/rmsnormForward: rstd must be \(2\) f32, got \[3\] f32/);
    expect(() => rmsnormBackward(gpu, out, w, out, x, w3, rstd)).toThrow(/rmsnormBackward: rstd must be \(2\) f32/);
    expect(() => rmsnormForward(gpu, x, gpu.tensor([2], 'f32', 'r2'), x, w3, EPS)).toThrow(
      /rmsnormForward: x and out must be different buffers/,
    );
    expect(gpu.dispatchCount).toBe(before);
    gpu.release(x, w, w3, out, rstd);
  });
});
