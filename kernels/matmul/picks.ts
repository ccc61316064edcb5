// The measured matmul choices chooseVariant (variants.ts) tries before its default rule: data, one row per
// product range, each with the measurement it rests on. bench/matmul-sweep.ts prints rows in this form
// (pickLine in matmul.bench.ts) for the shapes where a variant beats the default rule by 5 % or more.
// The rows are the SmolLM2-135M training products (q/o, k/v, gate/up, gate+up, down, lm_head; M or K the
// token count T); other shapes take the default rule. Gains are TFLOP/s, the replaced choice first.

import type { MatmulVariant } from './tile.ts';

/**
 * A measured choice: products whose transposes and dims fall in these ranges (inclusive; omitted: any)
 * use `variant`. The first matching row wins; rows whose tile does not fit the device are skipped.
 * provenance: the GPU, the date, the sweep (its results folder) and the gain that put the row here.
 */
export interface Pick {
  trans?: 'nn' | 'nt' | 'tn' | 'tt';
  M?: readonly [number, number];
  N?: readonly [number, number];
  K?: readonly [number, number];
  variant: MatmulVariant;
  provenance: string;
}

export const PICKS: readonly Pick[] = [
  // T 3 073-3 328: at N = 576 the 128x128 tiles make 125-130 workgroups, one full wave on an H200's 132 SMs
  {
    trans: 'nn',
    M: [3073, 3328],
    N: [576, 576],
    K: [192, 3072],
    variant: 'big:v4:w',
    provenance:
      'H200, 2026-11-27, bench/results/s22/7-batches (one wave): T=3240 q/o dX n96q:v4 18.5 -> 29.0, gate/up dX 20.6 -> 33.1, k/v dX 13.7 -> 18.6, gate+up dX mid:v4 26.0 -> 34.0',
  },
  {
    trans: 'nt',
    M: [3073, 3328],
    N: [576, 576],
    K: [576, 1536],
    variant: 'big:v4:w',
    provenance: 'H200, 2026-11-27, bench/results/s22/7-batches (one wave): T=3240 q/o fwd mid:w 23.5 -> 28.6, down fwd mid:w 25.9 -> 34.4',
  },
  // T 3 329-5 211: the 'half' tiles' 1 152 workgroups keep all 132 SMs busy; from T = 6 480 the default wins
  {
    trans: 'nn',
    M: [3329, 5211],
    N: [576, 576],
    K: [192, 192],
    variant: 'half:v4',
    provenance: 'H200, 2026-11-27, bench/results/s21/5-half (SM balance): k/v dX T=4096 mid:v4:w 16.1 -> 19.6',
  },
  {
    trans: 'nn',
    M: [3329, 5211],
    N: [576, 576],
    K: [576, 576],
    variant: 'half:v4:w',
    provenance:
      'H200, 2026-11-27, bench/results/s21/5-half (SM balance): q/o dX T=4096 mid:w 22.5 -> 25.8; the default wins at T=6480 (s22/7-batches)',
  },
  {
    trans: 'nn',
    M: [3329, 5211],
    N: [576, 576],
    K: [1536, 1536],
    variant: 'half:v4:w',
    provenance:
      'H200, 2026-11-27, bench/results/s21/5-half (SM balance): gate/up dX T=4096 mid:v4:w 25.6 -> 27.7; the default wins at T=6480 (s22/7-batches)',
  },
  {
    trans: 'nt',
    M: [3073, Infinity],
    N: [192, 192],
    K: [576, 576],
    variant: 'halfn',
    provenance:
      'H200, 2026-11-27, bench/results/s21/5-half: k/v fwd T=4096 mid:v4:w 19.0 -> 21.0; still best at T=6480 (21.5 against 19.8) and T=3240 (16.6 against 14.9), s22/7-batches',
  },
  {
    trans: 'nt',
    M: [3329, 5211],
    N: [576, 576],
    K: [576, 576],
    variant: 'half:w',
    provenance:
      'H200, 2026-11-27, bench/results/s21/5-half (SM balance): q/o fwd T=4096 mid:w 23.4 -> 24.9; the default wins at T=6480 (s22/7-batches)',
  },
  {
    trans: 'nt',
    M: [3329, 5211],
    N: [576, 576],
    K: [1536, 1536],
    variant: 'half:w',
    provenance:
      'H200, 2026-11-27, bench/results/s21/5-half (SM balance): down fwd T=4096 mid:w 25.0 -> 26.8; the default wins at T=6480 (s22/7-batches)',
  },
  // T 1 536 and 2 688; the sweep's forward ('nt') winners made the iteration's scoring slower (s19/17-picks) and are left out
  {
    trans: 'nn',
    M: [2113, 3072],
    N: [576, 576],
    K: [192, 192],
    variant: 'n96q:v4',
    provenance: 'H200, 2026-11-27, bench/results/s19/15-sweep: k/v dX T=2688 14.5 -> 16.8',
  },
  {
    trans: 'nn',
    M: [2113, 3072],
    N: [576, 576],
    K: [576, 576],
    variant: 'n96q:v4',
    provenance: 'H200, 2026-11-27, bench/results/s19/15-sweep: q/o dX T=2688 21.5 -> 26.2',
  },
  {
    trans: 'nn',
    M: [2113, 3072],
    N: [576, 576],
    K: [1536, 1536],
    variant: 'n96q:v4',
    provenance: 'H200, 2026-11-27, bench/results/s19/15-sweep: gate/up dX T=2688 25.4 -> 32.1',
  },
  {
    trans: 'nn',
    M: [1451, 2112],
    N: [1536, 1536],
    K: [576, 576],
    variant: 'mid:w',
    provenance: 'H200, 2026-11-27, bench/results/s19/15-sweep: down dX T=1536 18.9 -> 22.5',
  },
  {
    trans: 'tn',
    M: [192, 192],
    N: [576, 576],
    K: [1451, 3392],
    variant: 'mid:v4:k8',
    provenance: 'H200, 2026-11-27, bench/results/s19/15-sweep: k/v dW T=1536 4.9 -> 9.9 (mid:v4:w:k8), T=2688 5.2 -> 14.1',
  },
  {
    trans: 'tn',
    M: [576, 576],
    N: [576, 576],
    K: [2113, 3392],
    variant: 'mid:v4:k8',
    provenance: 'H200, 2026-11-27, bench/results/s19/15-sweep: q/o dW T=2688 15.5 -> 18.7',
  },
  // T 1 365 and 4 096 (the s18 rows measured before ':w', against 'big' and 'mid'); the T >= 2 365 rows end where the rows above take over
  {
    trans: 'nn',
    M: [683, 2364],
    N: [576, 576],
    K: [576, 576],
    variant: 'tall4:w',
    provenance: 'H200, 2026-11-27, bench/matmul-sweep.ts after the :w layout (T 1365, 4096; output not kept): q/o dX T=1365 16.6 -> 17.9',
  },
  {
    trans: 'nn',
    M: [683, 2364],
    N: [576, 576],
    K: [3072, 3072],
    variant: 'mid:v4:k4',
    provenance: 'H200, 2026-11-27, bench/results/s18/6-matmul: gate+up dX T=1365 19.4 -> 25.4',
  },
  {
    trans: 'nn',
    M: [2365, 5211],
    N: [576, 576],
    K: [3072, 3072],
    variant: 'mid:v4',
    provenance:
      'H200, 2026-11-27, bench/results/s18/6-matmul: gate+up dX T=4096 20.2 -> 25.4; the default wins at T=6480 (34.5 against 29.7, s22/7-batches)',
  },
  {
    trans: 'nn',
    M: [683, 2364],
    N: [576, 576],
    K: [49152, 49152],
    variant: 'mid:v4:k4',
    provenance: 'H200, 2026-11-27, bench/results/s18/6-matmul: lm_head dX T=1365 20.2 -> 30.2',
  },
  {
    trans: 'nn',
    M: [2365, Infinity],
    N: [576, 576],
    K: [49152, 49152],
    variant: 'mid:v4',
    provenance: 'H200, 2026-11-27, bench/results/s18/6-matmul: lm_head dX T=4096 21.1 -> 26.1',
  },
  {
    trans: 'nt',
    M: [2365, 3072],
    N: [576, 576],
    K: [576, 576],
    variant: 'mid:w',
    provenance: 'H200, 2026-11-27, bench/matmul-sweep.ts after the :w layout (T 1365, 4096; output not kept): q/o fwd T=4096 18.4 -> 23.5',
  },
  {
    trans: 'nt',
    M: [683, 2364],
    N: [576, 576],
    K: [1536, 1536],
    variant: 'mid:k4',
    provenance: 'H200, 2026-11-27, bench/matmul-sweep.ts after the :w layout (T 1365, 4096; output not kept): down fwd T=1365 21.0 -> 22.2',
  },
  {
    trans: 'nt',
    M: [2365, 3072],
    N: [576, 576],
    K: [1536, 1536],
    variant: 'mid:w',
    provenance: 'H200, 2026-11-27, bench/matmul-sweep.ts after the :w layout (T 1365, 4096; output not kept): down fwd T=4096 20.6 -> 25.2',
  },
  {
    trans: 'tn',
    M: [192, 192],
    N: [576, 576],
    K: [683, 2364],
    variant: 'mid:v4:w:k8',
    provenance: 'H200, 2026-11-27, bench/matmul-sweep.ts after the :w layout (T 1365, 4096; output not kept): k/v dW T=1365 4.6 -> 9.4',
  },
  {
    trans: 'tn',
    M: [192, 192],
    N: [576, 576],
    K: [2365, Infinity],
    variant: 'mid:v4:k8',
    provenance: 'H200, 2026-11-27, bench/matmul-sweep.ts after the :w layout (T 1365, 4096; output not kept): k/v dW T=4096 5.4 -> 16.3',
  },
  {
    trans: 'tn',
    M: [576, 576],
    N: [576, 576],
    K: [683, 2364],
    variant: 'mid32:v4:w',
    provenance: 'H200, 2026-11-27, bench/matmul-sweep.ts after the :w layout (T 1365, 4096; output not kept): q/o dW T=1365 13.8 -> 15.1',
  },
  {
    trans: 'tn',
    M: [576, 576],
    N: [576, 576],
    K: [2365, Infinity],
    variant: 'mid:v4:k8',
    provenance: 'H200, 2026-11-27, bench/matmul-sweep.ts after the :w layout (T 1365, 4096; output not kept): q/o dW T=4096 16.0 -> 23.1',
  },
  {
    trans: 'tn',
    M: [1536, 1536],
    N: [576, 576],
    K: [683, Infinity],
    variant: 'tall4:v4:w',
    provenance:
      'H200, 2026-11-27, bench/matmul-sweep.ts after the :w layout (T 1365, 4096; output not kept): gate/up dW T=1365 23.8 -> 25.4, T=4096 26.2 -> 28.3',
  },
  {
    trans: 'tn',
    M: [49152, 49152],
    N: [576, 576],
    K: [683, Infinity],
    variant: 'big:v4',
    provenance: 'H200, 2026-11-27, bench/results/s18/6-matmul: lm_head dW T=1365 31.5 -> 33.2, T=4096 32.7 -> 34.6',
  },
];
