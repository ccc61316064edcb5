import { describe, expect, it } from 'vitest';
import { STEP_REWARD_NAMES } from '../config/run-config-schema.ts';
import { assignCredit, countPlanSteps, countTestCases, reviewVerdict, STEP_REWARDS, stepRewardFns } from './credit.ts';
import { creditRewards } from './advantage-targets.ts';
import type { ActionRecord, EpisodeRecord } from './rollout.ts';
import { parseRunConfig } from '../config/run-config.ts';
import { CoopPlanEnv } from '../envs/coop-plan.ts';
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
    const noAnswer = [
      { role: 'planner', text: '1. only step' },
      { role: 'solver', text: 'five' },
    ];
    // planner: 1 step -> 0.5*0.5 + 0 = 0.25; solver: no \boxed{} -> 0.
    expect(assignCredit(0, noAnswer, { method: 'per_step', rewardFns: fns })).toEqual([0.25, 0]);
    expect(() => assignCredit(1, [{ role: 'critic', text: '' }], { method: 'per_step', rewardFns: fns })).toThrow(
      /no reward function for role "critic"/,
    );
    expect(assignCredit(1, [{ role: 'critic', text: '' }], { method: 'per_step', rewardFns: fns, fallback: STEP_REWARDS.team })).toEqual([
      1,
    ]);
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
    expect(
      assignCredit(
        1,
        [
          { role: 'critic', text: '' },
          { role: 'x', text: '' },
        ],
        { method: 'per_step', rewardSharing: true },
      ),
    ).toEqual([0, 1]);
  });
  it('counts plan steps as the reference does', () => {
    expect(countPlanSteps('1. a\n2) b\n- c\n* d\nplain')).toBe(4);
    expect(countPlanSteps('no steps here')).toBe(0);
  });
  it("places action rewards on each action's last token", () => {
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
  it("code helpers: the coder's own pass rate, the tester's written cases, the reviewer's verdict against the outcome", () => {
    const fns = stepRewardFns({ coder: 'coder', tester: 'tester', reviewer: 'reviewer' });
    const team = [
      { role: 'coder', text: '```js\nfunction add(a, b) { return a + b; }\n```', score: 0.75 },
      { role: 'tester', text: 'assert(add(1, 2) === 3);\nconsole.assert(add(0, 0) === 0);\nexpect(add(2, 2)).toBe(4);' },
      { role: 'reviewer', text: 'The loop is fine. Verdict: approve.' },
    ];
    // coder 0.75 (3 of 4 tests, whatever the team reward); tester 0.5 * min(3 / 2, 1) + 0.5 * 0.75 = 0.875;
    // reviewer approved but not every test passed: 0
    expect(assignCredit(0.75, team, { method: 'per_step', rewardFns: fns, correct: false })).toEqual([0.75, 0.875, 0]);
    // every test passed: the approval matches
    expect(
      assignCredit(
        1,
        team.map((a) => (a.role === 'coder' ? { ...a, score: 1 } : a)),
        { method: 'per_step', rewardFns: fns, correct: true },
      ),
    ).toEqual([1, 1, 1]);
    // no code, no score: 0; a rejection when the tests failed: 1; one test case and R 0: 0.25
    const failed = [
      { role: 'coder', text: 'I cannot' },
      { role: 'tester', text: 'assert.equal(add(1, 1), 2)' },
      { role: 'reviewer', text: 'This is incorrect: it fails on negatives.' },
    ];
    expect(assignCredit(0, failed, { method: 'per_step', rewardFns: fns, correct: false })).toEqual([0, 0.25, 1]);
    expect(countTestCases('add(1, 2) === 3\nadd(2, 2) == 4\nnothing here')).toBe(2);
    expect(reviewVerdict('not correct')).toBe('reject');
    expect(reviewVerdict('looks wrong at first, but on reflection LGTM')).toBe('approve');
    expect(reviewVerdict('no opinion')).toBeNull();
    expect(STEP_REWARDS.reviewer({ role: 'r', index: 0, count: 1, text: 'hmm', teamReward: 1, correct: true, score: null })).toBe(0);
  });

  it("plan-check: the environment's rule check of the role's own plan, whatever the team reward", () => {
    const fns = stepRewardFns({ planner: 'plan-check', solver: 'solver' });
    const duo = (planScore: number | null) => [
      { role: 'planner', text: '1. Multiply 25 by 3.\n2. Add 17 to the result.', score: planScore },
      { role: 'solver', text: '\\boxed{92}' },
    ];
    // a right plan: 1 even when the solver slipped (R 0; solver 0.1 for a wrong boxed answer)
    expect(assignCredit(0, duo(1), { method: 'per_step', rewardFns: fns })).toEqual([1, 0.1]);
    // a plan right in its first of 2 steps: 0.5; with R 1 the solver gets 1
    expect(assignCredit(1, duo(0.5), { method: 'per_step', rewardFns: fns })).toEqual([0.5, 1]);
    // no check (another env, or another role): 0
    expect(assignCredit(1, duo(null), { method: 'per_step', rewardFns: fns })).toEqual([0, 1]);
  });

  it("plan-check: coop-plan's verdict reaches the planner's action through the turn's answers", () => {
    const env = new CoopPlanEnv({ trap: 1, horizon: 1 });
    env.reset(3);
    const p = env.problem(3);
    // the left-to-right plan of a trap (wrong from its first step) and a right answer from the solver
    const l2r = '1. Add 1 and 2.\n2. Multiply the result by 3.';
    const texts = { planner: l2r, solver: `\\boxed{${p.answer}}` };
    const res = env.step(texts, { answerRoles: ['solver'] });
    const act = (agent: number, role: string): ActionRecord => ({
      episode: 0,
      turn: 0,
      agent,
      role,
      promptIds: [],
      actionIds: [1],
      behaviourLogp: [0],
      text: texts[role as 'planner' | 'solver'],
      finish: 'stop',
      truncated: 0,
    });
    const ep: EpisodeRecord = {
      index: 0,
      seed: 3,
      task: p.problem,
      info: {},
      actions: [act(0, 'planner'), act(1, 'solver')],
      turns: [{ teamReward: res.teamReward, correct: res.correct, feedback: res.feedback, answers: res.answers }],
      done: true,
      correct: res.correct,
    };
    const config = parseRunConfig({
      env: { name: 'coop-plan', options: {} },
      credit: { method: 'per_step', perStep: { planner: 'plan-check', solver: 'solver' } },
    });
    expect([...creditRewards(ep, config).values()]).toEqual([0, 1]);
    const equal = parseRunConfig({ env: { name: 'coop-plan', options: {} }, credit: { method: 'equal' } });
    expect([...creditRewards(ep, equal).values()]).toEqual([0, 1]);
  });
});
