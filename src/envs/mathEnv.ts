// A multi-turn environment over problems with a checkable answer, shared by the built-in arithmetic
// tasks and the dataset environment: reset(seed) asks a `sample` function for {problem, answer}; each
// step scores the answering agents' \boxed{} answers against the label, the team reward is 1 when the
// team's answer (the last answering agent that gave one) is right, or with StepOptions.teamReward
// 'fraction' the share of answering agents that are right (legacy MARFT math_env.py), and the episode
// ends when it is (any one) right or after `horizon` turns (default 3, as in the original MARFT math
// environment). The feedback "judge: the answer is (in)correct" goes into the next turn's observation.

import { checkAnswer } from './answer.ts';
import { envFail } from './errors.ts';
import type { AgentAnswer, Env, ResetResult, StepOptions, StepResult } from './types.ts';

export interface Problem {
  problem: string;
  answer: string;
  id?: string | number;
}

export const DEFAULT_HORIZON = 3;

export function checkHorizon(envName: string, horizon: unknown): number {
  const h = horizon ?? DEFAULT_HORIZON;
  if (typeof h !== 'number' || !Number.isInteger(h) || h < 1) {
    envFail('ENV_OPTIONS', `${envName}: horizon must be an integer >= 1, got ${JSON.stringify(horizon)}`);
  }
  return h;
}

export function feedbackText(correct: boolean): string {
  return `judge: the answer is ${correct ? 'correct' : 'incorrect'}`;
}

export class MathEnv implements Env {
  readonly name: string;
  readonly horizon: number;
  private readonly sample: (seed: number) => Problem;
  private current: Problem | null = null;
  private turn = 0;
  private done = false;

  constructor(name: string, sample: (seed: number) => Problem, horizon?: number) {
    this.name = name;
    this.sample = sample;
    this.horizon = checkHorizon(name, horizon);
  }

  reset(seed: number): ResetResult {
    this.current = this.sample(seed);
    this.turn = 0;
    this.done = false;
    return {
      observation: { task: this.current.problem },
      info: { id: this.current.id, answer: this.current.answer, seed },
    };
  }

  step(actions: Record<string, string>, options: StepOptions = {}): StepResult {
    if (!this.current) envFail('ENV_STATE', `${this.name}: step() called before reset()`);
    if (this.done) envFail('ENV_STATE', `${this.name}: step() called after the episode ended (turn ${this.turn} of ${this.horizon})`);
    const roles = Object.keys(actions);
    if (roles.length === 0) envFail('ENV_ACTIONS', `${this.name}: step() got no actions`);
    for (const r of roles) {
      if (typeof actions[r] !== 'string')
        envFail('ENV_ACTIONS', `${this.name}: the action of "${r}" is ${typeof actions[r]}, not a string`);
    }
    const answering = roles.filter((r) => !options.answerRoles || options.answerRoles.includes(r));
    const answers: Record<string, AgentAnswer> = {};
    let team: AgentAnswer = { answer: null, correct: false };
    for (const r of answering) {
      answers[r] = checkAnswer(actions[r], this.current.answer);
      if (answers[r].answer !== null) team = answers[r];
    }
    this.turn++;
    const fraction = options.teamReward === 'fraction';
    const right = answering.filter((r) => answers[r].correct).length;
    const correct = fraction ? right > 0 : team.correct;
    this.done = correct || this.turn >= this.horizon;
    const teamReward = fraction ? right / answering.length : correct ? 1 : 0;
    const rewards: Record<string, number> = {};
    for (const r of roles) rewards[r] = teamReward;
    return {
      teamReward,
      rewards,
      done: this.done,
      feedback: feedbackText(correct),
      correct,
      answers,
      info: { turn: this.turn, answer: team.answer, gold: this.current.answer },
    };
  }
}
