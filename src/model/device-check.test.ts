// The probe's device check and speed probe on the test device (Dawn; SwiftShader where there is no GPU):
// the check compares a kernel with the CPU and reports a mismatch; the speed probe times real products
// (each read equals the CPU's) and turns its two timings into a dispatch cost and a throughput.

import { afterEach, describe, expect, it, vi } from 'vitest';
import { testGpu } from '../../kernels/testing.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { deviceCheck, deviceSpeed } from './device-check.ts';

afterEach(() => vi.restoreAllMocks());

/** The probe's (n, n) matrix times itself, in float64. */
function probeSquare(n: number): number[] {
  const a = Array.from({ length: n * n }, (_, i) => ((i % 7) - 3) / 8);
  const out = new Array<number>(n * n).fill(0);
  for (let i = 0; i < n; i++) for (let k = 0; k < n; k++) for (let j = 0; j < n; j++) out[i * n + j] += a[i * n + k] * a[k * n + j];
  return out;
}

describe('device probe', () => {
  it('checks compute end to end against the CPU, and reports a device that computes wrong', async () => {
    const gpu = await testGpu();
    expect(await deviceCheck(gpu)).toEqual({ ok: true, detail: 'embedding gather matches the CPU' });
    const read = gpu.read.bind(gpu);
    vi.spyOn(gpu, 'read').mockImplementation(async (t: Tensor) => (await read(t)).map((x) => x + 1));
    const bad = await deviceCheck(gpu);
    expect(bad.ok).toBe(false);
    expect(bad.detail).toMatch(/^embedding gather mismatch: got /);
  });

  it('times real matmuls: every product it reads equals the CPU reference', async () => {
    const gpu = await testGpu();
    const read = gpu.read.bind(gpu);
    const seen: Float32Array[] = [];
    vi.spyOn(gpu, 'read').mockImplementation(async (t: Tensor) => {
      const got = (await read(t)) as Float32Array;
      seen.push(got);
      return got;
    });
    const s = await deviceSpeed(gpu);
    expect(s.dispatchMs).toBeGreaterThan(0);
    expect(s.gflops).toBeGreaterThan(0);
    expect(seen.map((x) => x.length)).toEqual([32 * 32, 32 * 32, 128 * 128, 128 * 128]);
    for (const got of seen) {
      const want = probeSquare(Math.sqrt(got.length));
      let worst = 0;
      got.forEach((g, i) => {
        worst = Math.max(worst, Math.abs(g - want[i]));
      });
      expect(worst).toBeLessThan(1e-4);
    }
  });

  it('derives the dispatch cost and the throughput from its two timings', async () => {
    const gpu = await testGpu();
    // 40 small products in 40 ms (1 ms a dispatch), 3 big ones in 15 ms: 4 ms of compute each
    let clock = [0, 40, 100, 115];
    vi.spyOn(performance, 'now').mockImplementation(() => clock.shift()!);
    expect(await deviceSpeed(gpu)).toEqual({ dispatchMs: 1, gflops: (2 * 128 ** 3) / (4 * 1e6) });
    // a big product no slower than the dispatch floor: a tenth of its time counts as compute (timer noise)
    clock = [0, 40, 0, 3];
    expect(await deviceSpeed(gpu)).toEqual({ dispatchMs: 1, gflops: (2 * 128 ** 3) / (0.1 * 1e6) });
  });
});
