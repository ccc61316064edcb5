// coop-plan transcripts: the flaw rates are honoured, every good plan passes the environment's plan check
// and a left-to-right plan on a trap fails it, and a coop-arith-only mix is exactly data.ts's corpus.

import { describe, expect, it } from 'vitest';
import { answersEqual, extractBoxed } from '../envs/answer.ts';
import { checkPlan, type CoopPlanProblem } from '../envs/coop-plan.ts';
import { evaluateCoop, parseCoopExpression } from '../envs/coop.ts';
import { makeTranscripts, planText } from './data.ts';
import { mixedTranscripts, planEpisodeTranscripts, taskOf, withMixDefaults } from './plan-data.ts';

const planOf = (seeds: number, options = {}) => {
  const out = [];
  for (let s = 0; s < seeds; s++) out.push(...planEpisodeTranscripts(s, { teams: ['duo'], multiTurnFraction: 0, ...options }));
  return out;
};

describe('coop-plan transcripts', () => {
  const duo = planOf(3000);
  const planners = duo.filter((t) => t.role === 'planner');
  const solvers = duo.filter((t) => t.role === 'solver');

  it('draw the left-to-right plan on ~60 % of traps, a wrong plan on ~10 % of the rest', () => {
    const traps = planners.filter((t) => (t.problem as CoopPlanProblem).trap);
    const others = planners.filter((t) => !(t.problem as CoopPlanProblem).trap);
    expect(traps.length).toBeGreaterThan(1200);
    expect(others.length).toBeGreaterThan(1200);
    const order = traps.filter((t) => t.plan === 'order').length / traps.length;
    expect(order).toBeGreaterThan(0.55);
    expect(order).toBeLessThan(0.65);
    expect(traps.every((t) => t.plan === 'order' || t.plan === 'good')).toBe(true);
    const wrong = others.filter((t) => t.plan !== 'good').length / others.length;
    expect(wrong).toBeGreaterThan(0.07);
    expect(wrong).toBeLessThan(0.13);
    for (const t of duo) expect(t.problem.problem).toMatch(/^Evaluate .*\.$/);
  });

  it('make the solver slip on ~30 % of good plans and follow a wrong plan to a wrong answer', () => {
    const good = solvers.filter((t) => t.plan === 'good');
    const slips = good.filter((t) => t.flaw !== 'none').length / good.length;
    expect(slips).toBeGreaterThan(0.27);
    expect(slips).toBeLessThan(0.33);
    for (const t of good) expect(t.correct).toBe(t.flaw === 'none');
    // (a slip on top of a wrong plan may land on the answer by chance)
    for (const t of solvers.filter((x) => (x.plan === 'order' || x.plan === 'swap') && x.flaw === 'none')) expect(t.correct).toBe(false);
    for (const t of solvers) expect(answersEqual(extractBoxed(t.completion) ?? '', t.problem.answer)).toBe(t.correct);
    // the solver computes in the order of the left-to-right plan it was given
    const ordered = solvers.find((t) => t.plan === 'order' && t.flaw === 'none')!;
    const l2r = evaluateCoop(parseCoopExpression(ordered.problem.expression, true));
    expect(extractBoxed(ordered.completion)).toBe(String(l2r.value));
    expect(makeTranscripts(1, 0)).toEqual(makeTranscripts(1, 0));
  });

  it('write good plans that pass the plan check, left-to-right plans that fail it on every trap', () => {
    let goods = 0;
    let orders = 0;
    for (const t of planners) {
      const v = checkPlan(t.completion, t.problem);
      if (t.plan === 'good') {
        goods++;
        expect(t.completion).toBe(planText(t.problem.steps));
        expect(v.ok).toBe(true);
      } else {
        if (t.plan === 'order') orders++;
        expect(v.ok).toBe(false);
      }
    }
    expect(goods).toBeGreaterThan(1500);
    expect(orders).toBeGreaterThan(700);
    // at level 4 too, with every problem a trap
    for (const t of planOf(300, { planDifficulty: 4, trap: 1, trapPlanRate: 0.5 }).filter((x) => x.role === 'planner'))
      expect(checkPlan(t.completion, t.problem).ok).toBe(t.plan === 'good');
  });

  it('have the solo solver misread traps, and the orchestrated team route as on coop-arith', () => {
    const solo = [];
    for (let s = 0; s < 600; s++) solo.push(...planEpisodeTranscripts(s, { teams: ['solo'], multiTurnFraction: 0, soloMisreadRate: 0.9 }));
    const traps = solo.filter((t) => (t.problem as CoopPlanProblem).trap);
    const misread = traps.filter((t) => t.plan === 'order').length / traps.length;
    expect(misread).toBeGreaterThan(0.85);
    expect(solo.filter((t) => !(t.problem as CoopPlanProblem).trap).every((t) => t.plan === 'good')).toBe(true);
    const orch = planEpisodeTranscripts(4, { teams: ['orchestrated'] });
    expect(orch[0].role).toBe('orchestrator');
    expect(orch[orch.length - 1].completion).toBe('<done/>');
  });
});

describe('the mixed corpus', () => {
  it('is data.ts corpus for coop-arith alone, and mixes the families about evenly', () => {
    expect(mixedTranscripts(300, 5)).toEqual(makeTranscripts(300, 5));
    expect(mixedTranscripts(300, 5, { tasks: ['coop-arith'], teams: ['duo'] })).toEqual(makeTranscripts(300, 5, { teams: ['duo'] }));
    const mixed = mixedTranscripts(2000, 0, { tasks: ['coop-arith', 'coop-plan'] });
    const plan = mixed.filter((t) => t.problem.problem.startsWith('Evaluate')).length / mixed.length;
    expect(plan).toBeGreaterThan(0.4);
    expect(plan).toBeLessThan(0.6);
    expect(taskOf(3, ['coop-plan'])).toBe('coop-plan');
    expect(() => withMixDefaults({ tasks: ['coop-arith', 'nope' as 'coop-plan'] })).toThrow(/tasks must be a non-empty list/);
    expect(() => withMixDefaults({ trapPlanRate: 1.5 })).toThrow(/trapPlanRate must be a number in \[0, 1\]/);
  });
});
