import { describe, expect, it } from 'vitest';
import type { Gpu } from '../../src/gpu/gpu.ts';
import { round16 } from '../../src/gpu/half.ts';
import type { WeightDType } from '../common.ts';
import { dot, expectClose, finiteDiff, randn, testGpu } from '../testing.ts';
import { type MatmulDims, type MatmulOpts, matmul, matmulBackward, matmulSource } from './matmul.ts';
import { PICKS, type Pick } from './picks.ts';
import { type MatmulVariant, TILES, type TileConfig, type TileName, tileSharedBytes, tiledVariant, warpLayout } from './tile.ts';
import { chooseVariant } from './variants.ts';
import { type BlockShape, blockMode } from './block.ts';
import { type SweepResult, pickLine, sweepPicks } from './matmul.bench.ts';
import { type MatmulRefDims, matmulBackwardRef, matmulRef } from './matmul.ref.ts';

type Shape = [M: number, N: number, K: number];
const SHAPES: Shape[] = [
  [1, 1, 1],
  [7, 7, 7],
  [64, 64, 64],
  [65, 65, 65],
  [130, 130, 130],
  [7, 130, 65],
  [130, 5, 64],
];
const TRANS = [
  [false, false],
  [false, true],
  [true, false],
  [true, true],
] as const;
const tname = (ta: boolean, tb: boolean) => `${ta ? 't' : 'n'}${tb ? 't' : 'n'}`;

/** f32 accumulation over K terms of products of O(1) values: error grows like sqrt(K) * eps * |terms|. */
const tolFor = (K: number) => ({ atol: 1e-4 * Math.max(1, Math.sqrt(K) / 4), rtol: 1e-4 });

/** The values the GPU holds for an upload of x with this dtype, in float64. */
const stored = (x: Float64Array, dtype: WeightDType): Float64Array =>
  dtype === 'f32' ? Float64Array.from(Float32Array.from(x)) : round16(x, dtype);

interface Case {
  shape: Shape;
  ta: boolean;
  tb: boolean;
  dtype: WeightDType;
  seed: number;
  batch?: number;
  broadcastA?: boolean;
  broadcastB?: boolean;
  alpha?: number;
  accumulate?: boolean;
  bias?: boolean;
  variant?: MatmulVariant | TileConfig;
  pairB?: boolean;
  block?: BlockShape;
}

/**
 * Runs one case on the GPU and checks it against the float64 reference on the stored (rounded) inputs;
 * returns what the GPU wrote (to compare two variants on the same case).
 */
async function check(gpu: Gpu, c: Case): Promise<Float32Array> {
  const [M, N, K] = c.shape;
  const batch = c.batch ?? 1;
  const bA = c.broadcastA || batch === 1 ? 1 : batch;
  const bB = c.broadcastB || batch === 1 ? 1 : batch;
  const aMat = c.ta ? [K, M] : [M, K];
  const bMat = c.tb ? [N, K] : [K, N];
  const a = stored(randn(bA * M * K, c.seed), 'f32');
  const b = stored(randn(bB * K * N, c.seed + 1), c.dtype);
  const bias = c.bias ? stored(randn(N, c.seed + 2), 'f32') : undefined;
  const c0 = stored(randn(batch * M * N, c.seed + 3), 'f32');
  const tA = gpu.upload(a, bA > 1 ? [bA, ...aMat] : aMat, 'f32', 'a');
  const tB = gpu.upload(b, bB > 1 ? [bB, ...bMat] : bMat, c.dtype, 'b');
  const tBias = bias ? gpu.upload(bias, [N], 'f32', 'bias') : undefined;
  const tC = c.accumulate
    ? gpu.upload(c0, batch > 1 ? [batch, M, N] : [M, N], 'f32', 'c')
    : gpu.tensor(batch > 1 ? [batch, M, N] : [M, N], 'f32', 'c');
  const opts: MatmulOpts = {
    transA: c.ta,
    transB: c.tb,
    alpha: c.alpha,
    accumulate: c.accumulate,
    bias: tBias,
    variant: c.variant,
    pairB: c.pairB,
    block: c.block,
  };
  const key = matmul(gpu, tC, tA, tB, opts);
  const dims: MatmulRefDims = {
    M,
    N,
    K,
    batch,
    transA: c.ta,
    transB: c.tb,
    alpha: c.alpha ?? 1,
    strideA: bA > 1 ? M * K : 0,
    strideB: bB > 1 ? K * N : 0,
    strideC: M * N,
  };
  const ref = matmulRef(a, b, dims, { bias, c0: c.accumulate ? c0 : undefined, accumulate: c.accumulate });
  const got = (await gpu.read(tC)) as Float32Array;
  expectClose(`c ${tname(c.ta, c.tb)} ${c.dtype} ${c.shape.join('x')} ${key}`, got, ref, tolFor(K));
  gpu.release(tA, tB, tBias, tC);
  return got;
}

