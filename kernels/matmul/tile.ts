// The tiled matmul kernel's tiles and the names of every variant ('<tile>[:v4][:w][:k<S>]', 'gemv',
// 'direct', 'block'): what variants.ts chooses from, picks.ts names and tiled.ts generates.

/**
 * A block tile: BM x BN outputs per workgroup, BK deep K steps, TM x TN outputs per thread (multiples of 4,
 * not necessarily powers of two: 8 x 12 gives 96-wide tiles, and 576 = 6 x 96).
 */
export interface TileConfig {
  bm: number;
  bn: number;
  bk: number;
  tm: number;
  tn: number;
}

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
export interface TiledVariant {
  tile: TileConfig;
  splits: number;
  vec4: boolean;
  warp: boolean;
}

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

export const tileName = (t: TileConfig): string => `${t.bm}x${t.bn}x${t.bk}_${t.tm}x${t.tn}`;
