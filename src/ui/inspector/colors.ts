// Token colours for the inspector: a diverging blue-white-red scale around 0 (advantage, reward, KL,
// log-ratio), a sequential one for values. One scale is fitted to everything shown side by side (the
// comparison's columns, the sandbox's agents), so the same number has the same colour everywhere, and the
// legend prints the scale's numbers.

import type { InspectToken } from '../../worker/api.ts';

export type ColorBy = 'advantage' | 'value' | 'reward' | 'ratio' | 'kl';
export const COLOR_BY: readonly ColorBy[] = ['advantage', 'value', 'reward', 'ratio', 'kl'];

/** The number a token is coloured by (ratio as log-ratio, so 1 is the centre). */
export function tokenMetric(t: InspectToken, by: ColorBy): number | null {
  switch (by) {
    case 'advantage':
      return t.advantage;
    case 'value':
      return t.value;
    case 'reward':
      return t.reward;
    case 'ratio':
      return Math.log(t.ratio);
    case 'kl':
      return t.kl;
  }
}

export const diverging = (by: ColorBy): boolean => by !== 'value';

/** The scale's half-range (diverging) or [min, max] (sequential) over the tokens. */
export function scaleOf(values: Array<number | null>, by: ColorBy): { lo: number; hi: number } {
  const xs = values.filter((v): v is number => v !== null && Number.isFinite(v));
  if (!xs.length) return { lo: 0, hi: 1 };
  if (diverging(by)) {
    const m = Math.max(...xs.map(Math.abs)) || 1;
    return { lo: -m, hi: m };
  }
  const lo = Math.min(...xs),
    hi = Math.max(...xs);
  return hi > lo ? { lo, hi } : { lo: lo - 0.5, hi: hi + 0.5 };
}

/** One scale over several columns: the same number gets the same colour in each. */
export const sharedScale = (columns: ReadonlyArray<ReadonlyArray<number | null>>, by: ColorBy): { lo: number; hi: number } =>
  scaleOf(columns.flat(), by);

/** The legend's stops: five numbers from the scale's low end to its high end, each with its colour. */
export function legendStops(scale: { lo: number; hi: number }, by: ColorBy): Array<{ value: number; color: string }> {
  return [0, 0.25, 0.5, 0.75, 1].map((t) => {
    const value = scale.lo + (scale.hi - scale.lo) * t;
    return { value, color: colorFor(value, scale, by) };
  });
}

const mix = (a: number[], b: number[], t: number) => a.map((x, i) => Math.round(x + (b[i] - x) * t));
const BLUE = [59, 110, 214],
  WHITE = [255, 255, 255],
  RED = [214, 69, 65],
  PALE = [240, 244, 250],
  GREEN = [30, 150, 90];

/** A CSS colour for `v` on the scale; null (not applicable) is light grey. */
export function colorFor(v: number | null, scale: { lo: number; hi: number }, by: ColorBy): string {
  if (v === null || !Number.isFinite(v)) return 'rgb(236,236,236)';
  let c: number[];
  if (diverging(by)) {
    const t = Math.max(-1, Math.min(1, v / scale.hi));
    c = t < 0 ? mix(WHITE, BLUE, -t) : mix(WHITE, RED, t);
  } else {
    const t = Math.max(0, Math.min(1, (v - scale.lo) / (scale.hi - scale.lo)));
    c = mix(PALE, GREEN, t);
  }
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}

/** WCAG relative luminance of an sRGB colour (0..255 channels). */
function luminance([r, g, b]: number[]): number {
  const lin = (c: number) => {
    const x = c / 255;
    return x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
}

/** WCAG contrast ratio of two luminances. */
export const contrast = (l1: number, l2: number): number => (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05);

/**
 * The text colour for a chip of background `bg` (an rgb() colour of colorFor): black or white, whichever
 * contrasts more. One of the two always reaches 4.58:1 on any background (WCAG AA asks 4.5 for body text);
 * the page's own ink (#1d2330) does not on the saturated ends of the scale.
 */
export function inkOn(bg: string): string {
  const m = /rgb\((\d+),\s*(\d+),\s*(\d+)\)/.exec(bg);
  if (!m) return '#000';
  const l = luminance([Number(m[1]), Number(m[2]), Number(m[3])]);
  return contrast(l, 0) >= contrast(l, 1) ? '#000' : '#fff';
}

/** A token chip's colours: its background on the scale and the text colour that reads on it. */
export function chipStyle(v: number | null, scale: { lo: number; hi: number }, by: ColorBy): { background: string; color: string } {
  const background = colorFor(v, scale, by);
  return { background, color: inkOn(background) };
}

/** Shows whitespace and control characters of a token visibly. */
export function visibleText(s: string): string {
  if (s === '') return '∅';
  return s.replace(/\n/g, '↵').replace(/\t/g, '→').replace(/ /g, '·');
}
