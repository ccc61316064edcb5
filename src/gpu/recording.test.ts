import { describe, expect, it } from 'vitest';
import { addInto } from '../../kernels/elementwise/elementwise.ts';
import { testGpu } from '../../kernels/testing.ts';

describe('recordings', () => {
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
});
