// The public contract of an environment module (src/envs/types.ts made public), checked on the host side:
// every value a module returns crosses the sandbox as JSON and is checked here field by field before the
// rollout sees it, so a malformed result becomes an EnvError naming the module, the call and the field
// instead of a NaN reward three phases later. Optional fields get the defaults the built-in environments
// would give (per-role rewards = the team reward, correct = teamReward > 0).

import { EnvError, type EnvErrorCode } from '../errors.ts';
import type { AgentAnswer, ResetResult, StepResult } from '../types.ts';

/** Which module and which call a problem concerns, e.g. { module: 'guess.mjs', call: 'step (seed 7, turn 2)' }. */
export interface ModuleCall {
  module: string;
  call: string;
}

/** What the module's env reports once made: the fields the rollout reads before any reset. */
export interface ModuleEnvInfo {
  name: string;
  horizon: number;
}

/** An EnvError whose message names the module and the call. */
export function moduleError(code: EnvErrorCode, where: ModuleCall, problem: string): EnvError {
  return new EnvError(code, `environment module "${where.module}", ${where.call}: ${problem}`);
}

const show = (v: unknown): string => {
  const s = v === undefined ? 'nothing' : (JSON.stringify(v) ?? String(v));
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
};
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function malformed(where: ModuleCall, problem: string): never {
  throw moduleError('ENV_MODULE_RESULT', where, problem);
}

function onlyKeys(v: Record<string, unknown>, known: readonly string[], what: string, where: ModuleCall): void {
  for (const k of Object.keys(v))
    if (!known.includes(k)) malformed(where, `${what} has an unknown field "${k}" (known: ${known.join(', ')})`);
}

function finite(v: unknown, what: string, where: ModuleCall): number {
  if (typeof v !== 'number' || !Number.isFinite(v))
    malformed(where, `${what} must be a finite number, got ${show(v)}${v === null ? ' (NaN and Infinity arrive as null)' : ''}`);
  return v;
}

function plainInfo(v: unknown, what: string, where: ModuleCall): Record<string, unknown> {
  if (v === undefined) return {};
  if (!isObject(v)) malformed(where, `${what} must be an object, got ${show(v)}`);
  return v;
}

/** The env a factory made: a name and a horizon (positive integer). */
export function checkEnvInfo(v: unknown, where: ModuleCall): ModuleEnvInfo {
  if (!isObject(v)) malformed(where, `the factory must return an env object, got ${show(v)}`);
  if (typeof v.name !== 'string' || !v.name) malformed(where, `env.name must be a non-empty string, got ${show(v.name)}`);
  if (typeof v.horizon !== 'number' || !Number.isInteger(v.horizon) || v.horizon < 1)
    malformed(where, `env.horizon must be an integer >= 1, got ${show(v.horizon)}`);
  return { name: v.name, horizon: v.horizon };
}

/** reset(seed) → { observation: { task, ... }, info? }. */
export function checkReset(v: unknown, where: ModuleCall): ResetResult {
  if (!isObject(v)) malformed(where, `reset must return { observation: { task }, info }, got ${show(v)}`);
  onlyKeys(v, ['observation', 'info'], 'the reset result', where);
  if (!isObject(v.observation)) malformed(where, `observation must be an object { task: string }, got ${show(v.observation)}`);
  if (typeof v.observation.task !== 'string') malformed(where, `observation.task must be a string, got ${show(v.observation.task)}`);
  return { observation: { ...v.observation, task: v.observation.task }, info: plainInfo(v.info, 'info', where) };
}

/** step(actions, { answerRoles }) → { teamReward, done, feedback, rewards?, correct?, answers?, info? }. */
export function checkStep(v: unknown, where: ModuleCall, actingRoles: readonly string[]): StepResult {
  if (!isObject(v)) malformed(where, `step must return { teamReward, done, feedback }, got ${show(v)}`);
  onlyKeys(v, ['teamReward', 'done', 'feedback', 'rewards', 'correct', 'answers', 'info'], 'the step result', where);
  const teamReward = finite(v.teamReward, 'teamReward', where);
  if (typeof v.done !== 'boolean') malformed(where, `done must be true or false, got ${show(v.done)}`);
  if (typeof v.feedback !== 'string') malformed(where, `feedback must be a string (empty for none), got ${show(v.feedback)}`);
  let rewards: Record<string, number> = Object.fromEntries(actingRoles.map((r) => [r, teamReward]));
  if (v.rewards !== undefined) {
    if (!isObject(v.rewards)) malformed(where, `rewards must be an object {role: number}, got ${show(v.rewards)}`);
    rewards = {};
    for (const [role, r] of Object.entries(v.rewards)) rewards[role] = finite(r, `rewards.${role}`, where);
  }
  if (v.correct !== undefined && typeof v.correct !== 'boolean') malformed(where, `correct must be true or false, got ${show(v.correct)}`);
  const answers: Record<string, AgentAnswer> = {};
  if (v.answers !== undefined) {
    if (!isObject(v.answers)) malformed(where, `answers must be an object {role: {answer, correct}}, got ${show(v.answers)}`);
    for (const [role, a] of Object.entries(v.answers)) {
      if (!isObject(a) || !(typeof a.answer === 'string' || a.answer === null) || typeof a.correct !== 'boolean') {
        malformed(where, `answers.${role} must be { answer: string | null, correct: boolean }, got ${show(a)}`);
      }
      answers[role] = { answer: a.answer, correct: a.correct };
    }
  }
  return {
    teamReward,
    done: v.done,
    feedback: v.feedback,
    rewards,
    correct: v.correct ?? teamReward > 0,
    answers,
    info: plainInfo(v.info, 'info', where),
  };
}
