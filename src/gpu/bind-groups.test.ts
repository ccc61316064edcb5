import { describe, expect, it } from 'vitest';
import { addInto, reluForward } from '../../kernels/elementwise/elementwise.ts';
import { testGpu } from '../../kernels/testing.ts';

describe('uniform blocks and bind groups', () => {
  it('caches bind groups by buffers and uniform blocks by value: a buffer handed out again keeps its bind groups, a new one gets its own', async () => {
    const gpu = await testGpu();
    const x = gpu.upload([1, -2, 3, -4], [4], 'f32', 'x');
    const y = gpu.zeros([4], 'f32', 'y');
    addInto(gpu, y, x); // y = x
    const c0 = gpu.cacheSizes;
    addInto(gpu, y, x); // same buffers, same uniforms: hits
    expect(gpu.cacheSizes).toEqual(c0);
    addInto(gpu, y, x, -0.5); // another alpha: a uniform block more, bound at its offset by the same bind group
    expect(gpu.cacheSizes.uniformBuffers).toBe(c0.uniformBuffers + 1);
    expect(gpu.cacheSizes.bindGroups).toBe(c0.bindGroups);
    expect(Array.from(await gpu.readF32(y))).toEqual([1.5, -3, 4.5, -6]);
    const z = gpu.tensor([4], 'f32', 'z');
    reluForward(gpu, z, x);
    expect(Array.from(await gpu.readF32(z))).toEqual([1, 0, 3, 0]);
    // released and handed out again: the same buffer, so its bind groups still name the right memory
    const zb = z.buffer;
    gpu.release(z);
    const z2 = gpu.tensor([4], 'f32', 'z2');
    expect(z2.buffer).toBe(zb);
    const c1 = gpu.cacheSizes;
    reluForward(gpu, z2, y);
    expect(gpu.cacheSizes.bindGroups).toBe(c1.bindGroups + 1); // (y, z) is a new pair; (x, z) would hit
    reluForward(gpu, z2, x);
    expect(gpu.cacheSizes.bindGroups).toBe(c1.bindGroups + 1);
    expect(Array.from(await gpu.readF32(z2))).toEqual([1, 0, 3, 0]);
    // trimmed: the pool destroys the buffer, and the next tensor of that size is a new buffer with its own bind groups
    gpu.release(z2);
    gpu.trim();
    const z3 = gpu.tensor([4], 'f32', 'z3');
    expect(z3.buffer).not.toBe(zb);
    reluForward(gpu, z3, y);
    expect(gpu.cacheSizes.bindGroups).toBe(c1.bindGroups + 2);
    expect(Array.from(await gpu.readF32(z3))).toEqual([1.5, 0, 4.5, 0]);
    gpu.release(x, y, z3);
  });
  it('keeps u32, i32 and f32 uniforms apart by their bits, and -0 apart from 0', async () => {
    const gpu = await testGpu();
    const x = gpu.upload([1, 2], [2], 'f32', 'x');
    const y = gpu.zeros([2], 'f32', 'y');
    const u0 = gpu.cacheSizes.uniformBuffers;
    addInto(gpu, y, x, 0);
    addInto(gpu, y, x, -0);
    expect(gpu.cacheSizes.uniformBuffers).toBe(u0 + 2);
    addInto(gpu, y, x, 1);
    expect(Array.from(await gpu.readF32(y))).toEqual([1, 2]);
    gpu.release(x, y);
  });
});
