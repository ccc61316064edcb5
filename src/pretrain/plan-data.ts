// Synthetic transcripts of the coop-plan family (src/envs/coop-plan.ts), and the corpus that mixes the
// families a pretraining run names (`tasks`). Same teams, prompts and mechanics as coop-arith's
// transcripts (data.ts), with flaws made so the untuned team is wrong at greedy decoding on a class of
// problems a planner can learn to recognise:
// 1. On a trap (reading left to right is wrong), the planner writes the left-to-right plan with probability
//    trapPlanRate (default 0.6: above 0.5, so the greedy plan is the wrong one) and the good plan otherwise.
//    On other problems it writes a wrong plan (a swapped + / -, or a generic one) with probability
//    planWrongRate (default 0.1).
// 2. The solver follows the plan it gets (a left-to-right plan: the work in that order, a wrong answer) and
//    slips (a wrong line carried forward, or a wrong boxed number) with probability planSlipRate (default
//    0.3) after it; min(0.95, noPlanFactor * planSlipRate) without a usable plan. Slips that frequent make
//    the team reward a noisy signal of the plan's worth, which a rule-checked plan reward is not.
// 3. A solver alone (solo, or called by the orchestrator without a plan) reads a trap left to right with
//    probability soloMisreadRate, as on coop-arith.
// The family's problems say "Evaluate ..." (coop-arith's "Compute ..."), so a model that learns both keeps
// each family's habits apart. Episodes of a mixed corpus pick their family from a stream of their own, so a
// coop-arith-only corpus is exactly the one data.ts makes.

import { Rng } from '../common/rng.ts';
import { type CoopPlanProblem, DEFAULT_TRAP, coopPlanProblem } from '../envs/coop-plan.ts';
import { evaluateCoop, parseCoopExpression } from '../envs/coop.ts';
import {
  GENERIC_PLANS,
  type Plan,
  type Transcript,
  type TranscriptOptions,
  episodeTranscripts,
  episodeWith,
  planText,
  solve,
  swappedPlan,
  teamTurnWith,
  withDefaults,
} from './data.ts';

export const PRETRAIN_TASKS = ['coop-arith', 'coop-plan'] as const;
export type PretrainTask = (typeof PRETRAIN_TASKS)[number];

export interface MixOptions extends TranscriptOptions {
  /** The families the corpus mixes, drawn uniformly per episode. Default ['coop-arith'] (the built-in model's recipe). */
  tasks?: readonly PretrainTask[];
  /** coop-plan: share of trap problems. Default DEFAULT_TRAP. */
  trap?: number;
  /** coop-plan: share of traps whose plan reads left to right. Default 0.6. */
  trapPlanRate?: number;
  /** coop-plan: share of other problems with a wrong plan. Default 0.1. */
  planWrongRate?: number;
  /** coop-plan: solver slip rate after a usable plan. Default 0.3. */
  planSlipRate?: number;
  /** coop-plan levels (2..4). Default [2, 3]. */
  planDifficulty?: number | readonly number[];
}

type PlanDefaults = Required<Pick<MixOptions, 'tasks' | 'trap' | 'trapPlanRate' | 'planWrongRate' | 'planSlipRate' | 'planDifficulty'>>;

export function withMixDefaults(opts: MixOptions): PlanDefaults {
  const o: PlanDefaults = {
    tasks: opts.tasks ?? ['coop-arith'],
    trap: opts.trap ?? DEFAULT_TRAP,
    trapPlanRate: opts.trapPlanRate ?? 0.6,
    planWrongRate: opts.planWrongRate ?? 0.1,
    planSlipRate: opts.planSlipRate ?? 0.3,
    planDifficulty: opts.planDifficulty ?? [2, 3],
  };
  for (const k of ['trap', 'trapPlanRate', 'planWrongRate', 'planSlipRate'] as const) {
    if (typeof o[k] !== 'number' || !(o[k] >= 0 && o[k] <= 1))
      throw new Error(`pretrain data: ${k} must be a number in [0, 1], got ${JSON.stringify(o[k])}`);
  }
  if (o.tasks.length === 0 || o.tasks.some((t) => !PRETRAIN_TASKS.includes(t)))
    throw new Error(`pretrain data: tasks must be a non-empty list of ${PRETRAIN_TASKS.join(' / ')}, got ${JSON.stringify(o.tasks)}`);
  return o;
}

/** The planner's plan on a coop-plan problem (header, point 1). */
function planFor(p: CoopPlanProblem, o: PlanDefaults, rng: Rng): Plan {
  const correct = parseCoopExpression(p.expression);
  const good: Plan = { kind: 'good', text: planText(evaluateCoop(correct).lines), expr: correct };
  if (p.trap) {
    if (rng.next() >= o.trapPlanRate) return good;
    const l2r = parseCoopExpression(p.expression, true);
    return { kind: 'order', text: planText(evaluateCoop(l2r).lines), expr: l2r };
  }
  if (rng.next() >= o.planWrongRate) return good;
  if (rng.next() < 0.5) {
    const swapped = swappedPlan(correct, rng);
    if (swapped) return swapped;
  }
  return { kind: 'generic', text: GENERIC_PLANS[rng.int(GENERIC_PLANS.length)], expr: correct };
}

/** The transcripts of the coop-plan episode `seed` (train split only), as episodeTranscripts does for coop-arith. */
export function planEpisodeTranscripts(seed: number, options: MixOptions = {}): Transcript[] {
  const base = withDefaults(options);
  const o = withMixDefaults(options);
  const rng = Rng.fromSeed(`pretrain-plan:${seed}`);
  const p = coopPlanProblem(seed, { difficulty: o.planDifficulty, trap: o.trap, split: 'train' });
  const noPlan = Math.min(0.95, base.noPlanFactor * o.planSlipRate);
  return episodeWith(p, base, rng, (team) =>
    teamTurnWith(team, p, base.skipPlanRate, rng, {
      plan: () => planFor(p, o, rng),
      slipRate: (plan) => (plan.kind === 'generic' ? noPlan : o.planSlipRate),
      alone: () => {
        const misread = p.trap && rng.next() < base.soloMisreadRate;
        return { s: solve(parseCoopExpression(p.expression, misread), noPlan, rng), plan: misread ? 'order' : 'good' };
      },
    }),
  );
}

/** The family of episode `seed`: the only one named, else drawn from a stream of its own. */
export function taskOf(seed: number, tasks: readonly PretrainTask[]): PretrainTask {
  return tasks.length === 1 ? tasks[0] : tasks[Rng.fromSeed(`pretrain-task:${seed}`).int(tasks.length)];
}

/** The transcripts of episode `seed` of the mixed corpus. */
export function mixedEpisodeTranscripts(seed: number, options: MixOptions = {}): Transcript[] {
  const task = taskOf(seed, withMixDefaults(options).tasks);
  return task === 'coop-plan' ? planEpisodeTranscripts(seed, options) : episodeTranscripts(seed, options);
}

/** Transcripts of episodes seed0, seed0 + 1, ... of the mixed corpus until `count` are made. */
export function mixedTranscripts(count: number, seed0: number, options: MixOptions = {}): Transcript[] {
  const out: Transcript[] = [];
  for (let s = seed0; out.length < count; s++) for (const t of mixedEpisodeTranscripts(s, options)) if (out.length < count) out.push(t);
  return out;
}
