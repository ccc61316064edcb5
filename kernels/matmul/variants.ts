// Which matmul kernel runs a product: the tiles and their variant names ('<tile>[:v4][:w][:k<S>]', 'gemv',
// 'direct', 'block'), and the choice by shape: first the measured PICKS table (bench/matmul-sweep.ts prints
// its rows), else a default rule by size. matmul.ts generates and launches the kernels.

import { GEMV } from './gemv.ts';

/**
 * A block tile: BM x BN outputs per workgroup, BK deep K steps, TM x TN outputs per thread (multiples of 4,
 * not necessarily powers of two: 8 x 12 gives 96-wide tiles, and 576 = 6 x 96).
 */
export interface TileConfig { bm: number; bn: number; bk: number; tm: number; tn: number }

export const TILES = {
  big: { bm: 128, bn: 128, bk: 16, tm: 8, tn: 8 }, // 34 KiB of workgroup memory
  big8: { bm: 128, bn: 128, bk: 8, tm: 8, tn: 8 }, // 17 KiB, for devices with 32 KiB or less
  mid: { bm: 64, bn: 64, bk: 16, tm: 4, tn: 4 },
  small: { bm: 32, bn: 32, bk: 8, tm: 4, tn: 4 },
  rows: { bm: 16, bn: 64, bk: 16, tm: 4, tn: 4 }, // few rows (decode: M = batch of tokens)
  cols: { bm: 64, bn: 16, bk: 16, tm: 4, tn: 4 }, // few columns (value heads)
  // Candidates for the SmolLM2 shapes (N, K in 192, 576, 1536; M = tokens), ranked by bench/matmul-sweep.ts:
  big16: { bm: 128, bn: 128, bk: 16, tm: 8, tn: 16 }, // 128 threads of 8 x 16: more work per thread
  huge: { bm: 128, bn: 256, bk: 8, tm: 8, tn: 16 }, // 256 threads of 8 x 16, 25 KiB
  tall: { bm: 128, bn: 64, bk: 16, tm: 8, tn: 8 }, // 128 threads; N = 576 = 9 x 64, 192 = 3 x 64
  wide: { bm: 64, bn: 128, bk: 16, tm: 8, tn: 8 }, // 128 threads
  mid8: { bm: 64, bn: 64, bk: 16, tm: 8, tn: 8 }, // 64 threads of 8 x 8 (mid's tile, 4x the work per thread)
  n96: { bm: 128, bn: 96, bk: 16, tm: 8, tn: 12 }, // 128 threads; 576 = 6 x 96, 192 = 2 x 96, 1536 = 16 x 96
  n96s: { bm: 64, bn: 96, bk: 16, tm: 8, tn: 12 }, // 64 threads
  tall4: { bm: 128, bn: 64, bk: 16, tm: 8, tn: 4 }, // 256 threads of 8 x 4: 288 tiles at M = 4096, N = 576
  mid32: { bm: 64, bn: 64, bk: 32, tm: 4, tn: 4 }, // mid with half the barriers per multiply-add
  n96q: { bm: 64, bn: 96, bk: 16, tm: 4, tn: 12 }, // 128 threads of 4 x 12: 384 tiles at M = 4096, N = 576
  // mid's 576 tiles at M = 4096, N = 576 with 128 threads of twice mid's work: 3 shared reads per 32 FMAs, not 2 per 16
  mid84: { bm: 64, bn: 64, bk: 16, tm: 8, tn: 4 },
  mid48: { bm: 64, bn: 64, bk: 16, tm: 4, tn: 8 },
  // half mid's tile, 128 threads: 1 152 tiles at M = 4096, N = 576, 8.7 a SM of an H200 where mid's 576 give
  // 4.4 (some SMs run 5 tiles, others 4)
  half: { bm: 32, bn: 64, bk: 16, tm: 4, tn: 4 },
  halfn: { bm: 64, bn: 32, bk: 16, tm: 4, tn: 4 },
} as const satisfies Record<string, TileConfig>;

export type TileName = keyof typeof TILES;

/**
 * 'gemv': the skinny-M kernel of gemv.wgsl (no tiles: a workgroup of GEMV.kt threads splits K for
 * GEMV.nc output columns, each thread holding up to 16 rows of partial sums). For M <= 16 (decode).
 * 'direct': direct.wgsl, a 4x4 block per thread from global memory with no workgroup memory and no
 * barriers, for CPU adapters (Gpu.cpu), where barriers and idle lanes cost real time.
 * 'block': block.wgsl, the same idea with a TM x TN block sized by M (1 row for decode) and a 16-bit B
 * read a word (two elements) at a time: fewer loads per multiply-add. The default on CPU adapters.
 */
export type MatmulVariant = `${TileName}${'' | ':v4'}${'' | ':w'}${'' | `:k${number}`}` | 'gemv' | 'direct' | 'block';