/**
 * A batch of 2 (5, K) A matrices strideA apart after an offset of 3, one shared (K, 4) B, C rows 24 apart after
 * an offset of 2, all inside larger buffers: against the float64 reference over the whole C buffer.
 */
async function checkStrided(gpu: Gpu, K: number, strideA: number, seed: number, variant?: MatmulVariant): Promise<void> {
  const [M, N, batch] = [5, 4, 2];
  const a = stored(randn(3 + strideA + M * K, seed), 'f32');
  const b = stored(randn(K * N, seed + 1), 'f32');
  const tA = gpu.upload(a, [a.length, 1], 'f32', 'a');
  const tB = gpu.upload(b, [K, N], 'f32', 'b');
  const tC = gpu.zeros([2 + 24 + M * N, 1], 'f32', 'c');
  const dims = { M, N, K, batch, strideA, strideB: 0, strideC: 24, offsetA: 3, offsetB: 0, offsetC: 2 };
  matmul(gpu, { ...tC, shape: [M, N] }, { ...tA, shape: [M, K] }, tB, { ...dims, ...(variant ? { variant } : {}) });
  expectClose(`c strided${variant ? ` ${variant}` : ''}`, await gpu.read(tC), matmulRef(a, b, dims, { cSize: 2 + 24 + M * N }), tolFor(K));
  gpu.release(tA, tB, tC);
}

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

