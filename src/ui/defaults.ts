// The lab's starting config in the browser: the duo preset (planner -> solver) on the built-in model's
// coop-arith tasks, light enough for a live demo on a laptop GPU: short outputs, 4 episodes, a smaller
// critic MLP, LoRA on q and v (the reference's targets), 20 iterations, and a LoRA learning rate large
// enough to see the curves move within a lesson. configs/classroom.json is the CLI's heavier classroom
// run (more episodes, LoRA on every linear layer).

import { type RunConfig, defaultConfig } from '../config/run-config.ts';
import { type PresetName, presetGraph } from '../config/presets.ts';

export const LAB_MAX_NEW_TOKENS = 48;

export function labConfig(preset: PresetName = 'duo', anonymous = false): RunConfig {
  const c = defaultConfig();
  c.graph = presetGraph(preset, { anonymous });
  for (const a of c.graph.agents) a.maxNewTokens = LAB_MAX_NEW_TOKENS;
  c.iterations = 20;
  c.rollout = { ...c.rollout, episodes: 4, horizon: 2 };
  c.critic = { ...c.critic, hidden: [256, 128] };
  c.ppo = { ...c.ppo, lr: 5e-5 };
  return c;
}

/** Preset choices of the picker: every preset and its anonymous variant. */
export const PRESET_CHOICES: Array<{ id: string; label: string; preset: PresetName; anonymous: boolean }> = (
  ['solo', 'duo', 'trio', 'quartet', 'orchestrated'] as PresetName[]
).flatMap((p) => [
  { id: p, label: `${p} (${presetGraph(p).agents.map((a) => a.role).join(' → ')})`, preset: p, anonymous: false },
  { id: `${p}-anon`, label: `${p}, anonymous (agent_1..${presetGraph(p).agents.length})`, preset: p, anonymous: true },
]);
