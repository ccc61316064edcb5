// Checking an environment module without a model or a GPU: for each seed, reset and a few steps with
// sample answers (each turn's text for every acting role), timed, then the same again in a fresh env
// instance, which the pool's determinism check compares call by call (module-env.ts). `marft env test`
// prints the report; the lab's "try it" panel shows it for the seeds and the answer the user typed.

import { EnvError } from '../errors.ts';
import type { EnvOptions, StepResult } from '../types.ts';
import type { ModulePool, ModuleSpec } from './module-env.ts';

/** Answers tried when none are given: a boxed number, text with no answer, another boxed number. */
export const SAMPLE_TEXTS = ['The answer is \\boxed{0}.', 'I am not sure yet.', '\\boxed{42}'];

export interface CheckOptions {
  seeds: number[];
  /** Acting roles, in order; each step gets {role: text} for all of them. */
  roles: string[];
  /** The text of turn t is texts[t % texts.length]. */
  texts: string[];
  options: EnvOptions;
  /** Turns per seed at most (default: the env's horizon, capped at 8). */
  maxTurns?: number;
}

export interface SeedReport {
  seed: number;
  task: string;
  info: Record<string, unknown>;
  steps: Array<{ actions: Record<string, string>; result: StepResult }>;
  /** The replay in a fresh instance gave the same results. */
  deterministic: boolean;
  resetMs: number;
  stepMs: number[];
}

export interface ModuleReport {
  module: string;
  /** The env's own name and horizon (empty / 0 when it could not be made). */
  name: string;
  horizon: number;
  seeds: SeedReport[];
  /** The first problem, as catalogue data; null when every check passed. */
  error: { code: string; message: string; hint: string } | null;
}

async function episode(pool: ModulePool, spec: ModuleSpec, seed: number, o: CheckOptions, report: ModuleReport): Promise<SeedReport> {
  const env = pool.env(spec, o.options);
  try {
    let t = performance.now();
    const r = await env.reset(seed);
    const out: SeedReport = {
      seed,
      task: r.observation.task,
      info: r.info,
      steps: [],
      deterministic: false,
      resetMs: performance.now() - t,
      stepMs: [],
    };
    report.name = env.name;
    report.horizon = env.horizon;
    const turns = Math.min(env.horizon, o.maxTurns ?? 8);
    for (let turn = 0; turn < turns; turn++) {
      const text = o.texts[turn % o.texts.length] ?? '';
      const actions = Object.fromEntries(o.roles.map((role) => [role, text]));
      t = performance.now();
      const result = await env.step(actions, { answerRoles: o.roles });
      out.stepMs.push(performance.now() - t);
      out.steps.push({ actions, result });
      if (result.done) break;
    }
    return out;
  } finally {
    env.close();
  }
}

/** Runs the checks; module problems end up in report.error (anything else throws). */
export async function checkModule(pool: ModulePool, spec: ModuleSpec, o: CheckOptions): Promise<ModuleReport> {
  const report: ModuleReport = { module: spec.name, name: '', horizon: 0, seeds: [], error: null };
  try {
    for (const seed of o.seeds) {
      const first = await episode(pool, spec, seed, o, report);
      report.seeds.push(first);
      await episode(pool, spec, seed, o, report); // the pool compares every answer with the first run's
      first.deterministic = true;
    }
  } catch (e) {
    if (!(e instanceof EnvError)) throw e;
    report.error = { code: e.code, message: e.message.split('\n  hint:')[0], hint: e.hint };
  }
  return report;
}
