// The chart's pure logic, hand-worked: TensorBoard's debiased EMA (reference:
// tensorboard/components/vz_line_chart2/line-chart.ts, resmoothDataset), run overlay alignment, CSV, tick labels.

import { describe, expect, it } from 'vitest';
import { alignCurves, emaSmooth, flatRange, tickLabels, toCsv } from './chart-data.ts';

describe('emaSmooth', () => {
  it('debiases the EMA and keeps gaps out of the average', () => {
    // w = 0.5: last 0.5 -> 0.5/0.5 = 1; last 0.25+1 = 1.25 -> 1.25/0.75; gap; last 0.625+1.5 = 2.125 -> 2.125/0.875
    const s = emaSmooth([1, 2, NaN, 3], 0.5);
    expect(s[0]).toBeCloseTo(1, 12);
    expect(s[1]).toBeCloseTo(1.25 / 0.75, 12);
    expect(s[2]).toBeNaN();
    expect(s[3]).toBeCloseTo(2.125 / 0.875, 12);
  });
  it('returns the values unchanged at weight 0 and a constant curve stays constant', () => {
    expect(emaSmooth([3, -1, 4], 0)).toEqual([3, -1, 4]);
    for (const v of emaSmooth([0.7, 0.7, 0.7, 0.7], 0.9)) expect(v).toBeCloseTo(0.7, 12);
  });
  it('rejects a weight outside [0, 1)', () => {
    expect(() => emaSmooth([1], 1)).toThrow(RangeError);
    expect(() => emaSmooth([1], -0.1)).toThrow(/smoothing weight/);
  });
});

describe('alignCurves', () => {
  it('puts two runs on the union of their iterations with null where one has no point', () => {
    const a = { xs: [1, 2, 3], ys: [0.1, 0.2, NaN] };
    const b = { xs: [2, 4], ys: [5, 6] };
    expect(alignCurves([a, b])).toEqual({
      xs: [1, 2, 3, 4],
      ys: [
        [0.1, 0.2, null, null],
        [null, 5, null, 6],
      ],
    });
  });
  it('keeps the last value of a repeated x', () => {
    expect(alignCurves([{ xs: [1, 2, 2], ys: [1, 2, 3] }])).toEqual({ xs: [1, 2], ys: [[1, 3]] });
  });
});

describe('toCsv', () => {
  it('writes a header, empty cells for gaps and quotes labels with commas', () => {
    expect(
      toCsv(
        'iteration',
        ['team', 'solver, run "b"'],
        [1, 2],
        [
          [0.5, null],
          [1, 2],
        ],
      ),
    ).toBe('iteration,team,"solver, run ""b"""\n1,0.5,1\n2,,2\n');
  });
});

describe('tickLabels', () => {
  it('tells small ticks apart in plain decimals (the entropy axis of issue 17)', () => {
    expect(tickLabels([0.075, 0.08, 0.085])).toEqual(['0.075', '0.080', '0.085']);
  });
  it('uses as few digits as needed', () => {
    expect(tickLabels([0, 0.5, 1])).toEqual(['0', '0.5', '1.0']);
    expect(tickLabels([0, 2000, 4000])).toEqual(['0', '2000', '4000']);
    expect(tickLabels([-1, 0, 1])).toEqual(['-1', '0', '1']);
  });
  it('leaves the null ticks of a log axis unlabelled', () => {
    expect(tickLabels([0.01, null, 0.1, null, 1])).toEqual(['0.01', '', '0.10', '', '1.00']);
  });
  it('switches to exponent notation for very small or large values', () => {
    expect(tickLabels([0, 2e-5, 4e-5])).toEqual(['0', '2e-5', '4e-5']);
    expect(tickLabels([1e6, 2e6])).toEqual(['1e+6', '2e+6']);
  });
});

describe('flatRange', () => {
  it('pads a flat curve by 10% (0.5 around 0) and leaves other ranges to uPlot', () => {
    expect(flatRange(0, 0)).toEqual([-0.5, 0.5]);
    expect(flatRange(2, 2)).toEqual([1.8, 2.2]);
    expect(flatRange(0, 1)).toBeNull();
    expect(flatRange(null, null)).toBeNull();
  });
});