/**
 * A tiled variant resolved: its tile, its K split (1: none), whether f32 operands contiguous along the
 * load axis are read as vec4 (where the call's layout allows: see vec4A, vec4B), and whether the threads
 * are laid out 8 x 4 a warp (where that differs: see warpLayout).
 */
export interface TiledVariant { tile: TileConfig; splits: number; vec4: boolean; warp: boolean }

/**
 * The tile, split, vec4 and warp choices of a tiled variant: '<tile>[:v4][:w][:k<S>]' ('mid', 'mid:v4',
 * 'big:v4:w', 'mid:k4') or an explicit config; null for gemv, direct and block.
 */
export function tiledVariant(v: MatmulVariant | TileConfig): TiledVariant | null {
  if (typeof v !== 'string') return { tile: v, splits: 1, vec4: false, warp: false };
  const [name, ...opts] = v.split(':');
  if (!(name in TILES)) return null;
  const out: TiledVariant = { tile: TILES[name as TileName], splits: 1, vec4: false, warp: false };
  for (const o of opts) {
    if (o === 'v4') out.vec4 = true;
    else if (o === 'w') out.warp = true;
    else if (/^k\d+$/.test(o) && Number(o.slice(1)) >= 1) out.splits = Number(o.slice(1));
    else throw new Error(`matmul: bad variant '${v}' (want <tile>[:v4][:w][:k<S>], S >= 1)`);
  }
  return out;
}

/**
 * Whether ':w' changes a tile's thread layout. Threads numbered row-major over the (BM/TM) x (BN/TN) grid
 * put a warp of 32 on 2 rows of a 16-wide grid: per k it reads 16 distinct B vec4s (256 bytes, two
 * workgroup-memory wavefronts) and 2 A vec4s. ':w' gives each warp 8 x 4 threads (8 B and 4 A vec4s, one
 * wavefront each). Grids 8 wide or narrower already have that layout.
 */
export const warpLayout = (t: TileConfig): boolean => {
  const [ntx, nty] = [t.bn / t.tn, t.bm / t.tm];
  return ntx > 8 && ntx % 8 === 0 && nty % 4 === 0;
};

/** Bytes of workgroup memory a tile needs (two buffers of BK rows of A and B, each row padded by a vec4). */
export const tileSharedBytes = (t: TileConfig): number => 2 * t.bk * (t.bm + t.bn + 8) * 4;

/** A product's shape and transposes, as chooseVariant sees it. */
export interface MatmulShape { M: number; N: number; K: number; batch?: number; transA?: boolean; transB?: boolean }

/**
 * A measured choice: products whose transposes and dims fall in these ranges (inclusive; omitted: any)
 * use `variant`. The first matching row wins; rows whose tile does not fit the device are skipped.
 */
export interface Pick {
  trans?: 'nn' | 'nt' | 'tn' | 'tt';
  M?: readonly [number, number];
  N?: readonly [number, number];
  K?: readonly [number, number];
  variant: MatmulVariant;
}

/**
 * Picks measured by bench/matmul-sweep.ts (it prints rows in this form for the shapes where a variant beats
 * the default below by 5 % or more): the SmolLM2-135M training products on an H200, 2026-11-27, after the
 * ':w' thread layout (q/o, k/v, gate/up, down at T = 1365 and 4096, against the default rule's 'big:v4:w'
 * and 'mid:v4:w'). The gate+up and lm_head rows are from the sweep before ':w' (bench/results/kernels/decode-kernels/6-matmul/),
 * measured against 'big' and 'mid'. Other shapes take the default rule.
 */
