// Which matmul kernel runs a product: first the measured PICKS table (picks.ts; bench/matmul-sweep.ts prints
// its rows), else a default rule by size. tile.ts names the variants; matmul.ts launches them.

import { GEMV } from './gemv.ts';
import { PICKS, type Pick } from './picks.ts';
import { type MatmulVariant, type TileConfig, TILES, tileSharedBytes, tiledVariant } from './tile.ts';

/** A product's shape and transposes, as chooseVariant sees it. */
export interface MatmulShape {
  M: number;
  N: number;
  K: number;
  batch?: number;
  transA?: boolean;
  transB?: boolean;
}

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
  // 'big:v4' 37.4 and 'big:v4:w' 39.8 TFLOP/s with two unrolled steps a loop (with one, as now, 'big:v4'
  // and 'big:v4:w' both 43.6); 'mid:v4:w' beat 'mid' and 'mid:v4' there and on the
  // q/o weight gradient (576x576x4096 tn: 13.8, 15.3, 16.1)
  // The first that fits the device's workgroup memory: within WebGPU's default 16 KiB neither 'big8' (16.5
  // KiB) nor 'mid' (17 KiB) does, and 'half' (13 KiB, a pick on the H200 for M = 3 329-5 211) takes over.
  const fitting = (...vs: MatmulVariant[]): MatmulVariant =>
    vs.find((v) => tileSharedBytes(tiledVariant(v)!.tile) <= sharedBytes) ?? vs[vs.length - 1];
  if (M >= 128 && N >= 128 && tiles(TILES.big) >= 96) return fitting('big:v4:w', 'big8:v4:w', 'half:v4:w');
  if (M >= 48 && N >= 48) return fitting('mid:v4:w', 'half:v4:w');
  if (M <= 16 && N >= 32) return 'rows';
  if (N <= 16 && M >= 32) return 'cols';
  return 'small';
}
