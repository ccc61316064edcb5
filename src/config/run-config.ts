// The run config: one JSON object that drives the UI, the CLI and checkpoints — the agent graph, the
// environment, the algorithm (level, PPO/GRPO, credit, LoRA, critic, schedule) and its hyperparameters.
// Defaults follow MARFT_REFERENCE (the original codebase for action level: LoRA r 8 / alpha 16 on q,v;
// critic MLP 1024-512; clip 0.2, value clip 0.2, Huber 10, entropy 0.01, no KL penalty, target KL per
// level (targetKlOf: the legacy APPO's 1e-3 per action, the legacy TPPO's 1.7e-6 per token), grad clip
// 0.5, gamma 0.99, lambda 0.95, AdamW eps 1e-5, lr 1e-6 and critic lr 5e-4 — the top of the reference's
// ranges; horizon 3). Epochs and minibatches are the lab's own choice (1 and 1): the reference notes do not
// fix them. For the AReaL-style token-level setup set gamma = lambda = 1, klCoef 0.1 with klIn "reward",
// and lora r 32 / alpha 16 on all linear layers.
// The fields' defaults, ranges and descriptions are its schema (run-config-schema.ts, with the names fields
// take). validateConfig() fills defaults and reports every problem with its field path; parseRunConfig() throws
// a ConfigError listing them; configJsonSchema() exports JSON Schema.
// runLoop is the run loop's policy (src/marft/run-loop.ts), the same in the lab and the CLI: how often a
// checkpoint is written (every 10 iterations or 60 s, and always at pause, stop and the end), checkpoints
// kept per run folder (20 by default: the lab's Runs tab offers each one for resume and export, and a run
// resumed from before this section existed keeps the checkpoints the lab kept; `marft train --keep K`
// overrides it), non-finite iterations in a row before a rollback, device losses in a row recovered.

import { EnvError } from '../envs/errors.ts';
import { messageWithoutHint } from '../common/errors.ts';
import { type EnvConfig, type Envs, createEnv, isModuleEnv, listEnvs } from '../envs/registry.ts';
import { prepareModule } from '../envs/module/source.ts';
import { ConfigError } from './errors.ts';
import { graphIssues, type AgentGraph } from './graph.ts';
import { toJsonSchema, validate, type SchemaIssue } from './schema.ts';
import {
  CODE_STEP_REWARDS,
  CONFIG_SCHEMA,
  GROUP_NORMS,
  type LoraTarget,
  MATH_STEP_REWARDS,
  PLAN_STEP_REWARDS,
  REWARD_NORMS,
  type StepRewardName,
} from './run-config-schema.ts';
import { parseJson } from '../common/json.ts';

/** config.model.path '' (or this name) means the built-in tiny model, public/models/<BUILTIN_MODEL>/. */
export const BUILTIN_MODEL = 'marft-tiny';

/**
 * The folder of public/models/ a config.model.path names: '' = BUILTIN_MODEL, 'builtin:<name>' = another model
 * the project ships (marft-tiny-plan, pretrained with the coop-plan tasks too); null for any other path.
 */
export function builtinModelName(path: string): string | null {
  if (path === '') return BUILTIN_MODEL;
  const m = /^builtin:([A-Za-z0-9][\w.-]*)$/.exec(path);
  return m && !m[1].includes('..') ? m[1] : null;
}

