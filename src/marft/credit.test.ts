import { describe, expect, it } from 'vitest';
import { STEP_REWARD_NAMES } from '../config/run-config.ts';
import { assignCredit, countPlanSteps, STEP_REWARDS, stepRewardFns } from './credit.ts';
import { actionSpans, placeOnLastTokens } from './sequence.ts';

const turn = [
  { role: 'planner', text: '1. read\n2. add\n3. check' },
  { role: 'solver', text: 'so \\boxed{5}' },
  { role: 'verifier', text: 'correct' },
];

describe('credit', () => {
  it('equal: R on the last action only', () => {
    expect(assignCredit(1, turn, { method: 'equal' })).toEqual([0, 0, 1]);
  });
  it('step_discount: R d^(N-1-i)', () => {
    // N = 3, d = 0.5: [1*0.25, 1*0.5, 1*1].
    expect(assignCredit(1, turn, { method: 'step_discount', discount: 0.5 })).toEqual([0.25, 0.5, 1]);
    expect(() => assignCredit(1, turn, { method: 'step_discount', discount: 2 })).toThrow(/discount must be in \[0, 1\]/);
  });
  it('per_step with the AReaL helpers', () => {
    const fns = stepRewardFns({ planner: 'planner', solver: 'solver', verifier: 'verifier' });
    // planner: 3 steps -> 0.5*min(3/2, 1) + 0.5*R; solver answered; verifier R.
    expect(assignCredit(1, turn, { method: 'per_step', rewardFns: fns })).toEqual([1, 1, 1]);
    expect(assignCredit(0, turn, { method: 'per_step', rewardFns: fns })).toEqual([0.5, 0.1, 0]);
    const noAnswer = [{ role: 'planner', text: '1. only step' }, { role: 'solver', text: 'five' }];
    // planner: 1 step -> 0.5*0.5 + 0 = 0.25; solver: no \boxed{} -> 0.
    expect(assignCredit(0, noAnswer, { method: 'per_step', rewardFns: fns })).toEqual([0.25, 0]);
    expect(() => assignCredit(1, [{ role: 'critic', text: '' }], { method: 'per_step', rewardFns: fns })).toThrow(/no reward function for role "critic"/);
    expect(assignCredit(1, [{ role: 'critic', text: '' }], { method: 'per_step', rewardFns: fns, fallback: STEP_REWARDS.team })).toEqual([1]);
    expect(() => stepRewardFns({ planner: 'nope' })).toThrow(/unknown reward "nope"/);
  });
  it('implements exactly the step rewards the run config names', () => {
    expect(Object.keys(STEP_REWARDS)).toEqual([...STEP_REWARD_NAMES]);
  });
  it('reward sharing as AReaL defines it: one team reward at the end, per-agent rewards ignored', () => {
    // AReaL-based MARFT areal/trainer/ppo/actor.py compute_advantages: with reward_sharing the team reward
    // goes on the sequence's last generated token only (`rewards[batch_indices, seqlens - 2] += reward_score`)
    // and the CreditAssignment token_rewards (areal/workflow/multi_agent/credit.py) are not read.
    const fns = stepRewardFns({ planner: 'planner', solver: 'solver', verifier: 'verifier' });
    // per_step without sharing: [1, 1, 1] for R = 1 and [0.5, 0.1, 0] for R = 0 (above); with sharing: R on the last action.
    expect(assignCredit(1, turn, { method: 'per_step', rewardFns: fns, rewardSharing: true })).toEqual([0, 0, 1]);
    expect(assignCredit(0, turn, { method: 'per_step', rewardFns: fns, rewardSharing: true })).toEqual([0, 0, 0]);
    // step_discount d = 0.5 gives [0.25, 0.5, 1] without sharing; with sharing the earlier shares are gone.
    expect(assignCredit(1, turn, { method: 'step_discount', discount: 0.5, rewardSharing: true })).toEqual([0, 0, 1]);
    expect(assignCredit(2, turn, { method: 'equal', rewardSharing: true })).toEqual([0, 0, 2]);
    // per_step's role functions are not even needed: sharing never calls them
    expect(assignCredit(1, [{ role: 'critic', text: '' }, { role: 'x', text: '' }], { method: 'per_step', rewardSharing: true })).toEqual([0, 1]);
  });
  it('counts plan steps as the reference does', () => {
    expect(countPlanSteps('1. a\n2) b\n- c\n* d\nplain')).toBe(4);
    expect(countPlanSteps('no steps here')).toBe(0);
  });
  it('places action rewards on each action\'s last token', () => {
    const mask = [0, 1, 1, 0, 1, 1, 1];
    const ids = [-1, 0, 0, -1, 1, 1, 2];
    const spans = actionSpans(mask, ids);
    expect(spans).toEqual([
      { agent: 0, start: 1, end: 3 },
      { agent: 1, start: 4, end: 6 },
      { agent: 2, start: 6, end: 7 },
    ]);
    expect(Array.from(placeOnLastTokens(7, spans, [0.25, 0.5, 1]))).toEqual([0, 0, 0.25, 0, 0, 0.5, 1]);
    expect(() => actionSpans([1], [-1])).toThrow(/agent id -1/);
  });
});
