// Credit assignment: from the team reward R of a turn to one reward per action of that turn, which the
// token-level layout puts on the action's last token (sequence.ts placeOnLastTokens) and action-level GAE
// uses as r_i. Strategies, as in the AReaL-based MARFT (workflow/multi_agent/credit.py):
// - equal: all of R on the last action of the turn, 0 on the others (the critic and GAE spread it);
// - step_discount: R * d^(N-1-i) on action i of N (the last gets R, earlier ones a discounted share);
// - per_step: a reward function per role (fallback for roles without one), e.g. the reference's helpers
//   planner 0.5*min(steps/2, 1) + 0.5*R, solver R / 0.1 / 0, verifier R; for the code environment the
//   coder's own pass rate (AReaL's code reward) and rules for a tester and a reviewer; for coop-plan the
//   environment's rule check of the planner's plan (plan-check).
// Reward sharing on is AReaL's `reward_sharing` (areal/trainer/ppo/actor.py compute_advantages): per-agent
// rewards are discarded and one team reward R sits at the end of the sequence, whatever the method: the
// same numbers as `equal` (R on the turn's last action, 0 on the others).

import type { StepRewardName } from '../config/run-config-schema.ts';
import { extractBoxed } from '../envs/answer.ts';
import { marftFail } from './errors.ts';

export type CreditMethod = 'equal' | 'step_discount' | 'per_step';

/** One action of the turn, in acting order. */
export interface CreditAction {
  role: string;
  text: string;
  /** The environment's score of this role's own answer this turn (code: its share of tests passed; coop-plan's plan role: its plan's check). */
  score?: number | null;
}

export interface StepRewardContext {
  role: string;
  /** Position of the action in the turn (0-based) and the number of actions. */
  index: number;
  count: number;
  text: string;
  teamReward: number;
  /** Whether the team's answer of the turn was right (the code environment: every test passed). */
  correct: boolean;
  /** The environment's score of this action's own answer, null when it has none. */
  score: number | null;
}

export type StepRewardFn = (ctx: StepRewardContext) => number;

// Numbered ("1." "2)" "3:") or bulleted ("-" "*") lines, as the reference counts plan steps.
const PLAN_STEP = /(?:^|\n)\s*(?:\d+[.):]|[-*])\s+\S/g;

/** Number of numbered or bulleted steps in a plan. */
export function countPlanSteps(text: string): number {
  return (text.match(PLAN_STEP) ?? []).length;
}