export interface RunConfig {
  seed: number;
  /** Total training iterations (rollout + update). */
  iterations: number;
  model: { path: string };
  graph: AgentGraph;
  /** A registered environment by name, or a user's module (env.module, env.moduleSource: see envModuleIssues). */
  env: EnvConfig;
  level: 'action' | 'token';
  algo: 'ppo' | 'grpo';
  credit: {
    method: 'equal' | 'step_discount' | 'per_step';
    discount: number;
    rewardSharing: boolean;
    /** per_step: role -> helper name (planner, solver, verifier, team). */
    perStep: Record<string, string>;
    /** per_step: helper for roles not in perStep; null = every role must be listed. */
    fallback: string | null;
  };
  lora: { r: number; alpha: number; targets: LoraTarget[]; mode: 'shared' | 'per_agent'; dropout: number };
  /** lora: per-agent critic LoRA (lora.r/alpha/targets) on a trainable trunk, a head per agent. input: what the critic reads. */
  critic: { mode: 'shared' | 'per_agent' | 'lora'; input: 'own' | 'episode'; hidden: number[] };
  schedule: { mode: 'all' | 'agent_by_agent'; interval: number; criticWarmup: number };
  ppo: {
    clip: number;
    valueClip: number;
    entropyCoef: number;
    klCoef: number;
    klEstimator: 'k1' | 'k3';
    /** Where the KL to the reference goes: the loss (c_KL * KL term) or the rewards before GAE (AReaL). */
    klIn: 'loss' | 'reward';
    /** Absent: the level's default (targetKlOf); null: never skip. */
    targetKl?: number | null;
    epochs: number;
    minibatches: number;
    gamma: number;
    lambda: number;
    maxGradNorm: number;
    lr: number;
    criticLr: number;
    adamEps: number;
    weightDecay: number;
    advantageNorm: boolean;
    valueLoss: 'huber' | 'mse';
    huberDelta: number;
    logProbNorm: 'sum' | 'token' | 'word';
    groupStd: 'sample' | 'population' | 'none';
    /** GRPO: which values share a normalisation (GROUP_NORMS). */
    groupNorm: (typeof GROUP_NORMS)[number];
    /** Team-reward shaping before credit, as AReaL's actor: clip((R + bias) * scaling, ±clip), then normalised over the batch or the group (null = not). */
    rewardScaling: number;
    rewardBias: number;
    rewardClip: number;
    rewardNorm: (typeof REWARD_NORMS)[number] | null;
  };
  rollout: { episodes: number; groupSize: number; horizon: number };
  runLoop: { keepCheckpoints: number; checkpointEvery: number; checkpointSeconds: number; rollbackAfter: number; maxRecoveries: number };
}

/** The legacy MARFT thresholds: appo_trainer.py 1e-3 (per action), tppo_trainer.py 1.7e-6 (a per-token mean). */
export const DEFAULT_TARGET_KL = { action: 1e-3, token: 1.7e-6 } as const;

/**
 * Whether the policy loss is per action (MARFT-A: an action's ratio from the sum of its tokens' log-probs,
 * appo_trainer.py) or per token (MARFT-T, tppo_trainer.py; AReaL's GRPO). GRPO follows the level too: its
 * group-normalised advantage is constant over an action's tokens, so either loss can take it.
 */
export const actionLevelLoss = (config: Pick<RunConfig, 'level'>): boolean => config.level === 'action';

/** The level's approx-KL threshold: per action at action level, a per-token mean at token level. */
export function defaultTargetKl(config: Pick<RunConfig, 'level'>): number {
  return DEFAULT_TARGET_KL[actionLevelLoss(config) ? 'action' : 'token'];
}

/** The approx-KL threshold the update uses: ppo.targetKl, or the level's default when absent (null = never). */
export function targetKlOf(config: Pick<RunConfig, 'level' | 'ppo'>): number | null {
  return config.ppo.targetKl !== undefined ? config.ppo.targetKl : defaultTargetKl(config);
}

export interface ConfigIssue extends SchemaIssue {}

export interface ValidateOptions {
  /** Check that env.name is registered (default true). */
  checkEnv?: boolean;
  /** The session's environments env.name may name (default: the built-in ones). */
  envs?: Envs;
}

