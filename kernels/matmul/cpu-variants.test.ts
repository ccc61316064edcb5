// matmul on CPU adapters: the direct variant (no workgroup memory, no barriers) and the register blocks.

import { describe, expect, it } from 'vitest';
import { expectClose, randn, testGpu } from '../testing.ts';
import { type MatmulDims, matmul } from './matmul.ts';
import { type BlockShape, blockMode } from './block.ts';
import { matmulRef } from './matmul.ref.ts';
import { type Shape, SHAPES, TRANS, tname, tolFor, stored, type Case, check } from './testing.ts';

describe('matmul direct (CPU adapters: no workgroup memory, no barriers)', () => {
  for (const dtype of ['f32', 'bf16', 'f16'] as const) {
    it(`every transpose and shape, ${dtype}`, async () => {
      const gpu = await testGpu();
      for (const [ta, tb] of TRANS) {
        for (const [i, shape] of SHAPES.entries()) await check(gpu, { shape, ta, tb, dtype, seed: 300 + 10 * i, variant: 'direct' });
      }
    });
  }

  it('alpha, bias, accumulate, batches, broadcast operands', async () => {
    const gpu = await testGpu();
    await check(gpu, { shape: [65, 64, 7], ta: false, tb: true, dtype: 'f32', seed: 401, bias: true, variant: 'direct' });
    await check(gpu, { shape: [65, 65, 65], ta: true, tb: false, dtype: 'f32', seed: 402, accumulate: true, alpha: -2, variant: 'direct' });
    await check(gpu, {
      shape: [1, 7, 130],
      ta: false,
      tb: false,
      dtype: 'f16',
      seed: 403,
      accumulate: true,
      bias: true,
      variant: 'direct',
    });
    await check(gpu, {
      shape: [65, 33, 17],
      ta: false,
      tb: true,
      dtype: 'bf16',
      seed: 404,
      batch: 3,
      broadcastB: true,
      bias: true,
      variant: 'direct',
    });
    await check(gpu, {
      shape: [20, 65, 9],
      ta: true,
      tb: false,
      dtype: 'f32',
      seed: 405,
      batch: 2,
      broadcastA: true,
      accumulate: true,
      variant: 'direct',
    });
  });

  it('block is the default on a CPU adapter, and the tiled kernel elsewhere', async () => {
    const gpu = await testGpu();
    const [a, b, c] = [gpu.zeros([9, 5], 'f32', 'a'), gpu.zeros([7, 5], 'f32', 'b'), gpu.tensor([9, 7], 'f32', 'c')];
    expect(matmul(gpu, c, a, b, { transB: true }).includes(':block')).toBe(gpu.cpu);
    gpu.release(a, b, c);
  });
});

