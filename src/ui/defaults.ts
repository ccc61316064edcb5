// The builder's preset picker: every preset team and its anonymous variant. The lab's starting config is
// the `lab` preset run (src/config/run-presets.ts, configs/lab.json), the same default the CLI uses.

import { type PresetName, presetGraph } from '../config/presets.ts';

/** Preset choices of the picker: every preset and its anonymous variant. */
export const PRESET_CHOICES: Array<{ id: string; label: string; preset: PresetName; anonymous: boolean }> = (
  ['solo', 'duo', 'trio', 'quartet', 'orchestrated'] as PresetName[]
).flatMap((p) => [
  { id: p, label: `${p} (${presetGraph(p).agents.map((a) => a.role).join(' → ')})`, preset: p, anonymous: false },
  { id: `${p}-anon`, label: `${p}, anonymous (agent_1..${presetGraph(p).agents.length})`, preset: p, anonymous: true },
]);
