// The environments a run can name: the built-in ones (arithmetic, dataset, coop-arith, coop-plan, code), a fixed table,
// and a session's own registry (Envs) that starts with them. A front end makes one Envs per session, on its
// platform's sandbox (src/platform/sandbox/): it holds what the session registers, the sandboxes of users'
// environment modules (ModulePool) and the runner of code candidates (CodeRunner), so two sessions, or two
// tests, share none of them. A user adds an environment in one line where the front end makes its Envs:
//
//   envs.register('countdown', (options) => new CountdownEnv(options), { description: 'reach a target number' });
//
// and the run config names it: { "env": { "name": "countdown", "options": { ... } } }.

import type { SandboxSpawner } from '../common/sandbox.ts';
import { createArithmeticEnv } from './arithmetic.ts';
import { CodeRunner } from './code-run.ts';
import { createCodeEnv, type CodeEnvOptions } from './code.ts';
import { createCoopEnv, type CoopOptions } from './coop.ts';
import { createCoopPlanEnv, type CoopPlanOptions } from './coop-plan.ts';
import { createDatasetEnv, type DatasetEnvOptions } from './dataset.ts';
import { envFail } from './errors.ts';
import { ModulePool } from './module/module-env.ts';
import { moduleLabel } from './module/source.ts';
import type { AsyncEnv, Env, EnvFactory, EnvOptions, TeamRewardRule } from './types.ts';

export interface EnvEntry {
  name: string;
  /** Makes the env; a built-in one may use the session's sandbox (`envs`), a user's factory ignores it. */
  factory: (options: EnvOptions, envs: Envs) => Env | AsyncEnv;
  description: string;
  builtin: boolean;
}

/** The built-in environments: a fixed table, never changed (a session registers its own in its Envs). */
const BUILTIN_ENVS: ReadonlyMap<string, Readonly<EnvEntry>> = new Map(
  (
    [
      ['arithmetic', (o) => createArithmeticEnv(o), 'Seeded arithmetic problems with integer answers (options: difficulty 1..4, horizon).'],
      [
        'dataset',
        (o) => createDatasetEnv(o as DatasetEnvOptions),
        'Your JSON/JSONL of {problem, answer} (options: data, split, testFraction, splitSeed, horizon).',
      ],
      [
        'code',
        (o, envs) => createCodeEnv(envs.code, o as CodeEnvOptions),
        'JavaScript functions to write, run on unit tests in a sandbox; reward = share of tests passed (options: data (JSONL tasks, default built-in), split, reward pass_rate|all_pass, timeLimitMs, memoryMb, horizon).',
      ],
      [
        'coop-arith',
        (o) => createCoopEnv(o as CoopOptions),
        'Multi-step arithmetic for a planner -> solver team, expressions and word problems (options: difficulty 1..4 or a list, split train|test, wordFraction, precedence, horizon).',
      ],
      [
        'coop-plan',
        (o) => createCoopPlanEnv(o as CoopPlanOptions),
        "coop-arith's expressions for a planner -> solver team, whose plan the environment checks against the right order of operations (the planner's score); half are traps where reading left to right is wrong (options: difficulty 2..4 or a list, split train|test, trap, planRole, horizon).",
      ],
    ] as Array<[string, EnvEntry['factory'], string]>
  ).map(([name, factory, description]) => [name, Object.freeze({ name, factory, description, builtin: true })]),
);

type EnvListing = Array<Pick<EnvEntry, 'name' | 'description' | 'builtin'>>;

const listing = (entries: Iterable<EnvEntry>): EnvListing =>
  [...entries].map(({ name, description, builtin }) => ({ name, description, builtin }));

/** The built-in environments (the run config's validation and the lab's picker). */
export const listEnvs = (): EnvListing => listing(BUILTIN_ENVS.values());

/**
 * Creates the built-in environment `name` with `options`, in an Envs of its own with no sandbox: for
 * checking options and for tests of the task generators (a code env made here cannot run code).
 */
export const createEnv = (name: string, options: EnvOptions = {}): Env | AsyncEnv => new Envs(null).create(name, options);

/**
 * One session's environments: the built-ins and what it registers, on its platform's sandbox (`spawner`,
 * null where there is none), with the pool of users' module sandboxes and the code candidates' runner.
 */
export class Envs {
  private readonly entries = new Map<string, EnvEntry>(BUILTIN_ENVS);
  /** The sandboxes of users' environment modules (src/envs/module/). */
  readonly modules: ModulePool;
  /** Runs the code env's candidates. */
  readonly code: CodeRunner;

  constructor(spawner: SandboxSpawner | null) {
    this.modules = new ModulePool(spawner);
    this.code = new CodeRunner(spawner);
  }

  /** Registers an environment factory under `name`. Throws ENV_EXISTS for a taken name unless `replace`. */
  register(name: string, factory: EnvFactory, options: { description?: string; replace?: boolean } = {}): void {
    if (typeof name !== 'string' || !/^[A-Za-z][\w.-]*$/.test(name)) {
      envFail(
        'ENV_OPTIONS',
        `envs.register: the name must start with a letter and use letters, digits, _ . -; got ${JSON.stringify(name)}`,
      );
    }
    if (typeof factory !== 'function') envFail('ENV_OPTIONS', `envs.register("${name}"): the factory must be a function (options) => Env`);
    if (this.entries.has(name) && !options.replace)
      envFail('ENV_EXISTS', `envs.register: an environment named "${name}" is already registered`);
    this.entries.set(name, { name, factory: (o) => factory(o), description: options.description ?? '', builtin: false });
  }

  /** Removes a registered environment (built-ins stay); returns whether one was removed. */
  unregister(name: string): boolean {
    const e = this.entries.get(name);
    if (!e || e.builtin) return false;
    return this.entries.delete(name);
  }

  /** Creates the environment registered as `name` with `options`. */
  create(name: string, options: EnvOptions = {}): Env | AsyncEnv {
    const entry = this.entries.get(name);
    if (!entry) envFail('ENV_UNKNOWN', `no environment named "${name}"; registered: ${[...this.entries.keys()].join(', ')}`);
    return entry.factory(options, this);
  }

  list(): EnvListing {
    return listing(this.entries.values());
  }

  /**
   * The env the run config names, with `extra` options over env.options (horizon, split): a registered one,
   * or the user's module in its sandbox (src/envs/module/, asynchronous reset/step).
   */
  fromConfig(env: EnvConfig, extra: EnvOptions = {}): Env | AsyncEnv {
    const options = { ...env.options, ...extra };
    if (!isModuleEnv(env)) return this.create(env.name, options);
    if (typeof env.moduleSource !== 'string') {
      envFail(
        'ENV_OPTIONS',
        `env.module "${env.module}": the module's source was not loaded (the CLI reads the file when a run starts; the lab keeps the source in env.moduleSource)`,
      );
    }
    return this.modules.env({ source: env.moduleSource, name: moduleLabel(env.module, env.name) }, options);
  }

  /** Closes the module sandboxes now (the CLI at exit, tests between cases). */
  close(): void {
    this.modules.close();
  }
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