// Test cases a tester writes: assert / console.assert / expect calls, or `f(...) === value` checks, one per line.
const TEST_CASE = /(?:^|\n)[^\n]*?(?:\bassert(?:\.\w+)?\s*\(|\bexpect\s*\(|\)\s*===?\s*\S)/g;

/** Number of lines of a tester's output that hold a test case. */
export function countTestCases(text: string): number {
  return (text.match(TEST_CASE) ?? []).length;
}

// A reviewer's verdict: the last of these words it writes ("incorrect" and "not correct" reject).
const VERDICT = /\b(approve[sd]?|lgtm|accept(?:ed)?|(?:in|not\s+)correct|correct|reject(?:ed)?|wrong|buggy|fails?)\b/gi;

/** 'approve', 'reject' or null (no verdict word) from a reviewer's text. */
export function reviewVerdict(text: string): 'approve' | 'reject' | null {
  const words = [...text.matchAll(VERDICT)].map((m) => m[1].toLowerCase().replace(/\s+/g, ' '));
  const last = words.at(-1);
  if (last === undefined) return null;
  return /^(approve|lgtm|accept|correct)/.test(last) ? 'approve' : 'reject';
}

/** The per-step helpers: the AReaL-based MARFT's math ones and the code ones; exactly the names the run config accepts (STEP_REWARD_NAMES). */
export const STEP_REWARDS = {
  /** 0.5 * min(steps / 2, 1) + 0.5 * R: half for a structured plan (>= 2 steps), half for the outcome. */
  planner: (c: StepRewardContext) => 0.5 * Math.min(countPlanSteps(c.text) / 2, 1) + 0.5 * c.teamReward,
  /** R when it gave a \boxed{} answer and the team was right, 0.1 when it answered but the team was wrong, 0 with no answer. */
  solver: (c: StepRewardContext) => (extractBoxed(c.text) === null ? 0 : c.teamReward > 0 ? c.teamReward : 0.1),
  /** R. */
  verifier: (c: StepRewardContext) => c.teamReward,
  /** R (the team reward, for any role). */
  team: (c: StepRewardContext) => c.teamReward,
  /** The share of tests its own code passed (AReaL's code reward, the pass rate); 0 with no code. */
  coder: (c: StepRewardContext) => c.score ?? 0,
  /** 0.5 * min(test cases / 2, 1) + 0.5 * R: the planner's rule with written test cases for plan steps. */
  tester: (c: StepRewardContext) => 0.5 * Math.min(countTestCases(c.text) / 2, 1) + 0.5 * c.teamReward,
  /** 1 when its verdict matches the outcome (approve and every test passed, or reject and one failed), else 0. */
  reviewer: (c: StepRewardContext) => {
    const v = reviewVerdict(c.text);
    return v !== null && (v === 'approve') === c.correct ? 1 : 0;
  },
  /** The environment's rule check of the role's own plan (coop-plan): 1 for a right plan, else its score (the share of leading steps right); 0 with no check. */
  'plan-check': (c: StepRewardContext) => c.score ?? 0,
} satisfies Record<StepRewardName, StepRewardFn>;

export interface CreditOptions {
  method: CreditMethod;
  /** step_discount's d in [0, 1]. Default 1 (the reference's default). */
  discount?: number;
  /** On: the method is overridden by one team reward on the last action (AReaL's reward_sharing). */
  rewardSharing?: boolean;
  /** per_step: the reward function of each role. */
  rewardFns?: Record<string, StepRewardFn>;
  /** per_step: the function for roles without one. */
  fallback?: StepRewardFn;
  /** Whether the turn's team answer was right (the reviewer's rule); default teamReward > 0. */
  correct?: boolean;
}

/** One reward per action of the turn, in the order of `actions`. */
export function assignCredit(teamReward: number, actions: readonly CreditAction[], options: CreditOptions): number[] {
  const n = actions.length;
  if (n === 0) return [];
  if (!Number.isFinite(teamReward)) marftFail('CREDIT', `assignCredit: the team reward must be a finite number, got ${teamReward}`);
  switch (options.rewardSharing ? 'equal' : options.method) {
    case 'equal':
      return actions.map((_, i) => (i === n - 1 ? teamReward : 0));
    case 'step_discount': {
      const d = options.discount ?? 1;
      if (!(d >= 0 && d <= 1)) marftFail('CREDIT', `step_discount: discount must be in [0, 1], got ${d}`);
      return actions.map((_, i) => teamReward * d ** (n - 1 - i));
    }
    case 'per_step':
      return actions.map((a, i) => {
        const fn = options.rewardFns?.[a.role] ?? options.fallback;
        if (!fn) marftFail('CREDIT', `per_step: no reward function for role "${a.role}" and no fallback`);
        const r = fn({
          role: a.role,
          index: i,
          count: n,
          text: a.text,
          teamReward,
          correct: options.correct ?? teamReward > 0,
          score: a.score ?? null,
        });
        if (!Number.isFinite(r)) marftFail('CREDIT', `per_step: the reward function of "${a.role}" returned ${r}`);
        return r;
      });
    default:
      return marftFail(
        'CREDIT',
        `unknown credit method ${JSON.stringify((options as { method: unknown }).method)}; use equal, step_discount or per_step`,
      );
  }
}

/** Role -> helper name (as in the run config) to role -> function; unknown names fail with CREDIT. */
export function stepRewardFns(byRole: Record<string, string>): Record<string, StepRewardFn> {
  const out: Record<string, StepRewardFn> = {};
  for (const [role, name] of Object.entries(byRole)) {
    const fn = STEP_REWARDS[name as StepRewardName];
    if (!fn)
      marftFail('CREDIT', `per_step: role "${role}" names an unknown reward "${name}"; helpers: ${Object.keys(STEP_REWARDS).join(', ')}`);
    out[role] = fn;
  }
  return out;
}
