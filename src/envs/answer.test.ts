import { describe, expect, it } from 'vitest';
import { answersEqual, checkAnswer, extractBoxed, normalizeAnswer, parseNumber } from './answer.ts';

describe('extractBoxed', () => {
  it('takes the last boxed answer', () => {
    expect(extractBoxed('first \\boxed{1} then \\boxed{2}.')).toBe('2');
  });
  it('keeps nested braces', () => {
    expect(extractBoxed('so \\boxed{\\frac{3}{4}}')).toBe('\\frac{3}{4}');
    expect(extractBoxed('\\boxed{\\left( 1, \\frac{1}{2} \\right)}')).toBe('\\left( 1, \\frac{1}{2} \\right)');
  });
  it('ignores an unclosed last box and falls back to the previous complete one', () => {
    expect(extractBoxed('\\boxed{7} and \\boxed{8')).toBe('7');
  });
  it('handles \\fbox, a space before the brace and \\boxed 5', () => {
    expect(extractBoxed('\\fbox{9}')).toBe('9');
    expect(extractBoxed('\\boxed {10}')).toBe('10');
    expect(extractBoxed('$\\boxed 5$')).toBe('5');
  });
  it('returns null without a box', () => {
    expect(extractBoxed('the answer is 5')).toBeNull();
    expect(extractBoxed('\\boxedx')).toBeNull();
  });
});

describe('normalizeAnswer', () => {
  it('removes LaTeX dressing', () => {
    expect(normalizeAnswer('$\\left( 1, 2 \\right)$')).toBe('(1,2)');
    expect(normalizeAnswer('\\dfrac{3}{4}')).toBe('\\frac{3}{4}');
    expect(normalizeAnswer('\\frac34')).toBe('\\frac{3}{4}');
    expect(normalizeAnswer('90^\\circ')).toBe('90');
    expect(normalizeAnswer('50\\%')).toBe('50');
    expect(normalizeAnswer('\\text{5 apples}')).toBe('5apples');
    expect(normalizeAnswer('x = 5')).toBe('5');
    expect(normalizeAnswer('12.')).toBe('12');
    expect(normalizeAnswer('{5}')).toBe('5');
    expect(normalizeAnswer('{1}{2}')).toBe('{1}{2}');
  });
});

describe('parseNumber', () => {
  const q = (s: string) => {
    const r = parseNumber(s);
    return r ? `${r.n}/${r.d}` : null;
  };
  it('parses integers, decimals, negatives, separators, exponents', () => {
    expect(q('42')).toBe('42/1');
    expect(q('-7')).toBe('-7/1');
    expect(q('0.75')).toBe('3/4');
    expect(q('.5')).toBe('1/2');
    expect(q('1,234')).toBe('1234/1');
    expect(q('1,234,567.5')).toBe('2469135/2');
    expect(q('1e3')).toBe('1000/1');
    expect(q('2.5e-1')).toBe('1/4');
  });
  it('parses fractions', () => {
    expect(q('3/4')).toBe('3/4');
    expect(q('-6/8')).toBe('-3/4');
    expect(q('\\frac{3}{4}')).toBe('3/4');
    expect(q('-\\frac{3}{4}')).toBe('-3/4');
    expect(q('\\frac{-3}{4}')).toBe('-3/4');
  });
  it('rejects non-numbers and bad separators', () => {
    expect(q('1,2')).toBeNull();
    expect(q('12,34')).toBeNull();
    expect(q('x')).toBeNull();
    expect(q('1/0')).toBeNull();
    expect(q('')).toBeNull();
  });
});

describe('answersEqual', () => {
  it('compares numbers exactly as rationals', () => {
    expect(answersEqual('0.75', '3/4')).toBe(true);
    expect(answersEqual('\\dfrac{3}{4}', '0.75')).toBe(true);
    expect(answersEqual('3/4', '\\frac{6}{8}')).toBe(true);
    expect(answersEqual('1,000', '1000')).toBe(true);
    expect(answersEqual('-5', '-5.0')).toBe(true);
    expect(answersEqual('0.333', '1/3')).toBe(false);
    expect(answersEqual('5', '-5')).toBe(false);
  });
  it('accepts a number label', () => {
    expect(answersEqual('12', 12)).toBe(true);
  });
  it('compares text case-insensitively and tuples element-wise', () => {
    expect(answersEqual('\\text{Yes}', 'yes')).toBe(true);
    expect(answersEqual('\\left( 1, \\frac{1}{2} \\right)', '(1, 0.5)')).toBe(true);
    expect(answersEqual('(1, 2)', '[1, 2]')).toBe(false);
    expect(answersEqual('(1, 2)', '(1, 3)')).toBe(false);
  });
  it('is false for missing or empty answers', () => {
    expect(answersEqual(null, '1')).toBe(false);
    expect(answersEqual('', '')).toBe(false);
  });
});

describe('checkAnswer', () => {
  it('extracts and checks', () => {
    expect(checkAnswer('so the total is \\boxed{1,200}.', '1200')).toEqual({ answer: '1,200', correct: true });
    expect(checkAnswer('no box, 1200', '1200')).toEqual({ answer: null, correct: false });
  });
});
