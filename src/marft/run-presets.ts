// The preset runs shipped as configs/<name>.json (see scripts/make-presets.ts): the built-in model on the
// cooperative arithmetic tasks, with hyperparameters tuned for a ~5M-parameter model and LoRA on every
// linear layer (the reference's lr 1e-6 suits 7B models; a tiny model needs far larger steps).

import type { PresetName } from './presets.ts';

const common = {
  seed: 1,
  model: { path: '' },
  env: { name: 'coop-arith', options: {} },
  credit: { method: 'equal' },
  lora: { r: 8, alpha: 16, targets: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'], mode: 'per_agent' },
  critic: { mode: 'shared', hidden: [256, 128] },
  schedule: { mode: 'all', interval: 1, criticWarmup: 2 },
  ppo: { lr: 2e-4, criticLr: 1e-3, clip: 0.2, entropyCoef: 0, epochs: 2, minibatches: 2, targetKl: null, maxGradNorm: 1, gamma: 1, lambda: 0.95, logProbNorm: 'token' },
};

export const PRESET_RUNS: Record<string, { preset: PresetName; anonymous: boolean; maxNewTokens: number; config: Record<string, unknown> }> = {
  'solo-ppo': { preset: 'solo', anonymous: false, maxNewTokens: 80, config: { ...common, level: 'action', iterations: 80, rollout: { episodes: 128, horizon: 1 } } },
  'duo-action': { preset: 'duo', anonymous: false, maxNewTokens: 80, config: { ...common, level: 'action', iterations: 80, rollout: { episodes: 128, horizon: 1 } } },
  'duo-token': { preset: 'duo', anonymous: false, maxNewTokens: 80, config: { ...common, level: 'token', iterations: 80, rollout: { episodes: 128, horizon: 1 } } },
  'duo-anonymous': { preset: 'duo', anonymous: true, maxNewTokens: 80, config: { ...common, level: 'action', iterations: 80, rollout: { episodes: 128, horizon: 1 } } },
  classroom: { preset: 'duo', anonymous: false, maxNewTokens: 64, config: { ...common, level: 'action', iterations: 12, rollout: { episodes: 32, horizon: 1 }, ppo: { ...common.ppo, epochs: 2, minibatches: 2 } } },
};
