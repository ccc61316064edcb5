// The probe's device check and speed probe on the test device (Dawn; SwiftShader where there is no GPU).

import { describe, expect, it } from 'vitest';
import { testGpu } from '../../kernels/testing.ts';
import { deviceCheck, deviceSpeed } from './device-check.ts';

describe('device probe', () => {
  it('checks compute end to end and measures a finite dispatch cost and matmul throughput', async () => {
    const gpu = await testGpu();
    expect(await deviceCheck(gpu)).toEqual({ ok: true, detail: 'embedding gather matches the CPU' });
    const s = await deviceSpeed(gpu);
    expect(Number.isFinite(s.dispatchMs) && s.dispatchMs > 0).toBe(true);
    expect(Number.isFinite(s.gflops) && s.gflops > 0).toBe(true);
  });
});