describe('matmul block (CPU adapters: a TM x TN register block, 16-bit B a word at a time)', () => {
  // Odd K or N (or an odd offset) make a 16-bit B fall back to element loads ('plain'); even ones take the
  // word-pair forms ('kpair' along K for transB, 'npair' along N otherwise). Each case is also run with
  // 'direct', the variant 'block' replaces on CPU adapters, and the two outputs compared.
  const BLOCK_SHAPES: Shape[] = [
    [1, 1, 1],
    [1, 7, 7],
    [2, 64, 64],
    [7, 130, 66],
    [65, 65, 65],
    [130, 66, 130],
    [9, 10, 4],
  ];
  const BLOCKS: BlockShape[] = [
    { tm: 1, tn: 8 },
    { tm: 4, tn: 8 },
    { tm: 8, tn: 8 },
    { tm: 2, tn: 4 },
  ];
  for (const dtype of ['f32', 'bf16', 'f16'] as const) {
    it(`every transpose and shape, ${dtype}, against the reference and 'direct'`, async () => {
      const gpu = await testGpu();
      for (const [ta, tb] of TRANS) {
        for (const [i, shape] of BLOCK_SHAPES.entries()) {
          const c: Case = { shape, ta, tb, dtype, seed: 500 + 10 * i, block: BLOCKS[i % BLOCKS.length] };
          const got = await check(gpu, { ...c, variant: 'block' });
          const direct = await check(gpu, { ...c, variant: 'direct' });
          expectClose(`block vs direct ${tname(ta, tb)} ${dtype} ${shape.join('x')}`, got, direct, tolFor(shape[2]));
        }
      }
    });
  }

  it('alpha, bias, accumulate, batches, broadcast operands, default shapes', async () => {
    const gpu = await testGpu();
    await check(gpu, { shape: [65, 64, 8], ta: false, tb: true, dtype: 'bf16', seed: 601, bias: true, alpha: 0.5, variant: 'block' });
    await check(gpu, {
      shape: [1, 130, 64],
      ta: false,
      tb: true,
      dtype: 'bf16',
      seed: 602,
      bias: true,
      accumulate: true,
      variant: 'block',
    });
    await check(gpu, { shape: [65, 65, 65], ta: true, tb: false, dtype: 'f32', seed: 603, accumulate: true, alpha: -2, variant: 'block' });
    await check(gpu, { shape: [3, 8, 130], ta: false, tb: false, dtype: 'f16', seed: 604, accumulate: true, bias: true, variant: 'block' });
    await check(gpu, {
      shape: [65, 33, 18],
      ta: false,
      tb: true,
      dtype: 'bf16',
      seed: 605,
      batch: 3,
      broadcastB: true,
      bias: true,
      variant: 'block',
    });
    await check(gpu, {
      shape: [20, 66, 9],
      ta: true,
      tb: false,
      dtype: 'bf16',
      seed: 606,
      batch: 2,
      broadcastA: true,
      accumulate: true,
      variant: 'block',
    });
    await check(gpu, { shape: [33, 40, 64], ta: true, tb: true, dtype: 'bf16', seed: 607, batch: 3, variant: 'block' });
  });

  it('picks the word-pair forms only where a word holds two elements of one row', () => {
    const base: MatmulDims = {
      M: 2,
      N: 2,
      K: 2,
      batch: 1,
      strideA: 0,
      strideB: 0,
      strideC: 0,
      offsetA: 0,
      offsetB: 0,
      offsetC: 0,
      transA: false,
      transB: false,
      alpha: 1,
      accumulate: false,
    };
    const t = (d: Partial<MatmulDims>): MatmulDims => ({ ...base, ...d });
    expect(blockMode(t({ transB: true, K: 64 }), 'bf16')).toBe('kpair');
    expect(blockMode(t({ transB: true, K: 65 }), 'bf16')).toBe('plain');
    expect(blockMode(t({ transB: true, K: 64, offsetB: 3 }), 'f16')).toBe('plain');
    expect(blockMode(t({ transB: false, N: 66 }), 'f16')).toBe('npair');
    expect(blockMode(t({ transB: false, N: 66, strideB: 7 }), 'bf16')).toBe('plain');
    expect(blockMode(t({ transB: true, K: 64 }), 'f32')).toBe('plain');
  });

  it('strided views at odd offsets (element loads) and even ones (word pairs)', async () => {
    const gpu = await testGpu();
    for (const [offB, tb] of [
      [3, true],
      [4, true],
      [3, false],
      [4, false],
    ] as const) {
      const [M, N, K, batch] = [5, 10, 8, 2];
      const a = stored(randn(3 + 50 + M * K, 611), 'f32');
      const b = stored(randn(offB + K * N, 612), 'bf16');
      const tA = gpu.upload(a, [a.length, 1], 'f32', 'a');
      const tB = gpu.upload(b, [b.length, 1], 'bf16', 'b');
      const cSize = 2 + 400 + M * N;
      const tC = gpu.zeros([cSize, 1], 'f32', 'c');
      const dims = { M, N, K, batch, transB: tb, strideA: 50, strideB: 0, strideC: 400, offsetA: 3, offsetB: offB, offsetC: 2 };
      const key = matmul(
        gpu,
        { ...tC, shape: [M, N] },
        { ...tA, shape: [M, K] },
        { ...tB, shape: tb ? [N, K] : [K, N] },
        { ...dims, variant: 'block' },
      );
      expect(key).toMatch(offB % 2 ? /:block4x8$/ : tb ? /:kpair$/ : /:npair$/);
      expectClose(`c block strided, B offset ${offB}`, await gpu.read(tC), matmulRef(a, b, dims, { cSize }), tolFor(K));
      gpu.release(tA, tB, tC);
    }
  });
});
