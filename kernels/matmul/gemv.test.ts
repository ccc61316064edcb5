// matmul's gemv variant (skinny M, decode) against the float64 reference.

import { describe, expect, it } from 'vitest';
import { expectClose, randn, testGpu } from '../testing.ts';
import { matmul } from './matmul.ts';
import { matmulRef } from './matmul.ref.ts';
import { type Shape, tolFor, stored, check } from './testing.ts';

describe('matmul gemv (skinny M, decode)', () => {
  // M picks the register bucket (1, 8, 16 rows); K % 4 == 0 takes the vec4 form, other K the scalar one.
  const GEMV_SHAPES: Shape[] = [
    [1, 1, 1],
    [7, 7, 7],
    [7, 64, 64],
    [8, 65, 65],
    [16, 130, 130],
    [1, 130, 64],
    [16, 7, 128],
  ];
  for (const dtype of ['f32', 'bf16', 'f16'] as const) {
    it(`nt ${dtype}: edge shapes`, async () => {
      const gpu = await testGpu();
      for (const [i, shape] of GEMV_SHAPES.entries())
        await check(gpu, { shape, ta: false, tb: true, dtype, seed: 100 + 10 * i, variant: 'gemv' });
    });
  }

  it('other transposes (scalar form), alpha, bias, accumulate', async () => {
    const gpu = await testGpu();
    await check(gpu, { shape: [7, 65, 33], ta: false, tb: false, dtype: 'f32', seed: 201, variant: 'gemv' });
    await check(gpu, { shape: [7, 65, 33], ta: true, tb: false, dtype: 'bf16', seed: 202, variant: 'gemv' });
    await check(gpu, { shape: [7, 65, 33], ta: true, tb: true, dtype: 'f32', seed: 203, variant: 'gemv' });
    await check(gpu, {
      shape: [8, 130, 64],
      ta: false,
      tb: true,
      dtype: 'bf16',
      seed: 204,
      bias: true,
      alpha: 0.5,
      accumulate: true,
      variant: 'gemv',
    });
    await check(gpu, { shape: [8, 65, 7], ta: false, tb: true, dtype: 'f32', seed: 205, accumulate: true, alpha: -2, variant: 'gemv' });
  });

  it('batched (broadcast B, per-batch B) and strided views', async () => {
    const gpu = await testGpu();
    await check(gpu, {
      shape: [8, 65, 64],
      ta: false,
      tb: true,
      dtype: 'f16',
      seed: 211,
      batch: 3,
      broadcastB: true,
      bias: true,
      variant: 'gemv',
    });
    await check(gpu, { shape: [7, 9, 13], ta: false, tb: true, dtype: 'f32', seed: 212, batch: 3, variant: 'gemv' });
    // A at an odd offset: the vec4 form does not apply; B at offset 4, stride 0; C at an offset.
    const [M, N, K, batch] = [5, 66, 8, 2];
    const a = stored(randn(3 + 50 + M * K, 213), 'f32');
    const b = stored(randn(4 + K * N, 214), 'bf16');
    const tA = gpu.upload(a, [a.length, 1], 'f32', 'a');
    const tB = gpu.upload(b, [b.length, 1], 'bf16', 'b');
    const cSize = 2 + 400 + M * N;
    const tC = gpu.zeros([cSize, 1], 'f32', 'c');
    const dims = { M, N, K, batch, transB: true, strideA: 50, strideB: 0, strideC: 400, offsetA: 3, offsetB: 4, offsetC: 2 };
    const key = matmul(gpu, { ...tC, shape: [M, N] }, { ...tA, shape: [M, K] }, { ...tB, shape: [N, K] }, { ...dims, variant: 'gemv' });
    expect(key).toContain('gemv');
    expect(key).not.toContain(':v4');
    expectClose('c gemv strided', await gpu.read(tC), matmulRef(a, b, dims, { cSize }), tolFor(K));
    gpu.release(tA, tB, tC);
  });
});
