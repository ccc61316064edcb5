// coop-plan: reproducible expression problems of the requested split and trap share, the plan rule on
// hand-written plans, and the planner's verdict in step() beside coop-arith's team reward.

import { describe, expect, it } from 'vitest';
import { CoopPlanEnv, checkPlan, coopPlanProblem } from './coop-plan.ts';
import { coopSplitOf, evaluateCoop, parseCoopExpression } from './coop.ts';
import { EnvError } from './errors.ts';
import { createEnv, listEnvs } from './registry.ts';

const stepsOf = (expression: string) => evaluateCoop(parseCoopExpression(expression));

describe('coop-plan problems', () => {
  it('are reproducible expressions of levels 2..4 in their split, about half of them traps', () => {
    let traps = 0;
    for (const split of ['train', 'test'] as const) {
      for (let s = 0; s < 200; s++) {
        const p = coopPlanProblem(s, { split });
        expect(coopPlanProblem(s, { split })).toEqual(p);
        expect(p.split).toBe(split);
        expect(coopSplitOf(p.steps)).toBe(split);
        expect(p.kind).toBe('expression');
        expect(p.problem).toBe(`Evaluate ${p.expression}.`);
        expect([2, 3]).toContain(p.difficulty);
        expect(String(stepsOf(p.expression).value)).toBe(p.answer);
        expect(p.trap).toBe(stepsOf(p.expression).value !== evaluateCoop(parseCoopExpression(p.expression, true)).value);
        if (p.trap) traps++;
      }
    }
    expect(traps / 400).toBeGreaterThan(0.4);
    expect(traps / 400).toBeLessThan(0.6);
    for (let s = 0; s < 50; s++) expect(coopPlanProblem(s, { trap: 1, difficulty: 4 }).trap).toBe(true);
    for (let s = 0; s < 50; s++) expect(coopPlanProblem(s, { trap: 0 }).trap).toBe(false);
  });

  it('is a built-in env with checked options', () => {
    expect(listEnvs().some((e) => e.name === 'coop-plan' && e.builtin)).toBe(true);
    expect(createEnv('coop-plan', { split: 'test' }).name).toBe('coop-plan');
    expect(() => new CoopPlanEnv({ difficulty: 1 })).toThrow(/coop-plan: difficulty must be an integer in 2..4/);
    expect(() => new CoopPlanEnv({ trap: 1.5 })).toThrow(EnvError);
    expect(() => new CoopPlanEnv({ split: 'dev' as 'test' })).toThrow(/split/);
  });
});

