// The preset runs shipped as configs/<name>.json (see scripts/make-presets.ts): the built-in model on the
// cooperative arithmetic tasks, with hyperparameters tuned for a ~5M-parameter model and LoRA on every
// linear layer (the reference's lr 1e-6 suits 7B models; a tiny model needs far larger steps).
// `lab` is the lab's starting config and the CLI's default (one default everywhere, so
// `marft train --config configs/lab.json` runs what the lab shows).

import { type PresetName, presetGraph } from './presets.ts';
import { type RunConfig, parseRunConfig } from './run-config.ts';
import { type StepRewardName } from './run-config-schema.ts';

const common = {
  seed: 1,
  model: { path: '' },
  env: { name: 'coop-arith', options: {} },
  credit: { method: 'equal' },
  lora: { r: 8, alpha: 16, targets: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'], mode: 'per_agent' },
  critic: { mode: 'shared', hidden: [256, 128] },
  schedule: { mode: 'all', interval: 1, criticWarmup: 2 },
  ppo: {
    lr: 2e-4,
    criticLr: 1e-3,
    clip: 0.2,
    entropyCoef: 0,
    epochs: 2,
    minibatches: 2,
    targetKl: null,
    maxGradNorm: 1,
    gamma: 1,
    lambda: 0.95,
    logProbNorm: 'token',
  },
};

// classroom: a short, visible rise (measured: 15 iterations lift held-out sampled accuracy by ~25 points);
// lr 5e-4 needs the 64 episodes: with 32 it diverged on the first built-in model.
const classroom = {
  preset: 'duo',
  anonymous: false,
  maxNewTokens: 64,
  config: { ...common, level: 'action', iterations: 15, rollout: { episodes: 64, horizon: 1 }, ppo: { ...common.ppo, lr: 5e-4 } },
} as const;

export const PRESET_RUNS: Record<
  string,
  { preset: PresetName; anonymous: boolean; maxNewTokens: number; config: Record<string, unknown> }
> = {
  // lab: light enough for a live demo on a laptop GPU: short outputs, 4 episodes, a smaller critic MLP, LoRA
  // on q and v (the reference's targets, the schema's default), 20 iterations, and a LoRA learning rate large
  // enough to see the curves move within a lesson. `classroom` is the heavier classroom run.
  lab: {
    preset: 'duo',
    anonymous: false,
    maxNewTokens: 48,
    config: { iterations: 20, rollout: { episodes: 4, horizon: 2 }, critic: { hidden: [256, 128] }, ppo: { lr: 5e-5 } },
  },
  // solo-ppo: 170 iterations generate about as many tokens as 100 of a duo (its answers without a plan).
  'solo-ppo': {
    preset: 'solo',
    anonymous: false,
    maxNewTokens: 80,
    config: { ...common, level: 'action', iterations: 170, rollout: { episodes: 128, horizon: 1 } },
  },
  'duo-action': {
    preset: 'duo',
    anonymous: false,
    maxNewTokens: 80,
    config: { ...common, level: 'action', iterations: 100, rollout: { episodes: 128, horizon: 1 } },
  },
  'duo-token': {
    preset: 'duo',
    anonymous: false,
    maxNewTokens: 80,
    config: { ...common, level: 'token', iterations: 100, rollout: { episodes: 128, horizon: 1 } },
  },
  'duo-anonymous': {
    preset: 'duo',
    anonymous: true,
    maxNewTokens: 80,
    config: { ...common, level: 'action', iterations: 100, rollout: { episodes: 128, horizon: 1 } },
  },
  classroom,
  // The credit-assignment pair for a class: the classroom run twice, differing only in credit.method. With
  // equal credit the planner is paid nothing of its own (the critic carries the team reward back to it);
  // with per_step it is paid its step reward (0.5·min(plan steps/2, 1) + 0.5·R), so its reward curve
  // separates from the first iteration (bench/matrix.ts runs the pair; docs/MATRIX.md has the curves).
  'class-equal': classroom,
  'class-per-step': { ...classroom, config: { ...classroom.config, credit: { method: 'per_step', perStep: { planner: 'planner' } } } },
};

/**
 * The per_step helpers a team gets when per_step is picked with none set: a role named planner is paid the
 * planner's plan-step reward (as class-per-step), or on coop-plan the environment's check of its plan
 * (plan-check); the other roles keep the fallback (the team reward).
 */
export function suggestedStepRewards(roles: readonly string[], envName?: string): Record<string, StepRewardName> {
  if (!roles.includes('planner')) return {};
  return { planner: envName === 'coop-plan' ? 'plan-check' : 'planner' };
}

/**
 * The preset run's config as configs/<name>.json holds it (the graph filled in); null for an unknown name.
 * `team` swaps in another preset team, with the run's output length.
 */
export function presetRunConfig(name: string, team?: { preset: PresetName; anonymous: boolean }): Record<string, unknown> | null {
  const p = Object.hasOwn(PRESET_RUNS, name) ? PRESET_RUNS[name] : undefined;
  if (!p) return null;
  const graph = presetGraph(team?.preset ?? p.preset, { anonymous: team?.anonymous ?? p.anonymous });
  for (const a of graph.agents) a.maxNewTokens = p.maxNewTokens;
  return { ...p.config, graph };
}

/** The default run config everywhere (the lab's starting config, `marft train` without --config): the `lab` preset run. */
export function defaultRunConfig(team?: { preset: PresetName; anonymous: boolean }): RunConfig {
  return parseRunConfig(presetRunConfig('lab', team));
}
