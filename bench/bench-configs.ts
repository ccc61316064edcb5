// The run configs the iteration benchmarks time, in one place, so that bench:iteration (Node) and
// bench:browser (the lab in Chromium) time the same thing:
//   presetBenchConfig: a preset run's own config (configs/<name>.json) with N episodes and critic warm-up 0,
//     so every timed iteration has the policy update of the run's steady state (the presets train the
//     critic alone in their first 2 iterations);
//   randomModelBenchConfig: the random-model config (SmolLM2-135M's shape, bench/random-model.ts): 2 agents
//     (planner -> solver), token-level PPO, 1 epoch, every action max-new-tokens long, as the PyTorch peer.

import { type RunConfig, parseRunConfig } from '../src/config/run-config.ts';
import { presetForAgents } from '../src/config/presets.ts';
import { PRESET_RUNS, presetRunConfig } from '../src/config/run-presets.ts';

/** The preset's own episode count; an Error naming the presets for an unknown name. */
export function presetEpisodes(name: string): number {
  const p = presetRunConfig(name);
  if (!p) throw new Error(`"${name}" is not a preset run; one of ${Object.keys(PRESET_RUNS).join(', ')}`);
  return (p.rollout as { episodes: number }).episodes;
}

/** The preset run `name` with `episodes` episodes (default: its own) and critic warm-up 0. */
export function presetBenchConfig(name: string, episodes = presetEpisodes(name)): RunConfig {
  const p = presetRunConfig(name);
  if (!p) throw new Error(`"${name}" is not a preset run; one of ${Object.keys(PRESET_RUNS).join(', ')}`);
  return parseRunConfig({
    ...p,
    rollout: { ...(p.rollout as object), episodes },
    schedule: { ...(p.schedule as object | undefined), criticWarmup: 0 },
  });
}

/** bench:iteration's random-model run: `agents` agents, `maxNew` new tokens each, temperature 1, arithmetic. */
export function randomModelBenchConfig(o: { agents: 1 | 2 | 3 | 4; maxNew: number; episodes: number }): RunConfig {
  const graph = presetForAgents(o.agents);
  for (const a of graph.agents) {
    a.maxNewTokens = o.maxNew;
    a.temperature = 1;
  }
  return parseRunConfig({
    seed: 1,
    graph,
    level: 'token',
    env: { name: 'arithmetic', options: { difficulty: 2 } },
    rollout: { episodes: o.episodes, horizon: 1 },
    ppo: { epochs: 1, minibatches: 1, targetKl: null },
  });
}