export const PICKS: readonly Pick[] = [
  // T = 3 073-3 328 (bench:iteration's 135M scoring and update batches, T 3 168 and 3 240), H200 sweep with one K step a loop
  // (bench/results/kernels/matmul-k-step/7-batches): at N = 576 the 128x128 tiles make 125-130 workgroups, one full wave on an
  // H200's 132 SMs, where the picks below run a wave and a part (n96q: 306 workgroups at T = 3 240)
  { trans: 'nn', M: [3073, 3328], N: [576, 576], K: [192, 3072], variant: 'big:v4:w' }, // T=3240: q/o dX n96q:v4 18.5 -> 29.0, gate/up dX 20.6 -> 33.1, k/v dX 13.7 -> 18.6, gate+up dX mid:v4 26.0 -> 34.0 TFLOP/s
  { trans: 'nt', M: [3073, 3328], N: [576, 576], K: [576, 1536], variant: 'big:v4:w' }, // T=3240: q/o fwd mid:w 23.5 -> 28.6, down fwd mid:w 25.9 -> 34.4 TFLOP/s
  // T = 3 329-5 211, H200 sweep before it, at T = 4096 (bench/results/kernels/matmul-vs-pytorch/5-half), against the pick each
  // replaces: the 'half' tiles' 1 152 workgroups keep all 132 SMs of an H200 busy where 64x64 tiles' 576 leave
  // some with 4 and others with 5. At T = 6 480 the default 'big:v4:w' (255 workgroups, two full waves) beats
  // them (the 7-batches sweep: q/o dX 26.8 -> 31.0, gate/up dX 28.6 -> 33.5, k/v dX 21.1 -> 22.4, q/o fwd
  // 25.1 -> 30.1, down fwd 26.9 -> 34.7 TFLOP/s); for k/v fwd 'halfn' stays best there (21.5 against 19.8)
  // and from T = 3 073 (16.6 against mid:v4:w's 14.9 at T = 3 240)
  { trans: 'nn', M: [3329, 5211], N: [576, 576], K: [192, 192], variant: 'half:v4' }, // k/v dX T=4096: mid32:v4:w (not in that sweep; 16.2 in the 15-sweep), mid:v4:w 16.1 -> 19.6 TFLOP/s
  { trans: 'nn', M: [3329, 5211], N: [576, 576], K: [576, 576], variant: 'half:v4:w' }, // q/o dX T=4096: mid:w 22.5 -> 25.8 TFLOP/s
  { trans: 'nn', M: [3329, 5211], N: [576, 576], K: [1536, 1536], variant: 'half:v4:w' }, // gate/up dX T=4096: mid:v4:w 25.6 -> 27.7 TFLOP/s
  { trans: 'nt', M: [3073, Infinity], N: [192, 192], K: [576, 576], variant: 'halfn' }, // k/v fwd T=4096: mid:v4:w 19.0 -> 21.0 TFLOP/s
  { trans: 'nt', M: [3329, 5211], N: [576, 576], K: [576, 576], variant: 'half:w' }, // q/o fwd T=4096: mid:w 23.4 -> 24.9 TFLOP/s
  { trans: 'nt', M: [3329, 5211], N: [576, 576], K: [1536, 1536], variant: 'half:w' }, // down fwd T=4096: mid:w 25.0 -> 26.8 TFLOP/s
  // T = 1536 and 2688 (the 135M iteration's batches before its prompts matched the peer's), H200 sweep
  // (bench/results/kernels/profile-and-picks/15-sweep): first, for the rows between the T = 1365 and 4096 sweeps' midpoints. The
  // sweep's forward ('nt') winners (n96q, tall4:w, mid:w, mid32:w) are left out: in the iteration, same
  // call, they made scoring slower (0.219-0.243 s against 0.208-0.210 s without them; bench/results/iteration/profile-and-picks/17-picks)
  { trans: 'nn', M: [2113, 3072], N: [576, 576], K: [192, 192], variant: 'n96q:v4' }, // k/v dX T=2688: 14.5 -> 16.8 TFLOP/s
  { trans: 'nn', M: [2113, 3072], N: [576, 576], K: [576, 576], variant: 'n96q:v4' }, // q/o dX T=2688: 21.5 -> 26.2 TFLOP/s
  { trans: 'nn', M: [2113, 3072], N: [576, 576], K: [1536, 1536], variant: 'n96q:v4' }, // gate/up dX T=2688: 25.4 -> 32.1 TFLOP/s
  { trans: 'nn', M: [1451, 2112], N: [1536, 1536], K: [576, 576], variant: 'mid:w' }, // down dX T=1536: 18.9 -> 22.5 TFLOP/s
  { trans: 'tn', M: [192, 192], N: [576, 576], K: [1451, 3392], variant: 'mid:v4:k8' }, // k/v dW T=1536: 4.9 -> 9.9 (mid:v4:w:k8), T=2688: 5.2 -> 14.1 TFLOP/s
  { trans: 'tn', M: [576, 576], N: [576, 576], K: [2113, 3392], variant: 'mid:v4:k8' }, // q/o dW T=2688: 15.5 -> 18.7 TFLOP/s
  // T = 1365 and 4096, H200 sweeps of the decode-kernels and profile-and-picks passes. Since the 7-batches sweep the T >= 2 365 rows end where
  // rows above take over, or at 5 211 (the default beats them at 6 480: gate+up dX mid:v4 29.7 against 34.5);
  // its k/v, q/o and gate/up dX rows at T = 4096 (mid32:v4:w, mid:w, mid:v4:w) are gone, shadowed up to 5 211
  { trans: 'nn', M: [683, 2364], N: [576, 576], K: [576, 576], variant: 'tall4:w' }, // q/o dX T=1365: 16.6 -> 17.9 TFLOP/s
  { trans: 'nn', M: [683, 2364], N: [576, 576], K: [3072, 3072], variant: 'mid:v4:k4' }, // gate+up dX T=1365: 19.4 -> 25.4 TFLOP/s
  { trans: 'nn', M: [2365, 5211], N: [576, 576], K: [3072, 3072], variant: 'mid:v4' }, // gate+up dX T=4096: 20.2 -> 25.4 TFLOP/s
  { trans: 'nn', M: [683, 2364], N: [576, 576], K: [49152, 49152], variant: 'mid:v4:k4' }, // lm_head dX T=1365: 20.2 -> 30.2 TFLOP/s
  { trans: 'nn', M: [2365, Infinity], N: [576, 576], K: [49152, 49152], variant: 'mid:v4' }, // lm_head dX T=4096: 21.1 -> 26.1 TFLOP/s
  { trans: 'nt', M: [2365, 3072], N: [576, 576], K: [576, 576], variant: 'mid:w' }, // q/o fwd T=4096: 18.4 -> 23.5 TFLOP/s
  { trans: 'nt', M: [683, 2364], N: [576, 576], K: [1536, 1536], variant: 'mid:k4' }, // down fwd T=1365: 21.0 -> 22.2 TFLOP/s
  { trans: 'nt', M: [2365, 3072], N: [576, 576], K: [1536, 1536], variant: 'mid:w' }, // down fwd T=4096: 20.6 -> 25.2 TFLOP/s
  { trans: 'tn', M: [192, 192], N: [576, 576], K: [683, 2364], variant: 'mid:v4:w:k8' }, // k/v dW T=1365: 4.6 -> 9.4 TFLOP/s
  { trans: 'tn', M: [192, 192], N: [576, 576], K: [2365, Infinity], variant: 'mid:v4:k8' }, // k/v dW T=4096: 5.4 -> 16.3 TFLOP/s
  { trans: 'tn', M: [576, 576], N: [576, 576], K: [683, 2364], variant: 'mid32:v4:w' }, // q/o dW T=1365: 13.8 -> 15.1 TFLOP/s
  { trans: 'tn', M: [576, 576], N: [576, 576], K: [2365, Infinity], variant: 'mid:v4:k8' }, // q/o dW T=4096: 16.0 -> 23.1 TFLOP/s
  { trans: 'tn', M: [1536, 1536], N: [576, 576], K: [683, Infinity], variant: 'tall4:v4:w' }, // gate/up dW T=1365: 23.8 -> 25.4 TFLOP/s; gate/up dW T=4096: 26.2 -> 28.3 TFLOP/s
  { trans: 'tn', M: [49152, 49152], N: [576, 576], K: [683, Infinity], variant: 'big:v4' }, // lm_head dW T=1365: 31.5 -> 33.2 TFLOP/s; lm_head dW T=4096: 32.7 -> 34.6 TFLOP/s
];

