// The MATH-grade answer checker (answer.ts, answer-eval.ts) on a catalogue of 259 hand-written pairs,
// equal and not equal (answer-catalogue.json: [predicted, gold, equal]): numbers and separators,
// fractions (\frac, \dfrac, \tfrac), mixed numbers, \sqrt and \pi forms, percentages, degrees and units,
// text, intervals and unions, tuples, sets and lists, equations and expressions with variables,
// functions, LaTeX dressing and garbage. The cases follow what the references decide: the legacy MARFT
// math environment (marft/envs/math/math_env.py, through Qwen2.5-Math's grader.math_equal) and
// math_verify (AReaL's math reward), except that numbers compare within 1e-9 relative, not 1e-4
// (so 1.4142 is not \sqrt{2}, and 3.14 is not \pi), and that a gold which is a number wants a number, not
// an unevaluated expression (17+25 for 42: the arithmetic tasks' own question).

import { describe, expect, it } from 'vitest';
import catalogue from './answer-catalogue.json';
import { answersEqual, checkAnswer } from './answer.ts';
import { createDatasetEnv } from './dataset.ts';

const pairs = catalogue as Array<[string, string, boolean]>;

describe('answer catalogue', () => {
  it('holds 200+ pairs, both equal and not equal', () => {
    expect(pairs.length).toBeGreaterThanOrEqual(200);
    expect(pairs.filter((p) => p[2]).length).toBeGreaterThanOrEqual(60);
    expect(pairs.filter((p) => !p[2]).length).toBeGreaterThanOrEqual(60);
  });

  it('decides every pair as labelled', () => {
    const wrong = pairs
      .filter(([a, b, equal]) => answersEqual(a, b) !== equal)
      .map(([a, b, equal]) => `${JSON.stringify(a)} vs gold ${JSON.stringify(b)}: expected ${equal}`);
    expect(wrong).toEqual([]);
  });

  it('is symmetric except where the gold is a number and the answer an unevaluated expression', () => {
    const refused = new Set(
      pairs
        .filter(([a, b]) => answersEqual(a, b) !== answersEqual(b, a))
        .map(([a, b]) => JSON.stringify(answersEqual(a, b) ? [b, a] : [a, b])),
    );
    // [answer refused, gold it is refused for]; the other way round each pair is equal
    expect([...refused].map((x) => JSON.parse(x) as [string, string])).toEqual([
      ['2^{10}', '1024'],
      ['\\frac{1}{2}+\\frac{1}{3}', '\\frac{5}{6}'],
      ['\\frac{1}{2}\\cdot\\frac{2}{3}', '\\frac13'],
      ['\\frac{\\frac{1}{2}}{2}', '\\frac{1}{4}'],
      ['\\sqrt{2}', '1.4142135623730951'],
      ['\\sqrt{16}', '4'],
      ['\\sqrt{\\frac{9}{4}}', '1.5'],
      ['\\sqrt[3]{27}', '3'],
      ['\\sqrt[3]{-8}', '-2'],
      ['2\\pi', '6.283185307179586'],
      ['[\\sqrt{4}, 5)', '[2, 5)'],
      ['2\\times 3', '6'],
      ['6 \\div 4', '1.5'],
      ['(2)(3)', '6'],
      ['2\\cdot -3', '-6'],
      ['2(3+4)', '14'],
      ['[3]', '3'],
      ['-(-3)', '3'],
      ['2^{3^2}', '512'],
      ['(2^3)^2', '64'],
      ['1+2\\cdot 3', '7'],
      ['17+25', '42'],
      ['6\\cdot 7', '42'],
      ['\\frac{2^{5}}{2^{3}}', '4'],
      ['\\left(\\frac{2}{3}\\right)^2', '\\frac{4}{9}'],
      ['(-2)^3', '-8'],
      ['-2^2', '-4'],
      ['\\sin(0)', '0'],
      ['\\cos 0', '1'],
      ['\\ln 1', '0'],
      ['\\sin\\frac{\\pi}{6}', '\\frac{1}{2}'],
      ['\\cos(\\pi)', '-1'],
      ['\\tan\\frac{\\pi}{4}', '1'],
      ['\\exp(0)', '1'],
    ]);
  });

  it('decides long and deeply nested answers without throwing', () => {
    const deep = `${'('.repeat(5000)}1${')'.repeat(5000)}`;
    expect(answersEqual(deep, '1')).toBe(false); // past MAX_EXPRESSION: compared as text only
    expect(answersEqual(deep, deep)).toBe(true);
    const long = Array.from({ length: 3000 }, (_, i) => String(i)).join('+');
    const t0 = performance.now();
    expect(answersEqual(long, '4498500')).toBe(false);
    expect(
      answersEqual(`(${Array.from({ length: 2000 }, (_, i) => i).join(', ')})`, `(${Array.from({ length: 2000 }, (_, i) => i).join(',')})`),
    ).toBe(true);
    const set = (xs: number[]) => `\\{${xs.join(', ')}\\}`;
    expect(answersEqual(set(Array.from({ length: 150 }, (_, i) => i)), set(Array.from({ length: 150 }, (_, i) => 149 - i)))).toBe(true);
    expect(answersEqual(set(Array.from({ length: 150 }, (_, i) => i)), set(Array.from({ length: 150 }, (_, i) => i + 1)))).toBe(false);
    expect(performance.now() - t0).toBeLessThan(2000);
  });

  it('is what the math environments judge with', () => {
    const env = createDatasetEnv({ data: '{"problem": "Half of five?", "answer": "2\\\\frac{1}{2}"}', split: 'all', horizon: 2 });
    env.reset(0);
    expect(env.step({ solver: 'so \\boxed{2.4}' }).correct).toBe(false);
    expect(env.step({ solver: 'so \\boxed{\\dfrac{5}{2}}' }).correct).toBe(true);
    expect(checkAnswer('area \\boxed{4\\pi \\text{ cm}^2}', '4\\pi')).toEqual({ answer: '4\\pi \\text{ cm}^2', correct: true });
  });
});
