// matmul forward and backward against the float64 reference (finite differences for the backward), and
// its input validation. Tiles and split-K: tiles.test.ts; CPU variants: cpu-variants.test.ts; gemv:
// gemv.test.ts; the PICKS table: picks.test.ts.

import { describe, expect, it } from 'vitest';
import type { Gpu } from '../../src/gpu/gpu.ts';
import type { WeightDType } from '../common.ts';
import { dot, expectClose, finiteDiff, randn, testGpu } from '../testing.ts';
import { matmul, matmulBackward } from './matmul.ts';
import { type MatmulVariant, TILES, tileSharedBytes } from './tile.ts';
import { chooseVariant } from './variants.ts';
import { type MatmulRefDims, matmulBackwardRef, matmulRef } from './matmul.ref.ts';
import { type Shape, SHAPES, TRANS, tname, tolFor, stored, check, checkStrided } from './testing.ts';

describe('matmul forward', () => {
  for (const [ta, tb] of TRANS) {
    for (const dtype of ['f32', 'bf16', 'f16'] as const) {
      it(`${tname(ta, tb)} ${dtype}: every shape`, async () => {
        const gpu = await testGpu();
        // One tile variant per case keeps the pipeline count (SwiftShader compiles slowly) low; the others below.
        for (const [i, shape] of SHAPES.entries())
          await check(gpu, { shape, ta, tb, dtype, seed: 10 * i, variant: 'small', pairB: i % 2 === 1 });
      });
    }
  }

  it('the other tile variants on edge shapes', async () => {
    const gpu = await testGpu();
    // 'big' differs from 'big8' only in BK and needs more workgroup memory than SwiftShader offers.
    const big = gpu.limits.maxComputeWorkgroupStorageSize >= tileSharedBytes(TILES.big) ? 'big' : 'big8';
    // even K: the packed weight is read a word (two elements) at a time
    await check(gpu, { shape: [129, 131, 66], ta: false, tb: true, dtype: 'bf16', seed: 1, variant: big, pairB: true });
    await check(gpu, { shape: [7, 130, 34], ta: false, tb: true, dtype: 'bf16', seed: 2, variant: big, pairB: true });
    await check(gpu, { shape: [130, 65, 130], ta: false, tb: false, dtype: 'f32', seed: 6, variant: 'mid' });
    await check(gpu, { shape: [70, 9, 17], ta: false, tb: true, dtype: 'f16', seed: 3, variant: 'cols' });
    await check(gpu, { shape: [9, 70, 17], ta: true, tb: true, dtype: 'f32', seed: 4, variant: 'rows' });
  });

  it('alpha, bias and accumulate', async () => {
    const gpu = await testGpu();
    await check(gpu, { shape: [65, 64, 7], ta: false, tb: true, dtype: 'f32', seed: 7, bias: true, variant: 'small' });
    await check(gpu, { shape: [7, 130, 64], ta: false, tb: true, dtype: 'bf16', seed: 8, bias: true, alpha: 0.5, pairB: true }); // auto: gemv
    await check(gpu, { shape: [65, 65, 65], ta: true, tb: false, dtype: 'f32', seed: 9, accumulate: true, alpha: -2, variant: 'small' });
    await check(gpu, { shape: [1, 7, 130], ta: false, tb: false, dtype: 'f16', seed: 10, accumulate: true, bias: true, variant: 'small' });
  });

  it('batched, with a broadcast operand (stride 0)', async () => {
    const gpu = await testGpu();
    await check(gpu, { shape: [7, 9, 13], ta: false, tb: false, dtype: 'f32', seed: 11, batch: 3, variant: 'small' });
    await check(gpu, {
      shape: [65, 33, 17],
      ta: false,
      tb: true,
      dtype: 'bf16',
      seed: 12,
      batch: 3,
      broadcastB: true,
      bias: true,
      variant: 'small',
    });
    await check(gpu, {
      shape: [20, 65, 9],
      ta: true,
      tb: false,
      dtype: 'f32',
      seed: 13,
      batch: 2,
      broadcastA: true,
      accumulate: true,
      variant: 'small',
    });
    await check(gpu, { shape: [33, 40, 64], ta: true, tb: true, dtype: 'f32', seed: 14, batch: 4, variant: 'small' });
  });

  it('explicit strides and offsets (views into a larger buffer)', async () => {
    // A: two (5, 6) matrices 40 elements apart after an offset of 3; B: one (6, 4) shared; C: stride 24, offset 2.
    await checkStrided(await testGpu(), 6, 40, 21);
  });

  it('picks small tiles for skinny shapes', () => {
    // the default rule (no PICKS rows)
    const choose = (s: Parameters<typeof chooseVariant>[0]) => chooseVariant(s, 49152, []);
    expect(choose({ M: 4096, N: 4096, K: 4096 })).toBe('big:v4:w');
    expect(chooseVariant({ M: 4096, N: 4096, K: 4096 }, 32768, [])).toBe('big8:v4:w');
    // WebGPU's default 16 KiB of workgroup memory holds neither 'big8' nor 'mid'
    expect(chooseVariant({ M: 4096, N: 4096, K: 4096 }, 16384, [])).toBe('half:v4:w');
    expect(chooseVariant({ M: 64, N: 4096, K: 64 }, 16384, [])).toBe('half:v4:w');
    expect(chooseVariant({ M: 4192, N: 576, K: 3072 }, 16384)).toBe('half:v4:w'); // a PICKS row ('mid:v4') that does not fit
    expect(choose({ M: 64, N: 4096, K: 64 })).toBe('mid:v4:w');
    expect(choose({ M: 8, N: 4096, K: 64 })).toBe('rows');
    expect(choose({ M: 4096, N: 1, K: 64 })).toBe('cols');
    expect(choose({ M: 7, N: 7, K: 7 })).toBe('small');
    // decode projections: a few rows times a Linear weight (N, K)
    expect(choose({ M: 8, N: 49152, K: 576, transB: true })).toBe('gemv');
    expect(choose({ M: 16, N: 576, K: 576, transB: true })).toBe('gemv');
    expect(choose({ M: 17, N: 576, K: 576, transB: true })).toBe('small');
  });

  it("PICKS by token count: 'big' at T 3 073-3 328 (one wave), 'half' to 5 211, the default above; T 1 536-3 072 as before", () => {
    for (const M of [3073, 3240, 3328]) {
      expect(chooseVariant({ M, N: 576, K: 576 })).toBe('big:v4:w');
      expect(chooseVariant({ M, N: 576, K: 1536, transB: true })).toBe('big:v4:w');
      expect(chooseVariant({ M, N: 192, K: 576, transB: true })).toBe('halfn');
    }
    for (const M of [3329, 4096, 5211]) {
      expect(chooseVariant({ M, N: 576, K: 576 })).toBe('half:v4:w');
      expect(chooseVariant({ M, N: 576, K: 576, transB: true })).toBe('half:w');
    }
    expect(chooseVariant({ M: 6480, N: 576, K: 576 })).toBe('big:v4:w');
    expect(chooseVariant({ M: 6480, N: 576, K: 1536, transB: true })).toBe('big:v4:w');
    expect(chooseVariant({ M: 6480, N: 192, K: 576, transB: true })).toBe('halfn');
    expect(chooseVariant({ M: 4192, N: 576, K: 3072 })).toBe('mid:v4');
    expect(chooseVariant({ M: 6480, N: 576, K: 3072 })).toBe('big:v4:w');
    expect(chooseVariant({ M: 2688, N: 576, K: 576 })).toBe('n96q:v4');
    expect(chooseVariant({ M: 2688, N: 576, K: 576, transB: true })).toBe('mid:w');
    expect(chooseVariant({ M: 1536, N: 576, K: 576, transB: true })).toBe('mid:v4:w');
  });
});

