// The built-in planning tasks (`coop-plan`): coop-arith's expression problems (levels 2..4) for a planner ->
// solver team, where the environment also judges the planner's plan by a rule. The team reward is coop-arith's
// (the solver's \boxed{} answer right); besides it, step() checks the planner's numbered plan against the
// problem's steps in the order they must be done (checkPlan) and reports the verdict as the planner's answer
// (correct = the plan is right, score = the share of its steps right), so credit can reward the plan itself.
// A "trap" is a problem where reading left to right is wrong (coop-arith's precedence flag, e.g.
// "17 + 25 * 3"): its left-to-right plan is a recognisable wrong plan. Option `trap` is their share
// (default 0.5). Problems say "Evaluate ..." (coop-arith's say "Compute ..."), so a model pretrained on both
// families can tell them apart and keep each family's habits. Train and test never share a computation
// (coop-arith's split rule).

import { type CoopLine, type CoopProblem, type CoopSplit, checkCoopDifficulty, coopProblem } from './coop.ts';
import { envFail } from './errors.ts';
import { MathEnv } from './mathEnv.ts';
import type { EnvOptions, StepOptions, StepResult } from './types.ts';

export interface CoopPlanOptions extends EnvOptions {
  /** Levels 2..4 (number of operations), one or a list drawn uniformly. Default [2, 3]. */
  difficulty?: number | readonly number[];
  /** Which split reset() draws from. Default 'train'. */
  split?: CoopSplit;
  /** Share of trap problems (reading left to right is wrong). Default DEFAULT_TRAP. */
  trap?: number;
  /** The role whose action is the plan. Default 'planner'. */
  planRole?: string;
}

export const DEFAULT_TRAP = 0.5;

export interface CoopPlanProblem extends CoopProblem {
  /** Reading left to right is wrong (= precedence): the class the left-to-right plan fails on. */
  trap: boolean;
}

function checkPlanDifficulty(d: unknown): number[] {
  if (d === undefined) return [2, 3];
  const list = Array.isArray(d) ? d : [d];
  if (list.length === 0 || list.some((x) => !Number.isInteger(x) || x < 2 || x > 4)) {
    envFail('ENV_OPTIONS', `coop-plan: difficulty must be an integer in 2..4 or a list of them, got ${JSON.stringify(d)}`);
  }
  return checkCoopDifficulty(list);
}

/** The problem of `seed`: coop-arith's expression problem of that seed, trap or not as the share asks. */
export function coopPlanProblem(seed: number, options: Pick<CoopPlanOptions, 'difficulty' | 'split' | 'trap'> = {}): CoopPlanProblem {
  const p = coopProblem(seed, {
    difficulty: checkPlanDifficulty(options.difficulty),
    split: options.split ?? 'train',
    wordFraction: 0,
    precedence: options.trap ?? DEFAULT_TRAP,
  });
  return { ...p, problem: `Evaluate ${p.expression}.`, id: `plan:${p.id}`, trap: p.precedence };
}

// ---- the plan rule ----

/** One plan step as read from its line: the operation and its operands ('R': the previous result). */
interface PlanStep {
  op: CoopLine['op'];
  a: number | 'R';
  b: number | 'R';
}

const OPERAND = String.raw`(\d+|the result)`;
const operand = (s: string): number | 'R' => (s === 'the result' ? 'R' : Number(s));
// The line formats of a good plan (src/pretrain/data.ts planLine): "Add 17 and 25.", "Add 8 to the result.",
// "Subtract 8 from the result.", "Multiply the result by 3.", "Divide 84 by the result.", "Add the two results."...
const FORMS: Array<[RegExp, (m: RegExpMatchArray) => PlanStep]> = [
  [new RegExp(`^Add ${OPERAND} and ${OPERAND}\\.$`), (m) => ({ op: '+', a: operand(m[1]), b: operand(m[2]) })],
  [new RegExp(`^Add ${OPERAND} to the result\\.$`), (m) => ({ op: '+', a: 'R', b: operand(m[1]) })],
  [new RegExp(`^Subtract ${OPERAND} from ${OPERAND}\\.$`), (m) => ({ op: '-', a: operand(m[2]), b: operand(m[1]) })],
  [new RegExp(`^Multiply ${OPERAND} by ${OPERAND}\\.$`), (m) => ({ op: '*', a: operand(m[1]), b: operand(m[2]) })],
  [new RegExp(`^Divide ${OPERAND} by ${OPERAND}\\.$`), (m) => ({ op: '/', a: operand(m[1]), b: operand(m[2]) })],
  [/^Add the two results\.$/, () => ({ op: '+', a: 'R', b: 'R' })],
  [/^Subtract the second result from the first\.$/, () => ({ op: '-', a: 'R', b: 'R' })],
  [/^Multiply the two results\.$/, () => ({ op: '*', a: 'R', b: 'R' })],
  [/^Divide the first result by the second\.$/, () => ({ op: '/', a: 'R', b: 'R' })],
];