describe('matmul tiles for the SmolLM2 shapes, and split-K', () => {
  // Each tile on four edge shapes, one per transpose: partial tiles in M and N, and K ending mid-step;
  // the last is a whole number of tiles. A tile needing more workgroup memory than the test device has is
  // run with half its BK (the same generated code otherwise), as is n96s on a CPU adapter (SwiftShader
  // takes about a minute to compile each of its pipelines at BK 16, 2 s at BK 8); bench/matmul-sweep.ts
  // checks the full tiles against float64 on the GPU before timing them.
  const NEW_TILES: TileName[] = [
    'big16',
    'huge',
    'tall',
    'wide',
    'mid8',
    'n96',
    'n96s',
    'tall4',
    'mid32',
    'n96q',
    'mid84',
    'mid48',
    'half',
    'halfn',
  ];
  const REPLACE_MID: TileName[] = ['tall4', 'mid32', 'n96q'];
  const edgeShapes = (t: TileConfig): Shape[] => [
    [t.bm + 5, t.bn + 3, 2 * t.bk + 5],
    [t.bm - 3, 2 * t.bn + 1, 3 * t.bk],
    [2 * t.bm + 1, t.bn - 5, t.bk + 3],
    [t.bm, t.bn, 4 * t.bk],
  ];
  for (const name of NEW_TILES) {
    it(`${name}: every transpose against the reference`, async () => {
      const gpu = await testGpu();
      const full = tileSharedBytes(TILES[name]) <= gpu.limits.maxComputeWorkgroupStorageSize && !(gpu.cpu && name === 'n96s');
      const t: TileConfig = full ? TILES[name] : { ...TILES[name], bk: TILES[name].bk / 2 };
      for (const [i, [ta, tb]] of TRANS.entries()) {
        const c: Case = { shape: edgeShapes(t)[i], ta, tb, dtype: 'f32', seed: 700 + i };
        const got = await check(gpu, { ...c, variant: t });
        // the tiles added with ':w' replace 'mid' in PICKS: each output is the same k-ordered sum, so equal
        if (REPLACE_MID.includes(name))
          expect(Array.from(got), `${name} vs mid`).toEqual(Array.from(await check(gpu, { ...c, variant: 'mid' })));
      }
      // a packed weight read a word at a time (the forward of a frozen Linear), on two tiles (SwiftShader is slow)
      if (name === 'n96' || name === 'tall')
        await check(gpu, {
          shape: [t.bm + 1, t.bn + 2, 2 * t.bk + 2],
          ta: false,
          tb: true,
          dtype: 'bf16',
          seed: 705,
          variant: t,
          pairB: true,
          bias: true,
        });
    });
  }

  // (the forms give the same bits: tall4 and n96q, one copy, against mid, two, above)
  it('a K step of over 256 multiply-adds a thread is unrolled once, with its buffer a run-time value; smaller ones once per buffer', () => {
    const src = (t: TileConfig) => matmulSource(t, { transA: false, transB: false, bDtype: 'f32', accumulate: false, bias: false });
    for (const t of [TILES.big, TILES.huge, TILES.tall4]) {
      expect(src(t)).toContain('let p = t & 1u;');
      expect(src(t)).not.toContain('As[1u]');
    }
    for (const t of [TILES.mid, TILES.half]) {
      expect(src(t)).toContain('As[0u][15]');
      expect(src(t)).toContain('As[1u][15]');
      expect(src(t)).not.toContain('let p = t & 1u;');
    }
  });

  // K = 300 in 4 slices of 80 (the last 60, not a whole BK step); K = 50 in 3 slices of 24, 24 and 2.
  it('split-K: every transpose, slices that end mid-step', async () => {
    const gpu = await testGpu();
    for (const [i, [ta, tb]] of TRANS.entries()) {
      await check(gpu, { shape: [70, 67, 300], ta, tb, dtype: 'f32', seed: 800 + i, variant: 'mid:k4' });
      await check(gpu, { shape: [33, 9, 50], ta, tb, dtype: 'f32', seed: 810 + i, variant: 'small:k3' });
    }
  });

  it('split-K: alpha, bias, accumulate, batches, broadcast operands, packed B', async () => {
    const gpu = await testGpu();
    await check(gpu, {
      shape: [65, 70, 130],
      ta: false,
      tb: true,
      dtype: 'f32',
      seed: 820,
      bias: true,
      accumulate: true,
      alpha: -0.5,
      variant: 'mid:k3',
    });
    await check(gpu, {
      shape: [20, 65, 90],
      ta: true,
      tb: false,
      dtype: 'f32',
      seed: 821,
      batch: 3,
      broadcastA: true,
      accumulate: true,
      variant: 'small:k4',
    });
    await check(gpu, { shape: [33, 40, 64], ta: true, tb: true, dtype: 'f32', seed: 822, batch: 2, variant: 'small:k2' });
    await check(gpu, {
      shape: [65, 70, 98],
      ta: false,
      tb: true,
      dtype: 'bf16',
      seed: 823,
      batch: 2,
      broadcastB: true,
      bias: true,
      variant: 'mid:k3',
      pairB: true,
    });
    await check(gpu, { shape: [40, 33, 70], ta: false, tb: false, dtype: 'f16', seed: 824, variant: 'tall:k2', pairB: true });
  });

  it('split-K: deterministic, and unsplit when K is one slice', async () => {
    const gpu = await testGpu();
    const c: Case = { shape: [70, 67, 300], ta: true, tb: false, dtype: 'f32', seed: 830, variant: 'mid:k4' };
    const first = await check(gpu, c);
    const again = await check(gpu, c);
    expect(Array.from(again)).toEqual(Array.from(first));
    const [a, b, out] = [gpu.zeros([10, 9], 'f32', 'a'), gpu.zeros([10, 7], 'f32', 'b'), gpu.tensor([9, 7], 'f32', 'c')];
    expect(matmul(gpu, out, a, b, { transA: true, variant: 'mid:k4' })).toBe('matmul:tn:f32:64x64x16_4x4');
    expect(matmul(gpu, out, a, b, { transA: true, variant: 'small:k2' })).toBe('matmul:tn:f32:32x32x8_4x4:k');
    gpu.release(a, b, out);
  });

  // ':v4': A read as vec4 along M when transA, B along N when not transB (f32, 4-aligned); else scalar loads.
  it('vec4 loads: every transpose, partial tiles, with a split, and the scalar fallback', async () => {
    const gpu = await testGpu();
    for (const [i, [ta, tb]] of TRANS.entries()) {
      await check(gpu, { shape: [68, 100, 70], ta, tb, dtype: 'f32', seed: 850 + i, variant: 'mid:v4' });
      await check(gpu, { shape: [132, 92, 300], ta, tb, dtype: 'f32', seed: 860 + i, variant: 'n96:v4:k3', batch: 2, bias: true });
    }
    await check(gpu, {
      shape: [20, 36, 9],
      ta: true,
      tb: false,
      dtype: 'f32',
      seed: 870,
      batch: 3,
      broadcastA: true,
      accumulate: true,
      variant: 'small:v4',
    });
    await check(gpu, { shape: [65, 70, 33], ta: true, tb: false, dtype: 'f32', seed: 871, variant: 'mid:v4' }); // M, N odd: scalar
    await check(gpu, { shape: [64, 68, 33], ta: false, tb: false, dtype: 'bf16', seed: 872, variant: 'mid:v4' }); // 16-bit B: scalar
    const key = (ta: boolean, tb: boolean, [M, N, K]: Shape, v: MatmulVariant) => {
      const [a, b, out] = [
        gpu.zeros(ta ? [K, M] : [M, K], 'f32', 'a'),
        gpu.zeros(tb ? [N, K] : [K, N], 'f32', 'b'),
        gpu.tensor([M, N], 'f32', 'c'),
      ];
      const k = matmul(gpu, out, a, b, { transA: ta, transB: tb, variant: v });
      gpu.release(a, b, out);
      return k;
    };
    expect(key(true, false, [68, 100, 70], 'mid:v4')).toBe('matmul:tn:f32:64x64x16_4x4:va:vb');
    expect(key(false, false, [68, 100, 70], 'mid:v4')).toBe('matmul:nn:f32:64x64x16_4x4:vb');
    expect(key(false, true, [68, 100, 70], 'mid:v4')).toBe('matmul:nt:f32:64x64x16_4x4');
    expect(key(true, false, [66, 100, 70], 'mid:v4:k2')).toBe('matmul:tn:f32:64x64x16_4x4:vb:k');
  });

  // ':w': 8 x 4 threads a warp. Each output is still summed by one thread in the same order, so the outputs
  // must equal those of the row-major layout bit for bit.
  it('warp layout: every transpose, partial tiles, a split, bias and accumulate, against the row-major layout', async () => {
    const gpu = await testGpu();
    const cases: Array<[Shape, MatmulVariant, MatmulVariant, Partial<Case>]> = [
      [[70, 67, 40], 'mid:w', 'mid', {}],
      // the default for large products ('big:v4:w' where the device has the workgroup memory)
      [[132, 136, 40], 'big8:v4:w', 'big8', {}],
      [[20, 132, 100], 'rows:v4:w:k2', 'rows:v4:k2', { batch: 2, bias: true, accumulate: true, alpha: -0.5 }],
    ];
    for (const [shape, v, base, extra] of cases) {
      for (const [i, [ta, tb]] of TRANS.entries()) {
        const c: Case = { shape, ta, tb, dtype: 'f32', seed: 900 + i, ...extra };
        const got = await check(gpu, { ...c, variant: v });
        expect(Array.from(got), `${v} vs ${base} ${tname(ta, tb)}`).toEqual(Array.from(await check(gpu, { ...c, variant: base })));
      }
    }
    // a packed weight read a word at a time
    await check(gpu, { shape: [65, 70, 34], ta: false, tb: true, dtype: 'bf16', seed: 905, variant: 'mid:w', pairB: true, bias: true });
    const [a, b, out] = [gpu.zeros([40, 40], 'f32', 'a'), gpu.zeros([40, 40], 'f32', 'b'), gpu.tensor([40, 40], 'f32', 'c')];
    expect(matmul(gpu, out, a, b, { variant: 'mid:v4:w' })).toBe('matmul:nn:f32:64x64x16_4x4:vb:w');
    expect(matmul(gpu, out, a, b, { variant: 'small:w' })).toBe('matmul:nn:f32:32x32x8_4x4'); // 8 wide: already 8 x 4 a warp
    gpu.release(a, b, out);
    expect([TILES.big, TILES.mid, TILES.huge, TILES.tall4, TILES.small, TILES.tall, TILES.n96q].map(warpLayout)).toEqual([
      true,
      true,
      true,
      true,
      false,
      false,
      false,
    ]);
  });

  it('split-K: explicit strides and offsets', async () => {
    await checkStrided(await testGpu(), 40, 250, 840, 'small:k3');
  });

  it('chooseVariant: the first matching pick that fits the device, else the default rule', () => {
    const picks: Pick[] = [
      { trans: 'tn', M: [1, 1024], N: [1, 1024], K: [1024, 1e9], variant: 'mid:k4', provenance: 'test' },
      { trans: 'nt', N: [576, 576], variant: 'big16', provenance: 'test' },
      { trans: 'nt', N: [576, 576], variant: 'n96', provenance: 'test' },
    ];
    expect(chooseVariant({ M: 576, N: 576, K: 4096, transA: true }, 49152, picks)).toBe('mid:k4');
    expect(chooseVariant({ M: 576, N: 576, K: 512, transA: true }, 49152, picks)).toBe('mid:v4:w');
    expect(chooseVariant({ M: 4096, N: 576, K: 576, transB: true }, 49152, picks)).toBe('big16');
    expect(chooseVariant({ M: 4096, N: 576, K: 576, transB: true }, 32768, picks)).toBe('n96'); // big16 needs 33 KiB
    expect(chooseVariant({ M: 4096, N: 576, K: 576 }, 49152, picks)).toBe('big:v4:w');
    expect(chooseVariant({ M: 8, N: 576, K: 576, transB: true }, 49152, picks)).toBe('gemv');
    // every measured pick names a tile variant, and ':w' only where it changes the layout
    for (const p of PICKS) {
      const tv = tiledVariant(p.variant);
      expect(tv, p.variant).not.toBeNull();
      if (tv!.warp) expect(warpLayout(tv!.tile), p.variant).toBe(true);
    }
    // and wins where its ranges start: no earlier row shadows it
    for (const p of PICKS) {
      const at = { M: p.M![0], N: p.N![0], K: p.K![0], transA: p.trans![0] === 't', transB: p.trans![1] === 't' };
      expect(chooseVariant(at), p.provenance).toBe(p.variant);
    }
    expect(tiledVariant('mid:k4')).toEqual({ tile: TILES.mid, splits: 4, vec4: false, warp: false });
    expect(tiledVariant('n96:v4:k2')).toEqual({ tile: TILES.n96, splits: 2, vec4: true, warp: false });
    expect(tiledVariant('big:v4:w:k2')).toEqual({ tile: TILES.big, splits: 2, vec4: true, warp: true });
    expect(tiledVariant('gemv')).toBeNull();
    expect(() => tiledVariant('mid:k0')).toThrow(/bad variant/);
  });
});