/** Fills defaults and collects every problem. `config` is null when there are issues. */
export function validateConfig(input: unknown, options: ValidateOptions = {}): { config: RunConfig | null; issues: ConfigIssue[] } {
  const issues: ConfigIssue[] = [];
  const filled = validate(CONFIG_SCHEMA, input, '', issues) as RunConfig;
  if (issues.length === 0) {
    // Cross-field checks, only on a well-typed config.
    for (const g of graphIssues(filled.graph)) {
      issues.push({ path: `graph.${g.path}`, message: g.message.startsWith(g.path) ? `graph.${g.message}` : `graph: ${g.message}` });
    }
    const roles = new Set(filled.graph.agents.map((a) => a.role));
    if (filled.algo === 'grpo' && filled.rollout.groupSize < 2) {
      issues.push({
        path: 'rollout.groupSize',
        message: `rollout.groupSize must be >= 2 with algo "grpo" (advantages are normalised within a group), got ${filled.rollout.groupSize}`,
      });
    }
    if (filled.schedule.mode === 'agent_by_agent' && filled.lora.mode === 'shared' && filled.graph.agents.length > 1) {
      issues.push({
        path: 'schedule.mode',
        message:
          'schedule.mode "agent_by_agent" needs lora.mode "per_agent": with one shared adapter the "frozen" agents would train with the one that trains (set lora.mode to "per_agent", or schedule.mode to "all")',
      });
    }
    for (const role of Object.keys(filled.credit.perStep)) {
      if (!roles.has(role))
        issues.push({
          path: `credit.perStep.${role}`,
          message: `credit.perStep.${role} names no role of the graph (${[...roles].join(', ')})`,
        });
    }
    if (filled.credit.method === 'per_step' && !filled.credit.rewardSharing && filled.credit.fallback === null) {
      const missing = [...roles].filter((r) => !(r in filled.credit.perStep));
      if (missing.length)
        issues.push({
          path: 'credit.perStep',
          message: `credit.perStep has no reward for ${missing.join(', ')} and credit.fallback is null`,
        });
    }
    issues.push(...stepRewardEnvIssues(filled));
    issues.push(...silentCombinations(filled));
    const moduleEnv = isModuleEnv(filled.env);
    if (moduleEnv) issues.push(...envModuleIssues(filled.env, input));
    const known = options.envs?.list() ?? listEnvs();
    const entry = known.find((e) => e.name === filled.env.name);
    if ((options.checkEnv ?? true) && !entry && !moduleEnv) {
      issues.push({
        path: 'env.name',
        message: `env.name "${filled.env.name}" is not a registered environment (${known.map((e) => e.name).join(', ')})`,
      });
    }
    // The built-in task generators check their options when made (cheap); a dataset's records are checked on upload.
    if ((options.checkEnv ?? true) && entry?.builtin && entry.name !== 'dataset') {
      try {
        createEnv(entry.name, filled.env.options);
      } catch (e) {
        if (!(e instanceof EnvError)) throw e;
        issues.push({ path: 'env.options', message: `env.options: ${e.message}` });
      }
    }
  }
  return { config: issues.length ? null : filled, issues };
}

/** per_step helpers that read another environment's results: math helpers in the code environment, code helpers elsewhere. */
function stepRewardEnvIssues(c: RunConfig): ConfigIssue[] {
  const credit = c.credit;
  if (credit.method !== 'per_step' || credit.rewardSharing) return [];
  const code = c.env.name === 'code' && !isModuleEnv(c.env);
  const wrong = code ? MATH_STEP_REWARDS : CODE_STEP_REWARDS;
  const out: ConfigIssue[] = [];
  const check = (path: string, name: string | null, who: string) => {
    if (name === null || !wrong.includes(name as StepRewardName)) return;
    out.push(
      code
        ? {
            path,
            message: `${path} "${name}" is a math helper (it reads a \\boxed{} answer or the math checker) and ${who} acts in the code environment; use a code helper: coder (its code's pass rate on the tests), tester or reviewer (judged by a rule), or planner / team`,
          }
        : {
            path,
            message: `${path} "${name}" is a code helper (it reads the code environment's test runs) and env.name is "${c.env.name}"; use planner, solver, verifier or team, or env.name "code"`,
          },
    );
  };
  for (const [role, name] of Object.entries(credit.perStep)) check(`credit.perStep.${role}`, name, `role "${role}"`);
  if (c.graph.agents.some((a) => !(a.role in credit.perStep))) check('credit.fallback', credit.fallback, 'the roles it covers');
  out.push(...planCheckIssues(c));
  // the coder's pass rate is its own code's: the environment runs the code of answering roles only
  for (const a of c.graph.agents) {
    if (code && (credit.perStep[a.role] ?? credit.fallback) === 'coder' && !a.withAnswer) {
      out.push({
        path: `credit.perStep.${a.role}`,
        message: `credit.perStep.${a.role} "coder" scores the role's own code, but "${a.role}" has withAnswer false, so the environment never runs it; give it withAnswer or another helper (tester, reviewer, planner, team)`,
      });
    }
  }
  return out;
}

