// Test helper for the run config: a tiny 2-agent run config (planner -> solver) with short prompts, a few
// tokens per action and small rollouts, for tests of the config and of every layer that runs one.

import { parseRunConfig } from './run-config.ts';

export function tinyRunConfig(over: Record<string, unknown> = {}) {
  return parseRunConfig({
    seed: 3,
    graph: {
      agents: [
        { role: 'planner', systemPrompt: 'Plan.', maxNewTokens: 3 },
        { role: 'solver', systemPrompt: 'Solve.', withAnswer: true, maxNewTokens: 4 },
      ],
      edges: [{ from: 'planner', to: 'solver' }],
    },
    env: { name: 'arithmetic', options: { difficulty: 1 } },
    rollout: { episodes: 2, horizon: 2, groupSize: 2 },
    critic: { hidden: [8] },
    lora: { r: 2, alpha: 4 },
    ppo: { lr: 1e-2, criticLr: 1e-2, targetKl: null, entropyCoef: 0.01 },
    ...over,
  });
}
