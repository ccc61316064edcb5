// The Gpu's running counters (dispatches, read()s, queue submits) that the benches turn into per-step figures.
import { describe, expect, it } from 'vitest';
import { addInto, reluForward } from '../../kernels/elementwise/elementwise.ts';
import { randn, testGpu } from '../../kernels/testing.ts';
import { SUBMIT_EVERY, SUBMIT_FIRST, layoutEntries } from './gpu.ts';
import { createNodeGpu } from './node.ts';

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

  it(`submits unasked after ${SUBMIT_FIRST} dispatches, then twice as many each time up to every ${SUBMIT_EVERY}; again from ${SUBMIT_FIRST} after a wait; not while recording`, async () => {
    const gpu = await testGpu();
    const a = gpu.upload([0, 0], [2], 'f32', 'a');
    const one = gpu.upload([1, 2], [2], 'f32', 'one');
    await gpu.sync();
    /** The dispatch counts after which the next `n` dispatches submitted. */
    const submitsAt = (n: number): number[] => {
      const at: number[] = [];
      for (let i = 1; i <= n; i++) {
        const s = gpu.submitCount;
        addInto(gpu, a, one);
        if (gpu.submitCount > s) at.push(i);
      }
      return at;
    };
    const ramp: number[] = [];
    for (let k = SUBMIT_FIRST, at = 0; at + k <= 2 * SUBMIT_EVERY + SUBMIT_FIRST; k = Math.min(SUBMIT_EVERY, 2 * k)) ramp.push(at += k);
    expect(ramp.slice(0, 3)).toEqual([SUBMIT_FIRST, 3 * SUBMIT_FIRST, 7 * SUBMIT_FIRST]);
    expect(submitsAt(ramp[ramp.length - 1])).toEqual(ramp);
    expect(Array.from(await gpu.readF32(a))).toEqual([ramp[ramp.length - 1], 2 * ramp[ramp.length - 1]]); // a wait
    expect(submitsAt(SUBMIT_FIRST)).toEqual([SUBMIT_FIRST]);
    const s0 = gpu.submitCount;
    gpu.startRecording();
    for (let i = 0; i < SUBMIT_EVERY; i++) addInto(gpu, a, one);
    const rec = gpu.stopRecording();
    expect(gpu.submitCount - s0).toBe(0); // a recording's dispatches stay in the open encoder
    rec.dispose();
    gpu.release(a, one);
  });

  it('a recording replays its dispatches on the buffers they used, holds what was released meanwhile, and refuses copies, reads and late replays', async () => {
    const gpu = await testGpu();
    const a = gpu.upload([1, 2, 3, 4], [4], 'f32', 'a');
    const b = gpu.upload([10, 20, 30, 40], [4], 'f32', 'b');
    gpu.startRecording();
    const t = gpu.tensor([4], 'f32', 't'); // a temporary of the recorded work
    expect(() => gpu.copy(a, t)).toThrow(/copy while recording/);
    expect(() => gpu.write(t, new Float32Array(4))).toThrow(/write while recording/);
    addInto(gpu, a, b); // a += b
    gpu.release(t);
    const rec = gpu.stopRecording();
    expect(rec.steps).toHaveLength(1);
    expect(rec.held).toEqual([t.buffer]);
    const again = gpu.tensor([4], 'f32', 'again');
    expect(again.buffer).not.toBe(t.buffer); // held by the recording, not handed out
    const d0 = gpu.dispatchCount;
    gpu.replay(rec);
    gpu.replay(rec);
    expect(gpu.dispatchCount - d0).toBe(2);
    expect(Array.from(await gpu.readF32(a))).toEqual([31, 62, 93, 124]);
    rec.dispose();
    expect(() => gpu.replay(rec)).toThrow(/disposed recording/);
    expect(gpu.tensor([4], 'f32', 'reused').buffer).toBe(t.buffer); // back in the pool
    gpu.startRecording();
    await expect(gpu.read(a)).rejects.toThrow(/read while recording/);
    gpu.stopRecording().dispose();
    gpu.release(a, b, again);
  });

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

  it('lays out a dispatch as its WGSL declares the bindings it passes: the uniforms with a dynamic offset', () => {
    const code = `struct P { n: u32 }
      @group(0) @binding(0) var<uniform> u: P;
      @group(0) @binding(1) var<storage, read> x: array<f32>;
      @group(0)
      @binding(2) var<storage, read_write> y: array<f32>;
      @group(0) @binding(3) var<storage> z: array<f32>;`;
    const buf = {} as GPUBuffer;
    expect(layoutEntries(code, { bindings: [buf, undefined, buf], uniforms: [1] }, 'k')).toEqual([
      { binding: 0, visibility: 4, buffer: { type: 'uniform', hasDynamicOffset: true } },
      { binding: 1, visibility: 4, buffer: { type: 'read-only-storage' } },
      { binding: 3, visibility: 4, buffer: { type: 'read-only-storage' } },
    ]);
    expect(layoutEntries(code, { bindings: [undefined, buf] }, 'k')).toEqual([{ binding: 2, visibility: 4, buffer: { type: 'storage' } }]);
    expect(() => layoutEntries(code, { bindings: [buf, buf, buf, buf] }, 'k')).toThrow(/k: binding 4 is passed but not declared/);
    expect(() => layoutEntries(code.replace('var<uniform>', 'var<storage, read>'), { bindings: [], uniforms: [1] }, 'k')).toThrow(/binding 0 is not declared var<uniform>/);
  });
});

describe('pipelines made asynchronously', () => {
  it('the work recorded while a pipeline is made (writes, copies, clears, a replay) runs in order, as with synchronous pipelines', async () => {
    const results: number[][] = [];
    for (const asyncPipelines of [true, false]) {
      const gpu = await createNodeGpu();
      gpu.asyncPipelines = asyncPipelines;
      const x = gpu.upload([1, 2, 3, 4], [4], 'f32', 'x');
      const y = gpu.zeros([4], 'f32', 'y');
      addInto(gpu, y, x); // y = x; the first dispatch of this device: its pipeline is being made (async)
      if (asyncPipelines) expect(gpu.pipelinesMade).toBeLessThan(gpu.pipelinesAsked); // so what follows waits
      const later = new Float32Array([10, 20, 30, 40]);
      gpu.write(x, later); // after the add, with the values of now
      later.fill(999); // the caller's array changes: a deferred write keeps what it was given
      addInto(gpu, y, x); // y = 11, 22, 33, 44
      const z = gpu.zeros([4], 'f32', 'z');
      gpu.copy(y, z);
      gpu.fill(y, 0);
      gpu.startRecording();
      addInto(gpu, z, x, 2); // z += 2x
      const rec = gpu.stopRecording();
      gpu.replay(rec); // twice in all
      results.push([...(await gpu.readF32(y)), ...(await gpu.readF32(z))]);
      expect(gpu.pipelinesMade).toBe(gpu.pipelinesAsked);
      rec.dispose();
      gpu.device.destroy();
    }
    expect(results[0]).toEqual([0, 0, 0, 0, 51, 102, 153, 204]);
    expect(results[1]).toEqual(results[0]);
  });
});