describe('matmul sweep -> PICKS (bench/matmul-sweep.ts)', () => {
  const r = (
    name: string,
    trans: SweepResult['trans'],
    M: number,
    N: number,
    K: number,
    tokenDim: 'M' | 'K',
    def: [MatmulVariant, number],
    best: [MatmulVariant, number],
  ): SweepResult => ({
    name,
    trans,
    M,
    N,
    K,
    tokenDim,
    default: { variant: def[0], tflops: def[1] },
    best: { variant: best[0], tflops: best[1] },
  });
  const results = [
    r('q/o fwd T=4096', 'nt', 4096, 576, 576, 'M', ['big', 20], ['n96', 30]),
    r('q/o fwd T=1365', 'nt', 1365, 576, 576, 'M', ['mid', 15], ['n96', 25]),
    r('q/o dW T=1365', 'tn', 576, 576, 1365, 'K', ['mid', 10], ['mid:k4', 20]),
    r('q/o dW T=4096', 'tn', 576, 576, 4096, 'K', ['mid', 12], ['mid:v4:k8', 24]),
    r('q/o dX T=1365', 'nn', 1365, 576, 576, 'M', ['mid', 15], ['tall', 15.3]), // under 5 %: no row
  ];

  it('one row per product and pick, token buckets merged, and chooseVariant then returns the best', () => {
    const rows = sweepPicks(results, [1365, 4096], 0.05, 'H200, 2026-12-01, sweep.json');
    expect(rows.map(({ provenance: _, ...p }) => p)).toEqual([
      { trans: 'nt', M: [683, Infinity], N: [576, 576], K: [576, 576], variant: 'n96' },
      { trans: 'tn', M: [576, 576], N: [576, 576], K: [683, 2364], variant: 'mid:k4' },
      { trans: 'tn', M: [576, 576], N: [576, 576], K: [2365, Infinity], variant: 'mid:v4:k8' },
    ]);
    expect(rows[0].provenance).toBe(
      'H200, 2026-12-01, sweep.json: q/o fwd T=1365 mid 15.0 -> 25.0, q/o fwd T=4096 big 20.0 -> 30.0 (TFLOP/s)',
    );
    // the printed row is picks.ts's source: it reads back as the same row
    const line = pickLine(rows[0]);
    expect(line).toBe(
      "{ trans: 'nt', M: [683, Infinity], N: [576, 576], K: [576, 576], variant: 'n96', provenance: 'H200, 2026-12-01, sweep.json: q/o fwd T=1365 mid 15.0 -> 25.0, q/o fwd T=4096 big 20.0 -> 30.0 (TFLOP/s)' },",
    );
    expect(new Function(`return ${line.slice(0, -1)}`)()).toEqual(rows[0]);
    expect(new Function(`return ${pickLine({ ...rows[1], provenance: "it's \\ quoted" }).slice(0, -1)}`)().provenance).toBe(
      "it's \\ quoted",
    );
    const picks = rows;
    for (const x of results) {
      const want =
        x.best.tflops >= 1.05 * x.default.tflops
          ? x.best.variant
          : chooseVariant({ ...x, transA: x.trans[0] === 't', transB: x.trans[1] === 't' }, 49152, []);
      expect(chooseVariant({ ...x, transA: x.trans[0] === 't', transB: x.trans[1] === 't' }, 49152, picks)).toBe(want);
    }
  });
});

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