describe('checkPlan', () => {
  // 17 + 25 * 3: 25 * 3 = 75 first, then 17 + 75 (a trap: left to right gives (17 + 25) * 3)
  const trap = { steps: stepsOf('17 + 25 * 3').lines };

  it('accepts the good plan, + and * either way round', () => {
    expect(checkPlan('1. Multiply 25 by 3.\n2. Add 17 to the result.', trap)).toEqual({
      lines: 2,
      found: 2,
      right: 2,
      steps: 2,
      ok: true,
      score: 1,
    });
    expect(checkPlan('1. Multiply 3 by 25.\n2. Add 17 to the result.', trap).ok).toBe(true);
    const chain = { steps: stepsOf('4 + (30 - 2) / 7').lines };
    expect(checkPlan('1. Subtract 2 from 30.\n2. Divide the result by 7.\n3. Add 4 to the result.', chain).ok).toBe(true);
    const left = { steps: stepsOf('90 - 5 * 3').lines };
    expect(checkPlan('1. Multiply 5 by 3.\n2. Subtract the result from 90.', left).ok).toBe(true);
  });

  it('refuses a left-to-right plan on a trap, a generic plan, a wrong operand, a wrong order of operands, extra lines', () => {
    expect(checkPlan('1. Add 17 and 25.\n2. Multiply the result by 3.', trap)).toMatchObject({ found: 2, right: 0, ok: false, score: 0 });
    expect(checkPlan('1. Read the problem.\n2. Work out the numbers.\n3. Give the answer.', trap)).toMatchObject({
      found: 0,
      right: 0,
      ok: false,
      score: 0,
    });
    expect(checkPlan('1. Multiply 25 by 3.\n2. Add 18 to the result.', trap)).toMatchObject({ right: 1, ok: false, score: 0.5 });
    const left = { steps: stepsOf('90 - 5 * 3').lines };
    expect(checkPlan('1. Multiply 5 by 3.\n2. Subtract 90 from the result.', left)).toMatchObject({ right: 1, ok: false });
    expect(checkPlan('1. Multiply 25 by 3.\n2. Add 17 to the result.\n3. Give the answer.', trap)).toMatchObject({ right: 2, ok: false });
    expect(checkPlan('1. Multiply 25 by 3.', trap)).toMatchObject({ right: 1, ok: false, score: 0.5 });
    expect(checkPlan('', trap)).toMatchObject({ lines: 0, right: 0, ok: false, score: 0 });
  });

  it('counts only the leading run of right steps', () => {
    // 4 + (30 - 2) * 3 read left to right: 30 - 2 first (right), then 4 + 28 (wrong), then * 3 (words of no step here)
    const p = { steps: stepsOf('4 + (30 - 2) * 3').lines };
    const l2r = evaluateCoop(parseCoopExpression('4 + (30 - 2) * 3', true)).lines;
    expect(l2r.map((l) => l.op)).toEqual(['-', '+', '*']);
    expect(checkPlan('1. Subtract 2 from 30.\n2. Add 4 to the result.\n3. Multiply the result by 3.', p)).toMatchObject({
      found: 3,
      right: 1,
      ok: false,
      score: 1 / 3,
    });
  });
});

describe('coop-plan step', () => {
  it("rewards the team for the solver's answer and gives the planner its plan's verdict", () => {
    const env = new CoopPlanEnv({ trap: 1, horizon: 1 });
    const r = env.reset(5);
    const p = env.problem(5);
    expect(r.observation.task).toBe(p.problem);
    expect(r.info.trap).toBe(true);
    const good = p.steps.map((_, i) => `${i + 1}. step`).join('\n');
    const res = env.step({ planner: good, solver: `\\boxed{${p.answer}}` }, { answerRoles: ['solver'] });
    expect(res.teamReward).toBe(1);
    expect(res.correct).toBe(true);
    expect(res.answers.solver.correct).toBe(true);
    expect(res.answers.planner).toEqual({ answer: null, correct: false, score: 0 });
    expect(Object.keys(res.answers)).toEqual(['solver', 'planner']);
    expect(res.info.plan).toMatchObject({ ok: false, steps: p.steps.length });
    expect(res.info.answer).toBe(p.answer);
  });

  it('marks a right plan correct even when the solver slips, and skips the verdict without a planner', () => {
    const env = new CoopPlanEnv({ horizon: 1 });
    env.reset(11);
    const p = env.problem(11);
    const verbs = { '+': 'Add', '-': 'Subtract', '*': 'Multiply', '/': 'Divide' } as const;
    // every step spelt with "the result" where the line uses one (a chain: at most one result per line)
    const plan = p.steps
      .map((l, i) => {
        const x = l.xIsResult ? 'the result' : String(l.x);
        const y = l.yIsResult ? 'the result' : String(l.y);
        const body = l.op === '+' ? `Add ${x} and ${y}.` : l.op === '-' ? `Subtract ${y} from ${x}.` : `${verbs[l.op]} ${x} by ${y}.`;
        return `${i + 1}. ${body}`;
      })
      .join('\n');
    const res = env.step({ planner: plan, solver: `\\boxed{${Number(p.answer) + 1}}` }, { answerRoles: ['solver'] });
    expect(res.teamReward).toBe(0);
    expect(res.answers.planner).toEqual({ answer: null, correct: true, score: 1 });
    const solo = new CoopPlanEnv({ horizon: 1 });
    solo.reset(11);
    const s = solo.step({ solver: `\\boxed{${p.answer}}` });
    expect(s.answers.planner).toBeUndefined();
    expect(s.info.plan).toBeNull();
  });
});
