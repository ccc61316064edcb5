import { describe, expect, it } from 'vitest';
import { addInto } from '../../kernels/elementwise/elementwise.ts';
import { matmul } from '../../kernels/matmul/matmul.ts';
import { randn, testGpu } from '../../kernels/testing.ts';

describe('profiler', () => {
  it('times every dispatch by program key without changing results', async () => {
    const gpu = await testGpu();
    const a = gpu.upload(randn(16 * 8, 1), [16, 8], 'f32', 'a');
    const b = gpu.upload(randn(8 * 12, 2), [8, 12], 'f32', 'b');
    const c = gpu.tensor([16, 12], 'f32', 'c');
    matmul(gpu, c, a, b);
    const plain = await gpu.readF32(c);
    gpu.startProfile();
    matmul(gpu, c, a, b);
    const z = gpu.zeros([16, 12], 'f32', 'z');
    for (let i = 0; i < 3; i++) addInto(gpu, c, z);
    const times = await gpu.stopProfile();
    expect(Array.from(await gpu.readF32(c))).toEqual(Array.from(plain));
    const mm = times.find((t) => t.key.startsWith('matmul'));
    const add = times.find((t) => t.key.startsWith('elementwise/'));
    expect(mm?.calls).toBe(1);
    expect(add?.calls).toBe(3);
    for (const t of times) expect(t.ms).toBeGreaterThanOrEqual(0);
    gpu.release(a, b, c, z);
  });

  it('resolves a full query set and goes on: more dispatches than one set holds are all counted, largest total first', async () => {
    const gpu = await testGpu();
    const x = gpu.upload([1, 2], [2], 'f32', 'x');
    const y = gpu.zeros([2], 'f32', 'y');
    const n = 2100; // over the 2048 dispatches a query set holds
    gpu.startProfile();
    for (let i = 0; i < n; i++) addInto(gpu, y, x);
    const m = gpu.tensor([16, 12], 'f32', 'm');
    const a = gpu.upload(randn(16 * 8, 1), [16, 8], 'f32', 'a');
    const b = gpu.upload(randn(8 * 12, 2), [8, 12], 'f32', 'b');
    matmul(gpu, m, a, b);
    const times = await gpu.stopProfile();
    expect(Array.from(await gpu.readF32(y))).toEqual([n, 2 * n]);
    expect(times.find((t) => t.key.startsWith('elementwise/'))?.calls).toBe(n);
    expect(times.reduce((s, t) => s + t.calls, 0)).toBe(n + 1);
    for (let i = 1; i < times.length; i++) expect(times[i - 1].ms).toBeGreaterThanOrEqual(times[i].ms);
    expect(await gpu.stopProfile()).toEqual([]); // not profiling: nothing
    gpu.release(x, y, m, a, b);
  });
});
