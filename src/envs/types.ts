// The environment contract between the rollout and a task: reset(seed) draws a task, step(actions) takes
// the texts the agents produced this turn (one entry per role, in acting order) and returns the team's
// reward, whether the episode is over, and the feedback the agents see on the next turn. Credit
// assignment (team reward -> per-agent rewards) is not the environment's job: it lives in src/marft/credit.

export interface Observation {
  /** The task statement every agent sees. */
  task: string;
  [key: string]: unknown;
}

export interface ResetResult {
  observation: Observation;
  /** Anything the environment wants logged (problem id, split, gold answer for the inspector...). */
  info: Record<string, unknown>;
}

/** What one agent answered this turn, as judged by the environment. */
export interface AgentAnswer {
  /** The extracted answer (e.g. the last \boxed{} content), or null when the agent gave none. */
  answer: string | null;
  correct: boolean;
  /** The environment's graded score of this answer where it has one (code: the share of tests passed). */
  score?: number;
}

export interface StepResult {
  /** The team reward of this turn (binary for math: 1 when the team's answer is right). */
  teamReward: number;
  /**
   * Per-role rewards when the environment has its own notion of them; math environments give every
   * role that acted the team reward. Credit assignment decides what is trained on.
   */
  rewards: Record<string, number>;
  done: boolean;
  /** Text shown to the agents on the next turn, e.g. "judge: the answer is incorrect". */
  feedback: string;
  /** Whether the team's answer this turn was right. */
  correct: boolean;
  /** Per answering role: what it answered and whether it was right. */
  answers: Record<string, AgentAnswer>;
  info: Record<string, unknown>;
}

export interface StepOptions {
  /**
   * The roles whose answers count (profiles with withAnswer). The team's answer is the last of these,
   * in acting order, that gave an answer. Default: every role in `actions`.
   */
  answerRoles?: readonly string[];
  /**
   * How several answering agents make the team reward (built-in math environments): 'last' (default) =
   * the team's answer above, 1 when right; 'fraction' = the share of answering roles whose answer is right
   * (no answer counts as wrong), as the legacy MARFT math_env.py; the turn is correct when any is right.
   */
  teamReward?: TeamRewardRule;
}

export const TEAM_REWARDS = ['last', 'fraction'] as const;
export type TeamRewardRule = (typeof TEAM_REWARDS)[number];

export interface Env {
  readonly name: string;
  /** Turns per episode at most (multi-turn: done when correct or at the horizon). */
  readonly horizon: number;
  reset(seed: number): ResetResult;
  /** `actions`: {role: text} in acting order (object insertion order). */
  step(actions: Record<string, string>, options?: StepOptions): StepResult;
}

/** Options every environment factory accepts; environments add their own. */
export interface EnvOptions {
  horizon?: number;
  [key: string]: unknown;
}

/** A factory may make an AsyncEnv (the code environment runs candidates in a sandbox). */
export type EnvFactory = (options: EnvOptions) => Env | AsyncEnv;

/**
 * What the rollout drives: an Env, or one whose reset/step answer later (a user's environment module runs
 * in a sandbox, and its calls may take time, e.g. a tool call). `close` frees what it holds once the
 * rollout is over (a module env's instance in its sandbox).
 */
export interface AsyncEnv {
  readonly name: string;
  readonly horizon: number;
  reset(seed: number): ResetResult | Promise<ResetResult>;
  step(actions: Record<string, string>, options?: StepOptions): StepResult | Promise<StepResult>;
  close?(): void;
}
