// The matmul sweep's rows for the PICKS table (bench/matmul-sweep.ts).

import { describe, expect, it } from 'vitest';
import type { MatmulVariant } from './tile.ts';
import { chooseVariant } from './variants.ts';
import { type SweepResult, pickLine, sweepPicks } from './matmul.bench.ts';

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