const inRange = (x: number, r?: readonly [number, number]) => !r || (x >= r[0] && x <= r[1]);

/** The tile variant the launcher uses for this shape, given the device's workgroup memory. */
export function chooseVariant(s: MatmulShape, sharedBytes = 49152, picks: readonly Pick[] = PICKS): MatmulVariant {
  const { M, N, K, batch = 1, transA = false, transB = false } = s;
  // Decode projections (a few rows times a Linear weight (N, K)): read each weight row once, coalesced,
  // with ceil(N / 4) workgroups; the 16x64 'rows' tile would re-read B per 16 rows with few workgroups.
  if (M <= GEMV.maxM && transB) return 'gemv';
  const trans = `${transA ? 't' : 'n'}${transB ? 't' : 'n'}`;
  for (const p of picks) {
    const tv = tiledVariant(p.variant);
    if ((p.trans && p.trans !== trans) || !inRange(M, p.M) || !inRange(N, p.N) || !inRange(K, p.K)) continue;
    if (tv && tileSharedBytes(tv.tile) > sharedBytes) continue;
    return p.variant;
  }
  const tiles = (t: TileConfig) => Math.ceil(M / t.bm) * Math.ceil(N / t.bn) * batch;
  // vec4 loads where the layout allows, and 8 x 4 threads a warp: on an H200 at 4096^3 'big' ran 36.2,
  // 'big:v4' 37.4 and 'big:v4:w' 39.8 TFLOP/s with two unrolled steps a loop (with one since the K-step change, 'big:v4'
  // and 'big:v4:w' both 43.6); 'mid:v4:w' beat 'mid' and 'mid:v4' there and on the
  // q/o weight gradient (576x576x4096 tn: 13.8, 15.3, 16.1)
  if (M >= 128 && N >= 128 && tiles(TILES.big) >= 96) {
    return tileSharedBytes(TILES.big) <= sharedBytes ? 'big:v4:w' : 'big8:v4:w';
  }
  if (M >= 48 && N >= 48) return 'mid:v4:w';
  if (M <= 16 && N >= 32) return 'rows';
  if (N <= 16 && M >= 32) return 'cols';
  return 'small';
}
