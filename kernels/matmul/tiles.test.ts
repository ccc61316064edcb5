// matmul's tile configurations for the SmolLM2 shapes, and split-K, against the float64 reference.

import { describe, expect, it } from 'vitest';
import { testGpu } from '../testing.ts';
import { matmul, matmulSource } from './matmul.ts';
import { PICKS, type Pick } from './picks.ts';
import { type MatmulVariant, TILES, type TileConfig, type TileName, tileSharedBytes, tiledVariant, warpLayout } from './tile.ts';
import { chooseVariant } from './variants.ts';
import { type Shape, TRANS, tname, type Case, check, checkStrided } from './testing.ts';

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