describe('matmul backward', () => {
  it('reference backward matches finite differences of the reference forward', () => {
    for (const [ta, tb] of TRANS) {
      const dims: MatmulRefDims = { M: 3, N: 4, K: 5, batch: 2, transA: ta, transB: tb, alpha: 0.7, strideA: 15, strideB: 0, strideC: 12 };
      const a = randn(30, 31);
      const b = randn(20, 32);
      const dc = randn(24, 33);
      const { da, db } = matmulBackwardRef(dc, a, b, dims);
      expectClose(
        `da ${tname(ta, tb)} vs fd`,
        da,
        finiteDiff((x) => dot(matmulRef(x, b, dims), dc), a),
        { atol: 1e-8, rtol: 1e-7 },
      );
      expectClose(
        `db ${tname(ta, tb)} vs fd`,
        db,
        finiteDiff((x) => dot(matmulRef(a, x, dims), dc), b),
        { atol: 1e-8, rtol: 1e-7 },
      );
    }
  });

  async function checkBackward(
    gpu: Gpu,
    shape: Shape,
    ta: boolean,
    tb: boolean,
    batch: number,
    broadcastB: boolean,
    dtype: WeightDType,
    seed: number,
    alpha = 1,
    variant: MatmulVariant = 'small',
  ): Promise<void> {
    const [M, N, K] = shape;
    const bB = broadcastB ? 1 : batch;
    const aShape = [...(batch > 1 ? [batch] : []), ...(ta ? [K, M] : [M, K])];
    const bShape = [...(bB > 1 ? [bB] : []), ...(tb ? [N, K] : [K, N])];
    const a = stored(randn(batch * M * K, seed), 'f32');
    const b = stored(randn(bB * K * N, seed + 1), dtype);
    const dc = stored(randn(batch * M * N, seed + 2), 'f32');
    const da0 = stored(randn(a.length, seed + 3), 'f32');
    const tA = gpu.upload(a, aShape, 'f32', 'a');
    const tB = gpu.upload(b, bShape, dtype, 'b');
    const tDc = gpu.upload(dc, batch > 1 ? [batch, M, N] : [M, N], 'f32', 'dc');
    const tDa = gpu.upload(da0, aShape, 'f32', 'da');
    const tDb = dtype === 'f32' ? gpu.tensor(bShape, 'f32', 'db') : null;
    matmulBackward(gpu, tDa, tDb, tDc, tA, tB, { transA: ta, transB: tb, alpha, accumulateDA: true, variant });
    const ref = matmulBackwardRef(dc, a, b, {
      M,
      N,
      K,
      batch,
      transA: ta,
      transB: tb,
      alpha,
      strideA: M * K,
      strideB: bB > 1 ? K * N : 0,
      strideC: M * N,
    });
    const name = `${tname(ta, tb)} ${dtype} ${shape.join('x')} batch ${batch}${broadcastB ? ' shared b' : ''}`;
    expectClose(
      `da ${name}`,
      await gpu.read(tDa),
      ref.da.map((g, i) => g + da0[i]),
      tolFor(N),
    );
    if (tDb) expectClose(`db ${name}`, await gpu.read(tDb), ref.db, tolFor(M * batch));
    gpu.release(tA, tB, tDc, tDa, tDb ?? undefined);
  }

  for (const [ta, tb] of TRANS) {
    it(`${tname(ta, tb)}: GPU backward matches the reference backward`, async () => {
      const gpu = await testGpu();
      await checkBackward(gpu, [7, 130, 65], ta, tb, 1, false, 'f32', 40, 0.5);
      await checkBackward(gpu, [65, 7, 33], ta, tb, 3, false, 'f32', 41);
      await checkBackward(gpu, [9, 17, 65], ta, tb, 3, true, 'f32', 42); // db summed over the batch
    });
  }

  it('the direct variant: every transpose, batched, a shared b', async () => {
    const gpu = await testGpu();
    for (const [ta, tb] of TRANS) await checkBackward(gpu, [9, 17, 65], ta, tb, 3, true, 'f32', 60, 0.5, 'direct');
    await checkBackward(gpu, [7, 65, 64], false, true, 2, true, 'bf16', 61, 1, 'direct');
  });

  it('split-K (the weight gradient, K = rows): every transpose, batched, a shared b', async () => {
    const gpu = await testGpu();
    for (const [ta, tb] of TRANS) await checkBackward(gpu, [40, 17, 65], ta, tb, 3, true, 'f32', 70, 0.5, 'small:k3');
  });

  it('packed 16-bit b: da only', async () => {
    const gpu = await testGpu();
    await checkBackward(gpu, [7, 65, 64], false, true, 2, true, 'bf16', 50);
    await checkBackward(gpu, [64, 7, 65], false, false, 1, false, 'f16', 51);
  });
});

