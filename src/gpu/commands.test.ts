// The command stream: dispatches batched into few submits, the unasked submits' pacing, and the Gpu's
// running counters that the benches turn into per-step figures.
import { describe, expect, it } from 'vitest';
import { addInto } from '../../kernels/elementwise/elementwise.ts';
import { randn, testGpu } from '../../kernels/testing.ts';
import { SUBMIT_EVERY, SUBMIT_FIRST } from './commands.ts';

describe('command stream', () => {
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
    for (let k = SUBMIT_FIRST, at = 0; at + k <= 2 * SUBMIT_EVERY + SUBMIT_FIRST; k = Math.min(SUBMIT_EVERY, 2 * k)) ramp.push((at += k));
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
});
