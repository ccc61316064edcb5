// The Gpu's running counters (dispatches, read()s, queue submits) that the benches turn into per-step figures.
import { describe, expect, it } from 'vitest';
import { addInto } from '../../kernels/elementwise/elementwise.ts';
import { randn, testGpu } from '../../kernels/testing.ts';

describe('gpu counters', () => {
  it('counts dispatches, readbacks and submits: dispatches batch into one submit until a read', async () => {
    const gpu = await testGpu();
    const a = gpu.upload(randn(32, 1), [32], 'f32', 'a'); // upload = write: submits pending work first (none here)
    const z = gpu.zeros([32], 'f32', 'z');
    const [d0, r0, s0] = [gpu.dispatchCount, gpu.readCount, gpu.submitCount];
    for (let i = 0; i < 3; i++) addInto(gpu, a, z);
    expect(gpu.dispatchCount - d0).toBe(3);
    expect(gpu.submitCount - s0).toBe(0);
    await gpu.readF32(a);
    expect(gpu.readCount - r0).toBe(1);
    expect(gpu.submitCount - s0).toBe(1); // the clear and the three adds went in the read's one submit
    gpu.submit(); // nothing recorded: no submit
    expect(gpu.submitCount - s0).toBe(1);
    await gpu.read(z);
    expect(gpu.readCount - r0).toBe(2);
    expect(gpu.submitCount - s0).toBe(2);
    expect(gpu.dispatchCount - d0).toBe(3);
    gpu.release(a, z);
  });
});