function readStep(line: string): PlanStep | null {
  const body = line.replace(/^\s*\d+[.)]\s*/, '').trim();
  for (const [re, make] of FORMS) {
    const m = body.match(re);
    if (m) return make(m);
  }
  return null;
}

/** Whether a plan step does line `l` (+ and * either way round: "Add 8 to the result" is result + 8 or 8 + result). */
function sameStep(s: PlanStep, l: CoopLine): boolean {
  const x = l.xIsResult ? 'R' : l.x;
  const y = l.yIsResult ? 'R' : l.y;
  if (s.op !== l.op) return false;
  if (s.a === x && s.b === y) return true;
  return (l.op === '+' || l.op === '*') && s.a === y && s.b === x;
}

export interface PlanVerdict {
  /** Lines of the plan (non-empty). */
  lines: number;
  /** Lines read as a step (an operation and its operands). */
  found: number;
  /** Steps right in order, from the first: the plan's first `right` lines are the problem's first steps. */
  right: number;
  /** The problem's number of steps. */
  steps: number;
  /** Every step right, in order, and nothing else. */
  ok: boolean;
  /** 1 when ok, else right / steps. */
  score: number;
}

/**
 * Checks a plan, one step a line, against the problem's steps in the order they must be done. Only the
 * leading run of right steps counts: after a wrong step the later ones work on a different result, even
 * when their words match. A line that is no step (a generic "Read the problem.") is a wrong step.
 */
export function checkPlan(planText: string, problem: Pick<CoopProblem, 'steps'>): PlanVerdict {
  const lines = planText
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.length > 0);
  const read = lines.map(readStep);
  const steps = problem.steps.length;
  let right = 0;
  while (right < Math.min(read.length, steps) && read[right] !== null && sameStep(read[right]!, problem.steps[right])) right++;
  const ok = right === steps && lines.length === steps;
  return { lines: lines.length, found: read.filter((s) => s !== null).length, right, steps, ok, score: ok ? 1 : right / steps };
}

// ---- the environment ----

export class CoopPlanEnv extends MathEnv {
  readonly options: { difficulty: number[]; split: CoopSplit; trap: number; planRole: string };
  private drawn: CoopPlanProblem | null = null;

  constructor(options: CoopPlanOptions = {}) {
    const split = options.split ?? 'train';
    if (split !== 'train' && split !== 'test')
      envFail('ENV_OPTIONS', `coop-plan: split must be "train" or "test", got ${JSON.stringify(split)}`);
    const trap = options.trap ?? DEFAULT_TRAP;
    if (typeof trap !== 'number' || !(trap >= 0 && trap <= 1))
      envFail('ENV_OPTIONS', `coop-plan: trap must be a number in [0, 1], got ${JSON.stringify(options.trap)}`);
    const planRole = options.planRole ?? 'planner';
    if (typeof planRole !== 'string' || planRole === '')
      envFail('ENV_OPTIONS', `coop-plan: planRole must be a role name, got ${JSON.stringify(options.planRole)}`);
    const o = { difficulty: checkPlanDifficulty(options.difficulty), split, trap, planRole };
    super('coop-plan', (seed) => coopPlanProblem(seed, o), options.horizon);
    this.options = o;
  }

  /** The full problem (steps and trap flag included) that reset(seed) draws. */
  problem(seed: number): CoopPlanProblem {
    return coopPlanProblem(seed, this.options);
  }

  override reset(seed: number): ReturnType<MathEnv['reset']> {
    const r = super.reset(seed);
    this.drawn = this.problem(seed);
    return { ...r, info: { ...r.info, trap: this.drawn.trap } };
  }

  /**
   * coop-arith's step, plus the plan's verdict: the planner's entry in `answers` (answer null, so the team's
   * answer and the episode summary stay the solver's) and info.plan. No plan role acted: info.plan is null.
   */
  override step(actions: Record<string, string>, options: StepOptions = {}): StepResult {
    const res = super.step(actions, options);
    const role = this.options.planRole;
    if (!(role in actions) || !this.drawn) return { ...res, info: { ...res.info, plan: null } };
    const v = checkPlan(actions[role], this.drawn);
    return {
      ...res,
      answers: { ...res.answers, [role]: { answer: null, correct: v.ok, score: v.score } },
      info: { ...res.info, plan: v },
    };
  }
}

export function createCoopPlanEnv(options: CoopPlanOptions = {}): CoopPlanEnv {
  return new CoopPlanEnv(options);
}
