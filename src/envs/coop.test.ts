// coop-arith: reproducible problems whose steps and answers evaluate right, difficulty = number of
// operations, train and test splits that never share a computation, and the MathEnv judge behaviour.

import { describe, expect, it } from 'vitest';
import { type CoopProblem, CoopEnv, coopProblem, coopSplitOf, evaluateCoop, parseCoopExpression } from './coop.ts';
import { EnvError } from './errors.ts';
import { createEnv, listEnvs } from './registry.ts';

const sig = (p: CoopProblem): string => p.steps.map((s) => `${s.x}${s.op}${s.y}`).join(';');

describe('coop-arith problems', () => {
  it('are reproducible from the seed, with steps that compute the answer', () => {
    for (let d = 1; d <= 4; d++) {
      for (let s = 0; s < 50; s++) {
        const p = coopProblem(s, { difficulty: d });
        expect(coopProblem(s, { difficulty: d })).toEqual(p);
        expect(p.difficulty).toBe(d);
        expect(p.steps).toHaveLength(d);
        expect(String(Function(`return ${p.expression}`)())).toBe(p.answer);
        expect(String(p.steps[d - 1].result)).toBe(p.answer);
        for (const st of p.steps) expect(Number.isInteger(st.result) && st.result >= 0).toBe(true);
        if (p.kind === 'expression') expect(p.problem).toBe(`Compute ${p.expression}.`);
        else expect(p.problem).toMatch(/^[A-Z][a-z]+ has \d+ [a-z]+\. .* How many [a-z]+ does [A-Z][a-z]+ have now\?$/);
      }
    }
    expect(coopProblem(1).problem).not.toBe(coopProblem(2).problem);
  });

  it('flags problems where reading left to right is wrong', () => {
    expect(evaluateCoop(parseCoopExpression('17 + 25 * 3')).value).toBe(92);
    expect(evaluateCoop(parseCoopExpression('17 + 25 * 3', true)).value).toBe(126);
    expect(evaluateCoop(parseCoopExpression('5 * (28 - 3 * 7)')).lines.map((l) => `${l.x}${l.op}${l.y}=${l.result}`)).toEqual([
      '3*7=21',
      '28-21=7',
      '5*7=35',
    ]);
    let n = 0;
    for (let s = 0; s < 300; s++) {
      const p = coopProblem(s, { difficulty: 3 });
      const l2r = evaluateCoop(parseCoopExpression(p.expression, true)).value;
      expect(p.precedence).toBe(String(l2r) !== p.answer);
      if (p.precedence) {
        n++;
        expect(p.kind).toBe('expression');
      }
    }
    expect(n).toBeGreaterThan(10);
  });

  it('draws the asked share of multi-step expressions among those where precedence matters', () => {
    const share = (o: Parameters<typeof coopProblem>[1]): number => {
      const multi = Array.from({ length: 600 }, (_, s) => coopProblem(s, o)).filter((p) => p.kind === 'expression' && p.difficulty >= 2);
      expect(multi.length).toBeGreaterThan(150);
      return multi.filter((p) => p.precedence).length / multi.length;
    };
    expect(share({ difficulty: [2, 3] })).toBeGreaterThan(0.42); // DEFAULT_PRECEDENCE 0.5
    expect(share({ difficulty: [2, 3] })).toBeLessThan(0.58);
    expect(share({ difficulty: [2, 3], precedence: 1, split: 'test' })).toBe(1);
    expect(share({ difficulty: [2, 3], precedence: 0 })).toBe(0);
    const natural = share({ difficulty: [2, 3], precedence: null });
    expect(natural).toBeGreaterThan(0.05);
    expect(natural).toBeLessThan(0.3);
    // word problems and one-step problems never need precedence
    for (let s = 0; s < 200; s++) {
      const p = coopProblem(s, { precedence: 1 });
      if (p.kind === 'word' || p.difficulty === 1) expect(p.precedence).toBe(false);
    }
  });

  it('keeps the test split disjoint from train (by computation), both reproducible', () => {
    const train = new Set<string>();
    const test = new Set<string>();
    for (let s = 0; s < 1500; s++) {
      const p = coopProblem(s, { difficulty: [1, 2] });
      expect(p.split).toBe('train');
      expect(coopSplitOf(p.steps)).toBe('train');
      train.add(sig(p));
    }
    for (let s = 0; s < 300; s++) {
      const p = coopProblem(s, { difficulty: [1, 2], split: 'test' });
      expect(coopSplitOf(p.steps)).toBe('test');
      expect(coopProblem(s, { difficulty: [1, 2], split: 'test' }).problem).toBe(p.problem);
      test.add(sig(p));
    }
    for (const t of test) expect(train.has(t)).toBe(false);
    expect(test.size).toBeGreaterThan(100);
  });
});

describe('coop-arith env', () => {
  it('is registered and judges \\boxed{} answers over turns', () => {
    expect(listEnvs().some((e) => e.name === 'coop-arith' && e.builtin)).toBe(true);
    const env = createEnv('coop-arith', { difficulty: 2, split: 'test', horizon: 2 }) as CoopEnv;
    const { observation, info } = env.reset(7);
    const p = env.problem(7);
    expect(observation.task).toBe(p.problem);
    expect(info.answer).toBe(p.answer);
    expect(p.split).toBe('test');
    const wrong = env.step({ planner: '1. Add.', solver: `\\boxed{${Number(p.answer) + 1}}` }, { answerRoles: ['solver'] });
    expect(wrong).toMatchObject({ correct: false, done: false, feedback: 'judge: the answer is incorrect' });
    expect(env.step({ planner: '1. Add.', solver: `so \\boxed{${p.answer}}` }, { answerRoles: ['solver'] })).toMatchObject({
      correct: true,
      done: true,
      teamReward: 1,
    });
  });

  it('rejects bad options', () => {
    expect(() => createEnv('coop-arith', { difficulty: 5 })).toThrow(EnvError);
    expect(() => createEnv('coop-arith', { difficulty: [] })).toThrow(/difficulty/);
    expect(() => createEnv('coop-arith', { split: 'dev' })).toThrow(/split/);
    expect(() => createEnv('coop-arith', { wordFraction: 2 })).toThrow(/wordFraction/);
    expect(() => createEnv('coop-arith', { precedence: 1.5 })).toThrow(/precedence must be a number in \[0, 1\] or null/);
    expect(() => createEnv('coop-arith', { precedence: 'most' })).toThrow(/precedence/);
  });
});