/** plan-check reads coop-plan's verdict on the plan role's action: any other env or role would get 0 every time. */
function planCheckIssues(c: RunConfig): ConfigIssue[] {
  const credit = c.credit;
  const planEnv = c.env.name === 'coop-plan' && !isModuleEnv(c.env);
  const planRole = typeof c.env.options.planRole === 'string' ? c.env.options.planRole : 'planner';
  const out: ConfigIssue[] = [];
  for (const a of c.graph.agents) {
    const fromFallback = !(a.role in credit.perStep);
    const name = fromFallback ? credit.fallback : credit.perStep[a.role];
    if (name === null || !PLAN_STEP_REWARDS.includes(name as StepRewardName)) continue;
    const path = fromFallback ? 'credit.fallback' : `credit.perStep.${a.role}`;
    if (!planEnv) {
      out.push({
        path,
        message: `${path} "${name}" reads the coop-plan environment's rule check of the role's plan, and env.name is "${c.env.name}", which checks no plan; use planner (a structured plan and the outcome) or team, or env.name "coop-plan"`,
      });
      break;
    }
    if (a.role !== planRole)
      out.push({
        path,
        message: `${path} "${name}" scores role "${a.role}"'s plan, but coop-plan checks the plan of role "${planRole}" (env.options.planRole) only; give "${a.role}" another helper (solver, team) or set env.options.planRole`,
      });
  }
  return out;
}

