import { describe, expect, it } from 'vitest';
import { dot, expectClose, finiteDiff, randn, testGpu } from '../testing.ts';
import { swigluBackward, swigluForward } from './swiglu.ts';
import { swigluBackwardRef, swigluForwardRef } from './swiglu.ref.ts';

const SHAPES: Array<[N: number, I: number]> = [
  [1, 1],
  [7, 5],
  [64, 64],
  [65, 130],
  [130, 7],
];
const f32 = (a: Float64Array) => Float64Array.from(Float32Array.from(a));

describe('swiglu', () => {
  for (const [N, I] of SHAPES) {
    it(`forward and backward N=${N} I=${I}`, async () => {
      const gpu = await testGpu();
      const gate = f32(randn(N * I, 1 + N, 6)); // wide enough to reach both tails of the sigmoid
      const up = f32(randn(N * I, 2 + I, 2));
      const dout = f32(randn(N * I, 3 + N + I));
      if (N * I > 2) {
        gate[0] = -100;
        gate[1] = 100;
      } // exp overflow and saturation
      const tGate = gpu.upload(gate, [N, I], 'f32', 'gate');
      const tUp = gpu.upload(up, [N, I], 'f32', 'up');
      const tDout = gpu.upload(dout, [N, I], 'f32', 'dout');
      const out = gpu.tensor([N, I], 'f32', 'out');
      const dgate = gpu.tensor([N, I], 'f32', 'dgate');
      const dup = gpu.tensor([N, I], 'f32', 'dup');
      swigluForward(gpu, out, tGate, tUp);
      swigluBackward(gpu, dgate, dup, tDout, tGate, tUp);
      const ref = swigluBackwardRef(dout, gate, up);
      expectClose('out', await gpu.read(out), swigluForwardRef(gate, up), { atol: 1e-6, rtol: 1e-5 });
      expectClose('dgate', await gpu.read(dgate), ref.dgate, { atol: 1e-6, rtol: 1e-5 });
      expectClose('dup', await gpu.read(dup), ref.dup, { atol: 1e-6, rtol: 1e-5 });
      gpu.release(tGate, tUp, tDout, out, dgate, dup);
    });
  }

  it('backward reference matches finite differences of the forward', () => {
    const n = 40;
    const gate = randn(n, 11, 6);
    const up = randn(n, 12, 2);
    const dout = randn(n, 13);
    const ref = swigluBackwardRef(dout, gate, up);
    const fdGate = finiteDiff((g) => dot(swigluForwardRef(g, up), dout), gate);
    const fdUp = finiteDiff((x) => dot(swigluForwardRef(gate, x), dout), up);
    expectClose('dgate vs fd', ref.dgate, fdGate, { atol: 1e-8, rtol: 1e-6 });
    expectClose('dup vs fd', ref.dup, fdUp, { atol: 1e-8, rtol: 1e-6 });
  });

  it('rejects mismatched shapes before dispatch', async () => {
    const gpu = await testGpu();
    const gate = gpu.upload(randn(6, 1), [2, 3], 'f32', 'gate');
    const up = gpu.upload(randn(8, 2), [2, 4], 'f32', 'up');
    const out = gpu.tensor([2, 3], 'f32', 'out');
    const before = gpu.dispatchCount;
    expect(() => swigluForward(gpu, out, gate, up)).toThrow(/swigluForward: up must be \(2, 3\) f32 like gate, got \[2, 4\] f32/);
    expect(() => swigluBackward(gpu, out, out, up, gate, gate)).toThrow(/swigluBackward: dout must be \(2, 3\)/);
    expect(() => swigluForward(gpu, out, out, gate)).toThrow(/swigluForward: gate and out must be different buffers/);
    expect(gpu.dispatchCount).toBe(before);
    gpu.release(gate, up, out);
  });
});
