// The inspector's colour scale: one scale shared by every column, and a legend with its numbers.

import { describe, expect, it } from 'vitest';
import { chipStyle, colorFor, contrast, inkOn, legendStops, sharedScale } from './colors.ts';

describe('shared colour scale', () => {
  it('fits one diverging scale to every column, so the same advantage has the same colour in each', () => {
    const cols = [
      [0.5, -0.2],
      [2, null],
    ];
    const scale = sharedScale(cols, 'advantage');
    expect(scale).toEqual({ lo: -2, hi: 2 });
    // 0.5 in the first column and 0.5 in the second: one colour (each column on its own scale would differ)
    expect(colorFor(0.5, scale, 'advantage')).toBe('rgb(245,209,208)');
    expect(colorFor(2, scale, 'advantage')).toBe('rgb(214,69,65)');
    expect(colorFor(-2, scale, 'advantage')).toBe('rgb(59,110,214)');
  });

  it('fits a sequential scale for values over every column', () => {
    expect(sharedScale([[0.1], [0.3, 0.5]], 'value')).toEqual({ lo: 0.1, hi: 0.5 });
    expect(sharedScale([[], [null]], 'value')).toEqual({ lo: 0, hi: 1 });
  });

  it('labels the legend with five numbers from the low end to the high end, each with its colour', () => {
    const stops = legendStops({ lo: -2, hi: 2 }, 'advantage');
    expect(stops.map((s) => s.value)).toEqual([-2, -1, 0, 1, 2]);
    expect(stops[2].color).toBe('rgb(255,255,255)');
    expect(stops[4].color).toBe('rgb(214,69,65)');
    expect(legendStops({ lo: 0, hi: 1 }, 'value').map((s) => s.value)).toEqual([0, 0.25, 0.5, 0.75, 1]);
  });
});

describe('chip text colour', () => {
  const lum = (hex: string) => {
    const c = [1, 3, 5]
      .map((i) => parseInt(hex.slice(i, i + 2), 16) / 255)
      .map((x) => (x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4));
    return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
  };
  const rgbLum = (rgb: string) =>
    lum(
      `#${rgb
        .match(/\d+/g)!
        .map((n) => Number(n).toString(16).padStart(2, '0'))
        .join('')}`,
    );

  it('reaches WCAG AA (4.5:1) on every colour of both scales, including the saturated ends', () => {
    const scale = { lo: -1, hi: 1 };
    for (const by of ['advantage', 'value'] as const) {
      for (let v = -1; v <= 1.0001; v += 0.01) {
        const { background, color } = chipStyle(v, scale, by);
        expect(contrast(rgbLum(background), lum(color === '#000' ? '#000000' : '#ffffff'))).toBeGreaterThanOrEqual(4.5);
      }
    }
    // the red end that the page's ink (#1d2330) read at 4.09:1 on
    expect(chipStyle(0.92, scale, 'advantage').color).toBe('#000');
    expect(inkOn('rgb(236,236,236)')).toBe('#000');
  });
});
