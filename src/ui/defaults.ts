// The lab's starting config in the browser: the classroom preset (configs/classroom.json, from
// src/marft/run-presets.ts: the duo team on the built-in model's coop-arith tasks, settings tuned for a
// live demo), with the team the picker chose. The CLI reads the same preset from its file.

import { type RunConfig, parseConfig } from '../marft/config.ts';
import { type PresetName, presetGraph } from '../marft/presets.ts';
import { PRESET_RUNS } from '../marft/run-presets.ts';

export const LAB_MAX_NEW_TOKENS = PRESET_RUNS.classroom.maxNewTokens;

export function labConfig(preset: PresetName = 'duo', anonymous = false): RunConfig {
  const graph = presetGraph(preset, { anonymous });
  for (const a of graph.agents) a.maxNewTokens = LAB_MAX_NEW_TOKENS;
  return parseConfig({ ...PRESET_RUNS.classroom.config, graph });
}

/** Preset choices of the picker: every preset and its anonymous variant. */
export const PRESET_CHOICES: Array<{ id: string; label: string; preset: PresetName; anonymous: boolean }> = (
  ['solo', 'duo', 'trio', 'quartet', 'orchestrated'] as PresetName[]
).flatMap((p) => [
  { id: p, label: `${p} (${presetGraph(p).agents.map((a) => a.role).join(' → ')})`, preset: p, anonymous: false },
  { id: `${p}-anon`, label: `${p}, anonymous (agent_1..${presetGraph(p).agents.length})`, preset: p, anonymous: true },
]);