/** Settings that would train nothing or change nothing, each refused with what to change instead. */
function silentCombinations(c: RunConfig): ConfigIssue[] {
  const out: ConfigIssue[] = [];
  const { ppo, credit, schedule } = c;
  if (c.algo === 'grpo' && schedule.criticWarmup > 0) {
    out.push({
      path: 'schedule.criticWarmup',
      message: `schedule.criticWarmup is ${schedule.criticWarmup} with algo "grpo", which has no critic: those iterations would train nothing; set it to 0`,
    });
  } else if (schedule.criticWarmup >= c.iterations) {
    out.push({
      path: 'schedule.criticWarmup',
      message: `schedule.criticWarmup (${schedule.criticWarmup}) is not below iterations (${c.iterations}): the policy would never train; lower it or raise iterations`,
    });
  }
  if (credit.method === 'per_step' && !credit.rewardSharing) {
    const helpers = c.graph.agents.map((a) => credit.perStep[a.role] ?? credit.fallback);
    if (helpers.every((h) => h === 'team')) {
      out.push({
        path: 'credit.perStep',
        message:
          'credit.method "per_step" has no step-reward function here: every role gets the team reward ("team"), the same numbers as step_discount with discount 1; ' +
          'set credit.perStep (role -> planner, solver or verifier) or use method step_discount',
      });
    }
  }
  if (c.algo === 'grpo' && (c.critic.mode !== 'shared' || c.critic.input !== 'own')) {
    const which = c.critic.mode !== 'shared' ? `critic.mode "${c.critic.mode}"` : `critic.input "${c.critic.input}"`;
    out.push({
      path: c.critic.mode !== 'shared' ? 'critic.mode' : 'critic.input',
      message: `${which} with algo "grpo", which has no critic: it would train nothing; use algo "ppo" or the defaults (critic.mode "shared", critic.input "own")`,
    });
  }
  if (ppo.rewardNorm === 'group' && c.rollout.groupSize < 2) {
    out.push({
      path: 'ppo.rewardNorm',
      message: `ppo.rewardNorm "group" normalises over a task's samples, but rollout.groupSize is ${c.rollout.groupSize}: every reward would become 0; set rollout.groupSize >= 2 or rewardNorm "batch" or null`,
    });
  }
  if (ppo.rewardNorm === 'batch' && c.rollout.episodes * c.rollout.groupSize < 2 && c.rollout.horizon === 1) {
    out.push({
      path: 'ppo.rewardNorm',
      message:
        'ppo.rewardNorm "batch" normalises over the iteration\'s rewards, but an iteration has one episode of one turn: every reward would become 0; raise rollout.episodes or set rewardNorm null',
    });
  }
  if (ppo.klIn === 'reward' && ppo.klCoef === 0) {
    out.push({
      path: 'ppo.klCoef',
      message:
        'ppo.klIn is "reward" but ppo.klCoef is 0: no KL penalty would reach the rewards; set klCoef > 0 (AReaL uses 0.1) or klIn "loss"',
    });
  }
  if (ppo.klIn === 'reward' && c.algo === 'grpo') {
    out.push({
      path: 'ppo.klIn',
      message: 'ppo.klIn "reward" is for PPO (GAE over the KL-shaped rewards); GRPO takes the KL penalty in the loss: set klIn "loss"',
    });
  }
  if (c.env.teamReward === 'fraction') {
    const answering = c.graph.agents.filter((a) => a.withAnswer).length;
    if (isModuleEnv(c.env)) {
      out.push({
        path: 'env.teamReward',
        message:
          'env.teamReward "fraction" is for the built-in math environments; an environment module computes its own team reward: set env.teamReward "last"',
      });
    } else if (answering < 2) {
      out.push({
        path: 'env.teamReward',
        message: `env.teamReward "fraction" needs several answering agents, the graph has ${answering}: with one it equals "last"; set "last" or give more agents withAnswer`,
      });
    }
  }
  return out;
}

/**
 * A module env: its name defaults to "module" (not a registered name), its source must be there (the CLI
 * reads env.module into env.moduleSource before validating) and must pass the module's static checks.
 */
function envModuleIssues(env: EnvConfig, input: unknown): ConfigIssue[] {
  const given = (input as { env?: { name?: unknown } } | null)?.env?.name;
  if (given === undefined) env.name = 'module';
  if (typeof env.moduleSource !== 'string') {
    return [
      {
        path: 'env.module',
        message: `env.module "${env.module}": the module's source is not loaded (marft reads the file when a run starts; in the lab, load or write it in the Build tab)`,
      },
    ];
  }
  try {
    prepareModule(env.moduleSource, env.module ?? env.name);
  } catch (e) {
    if (!(e instanceof EnvError)) throw e;
    return [{ path: 'env.moduleSource', message: messageWithoutHint(e.message) }];
  }
  return [];
}

/** Parses and validates a config (JSON text or object); throws a ConfigError listing every problem. */
export function parseRunConfig(input: unknown, options: ValidateOptions = {}): RunConfig {
  let obj: unknown = input;
  if (typeof input === 'string') {
    try {
      obj = parseJson(input);
    } catch (e) {
      throw new ConfigError('CONFIG_JSON', `the run config is not valid JSON (${(e as Error).message})`);
    }
  }
  const { config, issues } = validateConfig(obj, options);
  if (!config) {
    const list = issues.map((i) => i.message).join('\n  ');
    throw new ConfigError(
      'CONFIG_INVALID',
      issues.length === 1 ? `run config: ${list}` : `run config (${issues.length} problems):\n  ${list}`,
    );
  }
  return config;
}

/** JSON Schema of the run config. */
export function configJsonSchema(): Record<string, unknown> {
  return { $schema: 'https://json-schema.org/draft/2020-12/schema', title: 'MARFT Lab run config', ...toJsonSchema(CONFIG_SCHEMA) };
}