describe('matmul validation', () => {
  it('rejects mismatched shapes before dispatch', async () => {
    const gpu = await testGpu();
    const a = gpu.tensor([4, 3], 'f32', 'a');
    const b = gpu.tensor([5, 6], 'f32', 'b');
    const c = gpu.tensor([4, 6], 'f32', 'c');
    const bias = gpu.tensor([5], 'f32', 'bias');
    const b16 = gpu.tensor([3, 6], 'bf16', 'b16');
    const a3 = gpu.tensor([2, 4, 3], 'f32', 'a3');
    const c3 = gpu.tensor([3, 4, 6], 'f32', 'c3');
    const before = gpu.dispatchCount;
    expect(() => matmul(gpu, c, a, b)).toThrow(
      /matmul: inner dims differ \(K = 3 from a, 5 from b\): out \[4, 6\] f32, a \[4, 3\] f32, b \[5, 6\] f32/,
    );
    expect(() => matmul(gpu, c, a, b, { transA: true })).toThrow(/matmul: inner dims differ/);
    expect(() => matmul(gpu, gpu.tensor([4, 5], 'f32', 'c2'), a, b16)).toThrow(/matmul: out must be \(\.\.\., 4, 6\)/);
    expect(() => matmul(gpu, c, a, b16, { bias })).toThrow(/matmul: bias must be \(6\) f32, got \[5\] f32/);
    expect(() => matmul(gpu, c3, a3, b16)).toThrow(/matmul: a has batch 2, expected 3 or 1/);
    expect(() => matmul(gpu, c, b16, b16)).toThrow(/matmul: (a must be f32|inner dims)/);
    expect(() => matmul(gpu, c, a, b16, { batch: 2, strideC: 1000 })).toThrow(
      /matmul: out \[4, 6\] f32: 2 batch\(es\) of \(4, 6\) at offset 0, stride 1000 need 1024 elements, its buffer holds 64/,
    );
    expect(() => matmulBackward(gpu, null, gpu.tensor([3, 6], 'f32', 'db'), c, a, b16)).toThrow(
      /matmulBackward: b \[3, 6\] bf16 is a frozen 16-bit weight/,
    );
    expect(() => matmulBackward(gpu, gpu.tensor([4, 4], 'f32', 'da'), null, c, a, b16)).toThrow(
      /matmulBackward: da must be f32 shaped like a/,
    );
    expect(gpu.dispatchCount).toBe(before);
    gpu.release(a, b, c, bias, b16, a3, c3);
  });
});
