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
});
