// The environment registry: a name -> factory map, pre-filled with the built-in environments
// (arithmetic, dataset, coop-arith, code). A user adds an environment in one file:
//
//   import { registerEnv } from '../envs/registry.ts';
//   registerEnv('countdown', (options) => new CountdownEnv(options), { description: 'reach a target number' });
//
// and the run config names it: { "env": { "name": "countdown", "options": { ... } } }.

import { createArithmeticEnv } from './arithmetic.ts';
import { createCodeEnv, type CodeEnvOptions } from './code.ts';
import { createCoopEnv, type CoopOptions } from './coop.ts';
import { createDatasetEnv, type DatasetEnvOptions } from './dataset.ts';
import { envFail } from './errors.ts';
import { moduleEnv } from './module/module-env.ts';
import { moduleLabel } from './module/source.ts';
import type { AsyncEnv, Env, EnvFactory, EnvOptions, TeamRewardRule } from './types.ts';

export interface EnvEntry {
  name: string;
  factory: EnvFactory;
  description: string;
  builtin: boolean;
}

const registry = new Map<string, EnvEntry>();

function add(name: string, factory: EnvFactory, description: string, builtin: boolean): void {
  registry.set(name, { name, factory, description, builtin });
}

add('arithmetic', (o) => createArithmeticEnv(o), 'Seeded arithmetic problems with integer answers (options: difficulty 1..4, horizon).', true);
add('dataset', (o) => createDatasetEnv(o as DatasetEnvOptions), 'Your JSON/JSONL of {problem, answer} (options: data, split, testFraction, splitSeed, horizon).', true);
add('code', (o) => createCodeEnv(o as CodeEnvOptions), 'JavaScript functions to write, run on unit tests in a sandbox; reward = share of tests passed (options: data (JSONL tasks, default built-in), split, reward pass_rate|all_pass, timeLimitMs, memoryMb, horizon).', true);
add('coop-arith', (o) => createCoopEnv(o as CoopOptions), 'Multi-step arithmetic for a planner -> solver team, expressions and word problems (options: difficulty 1..4 or a list, split train|test, wordFraction, precedence, horizon).', true);

/** Registers an environment factory under `name`. Throws ENV_EXISTS for a taken name unless `replace`. */
export function registerEnv(name: string, factory: EnvFactory, options: { description?: string; replace?: boolean } = {}): void {
  if (typeof name !== 'string' || !/^[A-Za-z][\w.-]*$/.test(name)) {
    envFail('ENV_OPTIONS', `registerEnv: the name must start with a letter and use letters, digits, _ . -; got ${JSON.stringify(name)}`);
  }
  if (typeof factory !== 'function') envFail('ENV_OPTIONS', `registerEnv("${name}"): the factory must be a function (options) => Env`);
  if (registry.has(name) && !options.replace) envFail('ENV_EXISTS', `registerEnv: an environment named "${name}" is already registered`);
  add(name, factory, options.description ?? '', false);
}

/** Removes a user-registered environment (built-ins stay); returns whether one was removed. */
export function unregisterEnv(name: string): boolean {
  const e = registry.get(name);
  if (!e || e.builtin) return false;
  return registry.delete(name);
}

/** Creates the environment registered as `name` with `options`. */
export function createEnv(name: string, options: EnvOptions = {}): Env | AsyncEnv {
  const entry = registry.get(name);
  if (!entry) envFail('ENV_UNKNOWN', `no environment named "${name}"; registered: ${[...registry.keys()].join(', ')}`);
  return entry.factory(options);
}

export function listEnvs(): Array<Pick<EnvEntry, 'name' | 'description' | 'builtin'>> {
  return [...registry.values()].map(({ name, description, builtin }) => ({ name, description, builtin }));
}

/** The run config's env: a registered name with options, or a user's module (its path and its source). */
export interface EnvConfig {
  name: string;
  options: Record<string, unknown>;
  /** A module file (CLI configs; resolved to moduleSource when the run starts). */
  module?: string;
  /** The module's source text, kept with the run config so a checkpoint resumes with the same environment. */
  moduleSource?: string;
  /** How several answering agents make the team reward (StepOptions.teamReward); the run config fills 'last'. */
  teamReward?: TeamRewardRule;
}

export const isModuleEnv = (env: EnvConfig): boolean => typeof env.moduleSource === 'string' || typeof env.module === 'string';

/**
 * The env the run config names, with `extra` options over env.options (horizon, split): a built-in one,
 * or the user's module in its sandbox (src/envs/module/, asynchronous reset/step).
 */
export function envFromConfig(env: EnvConfig, extra: EnvOptions = {}): Env | AsyncEnv {
  const options = { ...env.options, ...extra };
  if (!isModuleEnv(env)) return createEnv(env.name, options);
  if (typeof env.moduleSource !== 'string') {
    envFail('ENV_OPTIONS', `env.module "${env.module}": the module's source was not loaded (the CLI reads the file when a run starts; the lab keeps the source in env.moduleSource)`);
  }
  return moduleEnv({ source: env.moduleSource, name: moduleLabel(env.module, env.name) }, options);
}
