// The builder's preset picker: every preset team and its anonymous variant. The lab's starting config is
// the `lab` preset run (src/config/run-presets.ts, configs/lab.json), the same default the CLI uses.

import { type PresetName, presetGraph } from '../config/presets.ts';
import { PRESET_RUNS } from '../config/run-presets.ts';

/** Preset choices of the picker: every preset and its anonymous variant. */
export const PRESET_CHOICES: Array<{ id: string; label: string; preset: PresetName; anonymous: boolean }> = (
  ['solo', 'duo', 'trio', 'quartet', 'orchestrated'] as PresetName[]
).flatMap((p) => [
  {
    id: p,
    label: `${p} (${presetGraph(p)
      .agents.map((a) => a.role)
      .join(' → ')})`,
    preset: p,
    anonymous: false,
  },
  { id: `${p}-anon`, label: `${p}, anonymous (agent_1..${presetGraph(p).agents.length})`, preset: p, anonymous: true },
]);

/** Why each preset run (configs/<name>.json, /?config=<name>) exists, in one line; its sizes are added from the config. */
const PRESET_RUN_PURPOSE: Record<string, string> = {
  lab: "the lab's start: light enough for a live demo on a laptop GPU",
  'solo-ppo': 'one agent, the baseline a team is compared with',
  'duo-action': 'planner → solver, action-level MARFT (MARFT-A)',
  'duo-token': 'planner → solver, token-level MARFT (MARFT-T)',
  'duo-anonymous': 'the duo with anonymous roles and prompts (does the role name matter?)',
  classroom: 'a short, visible rise of accuracy for a lesson',
  'class-equal': 'credit lesson, A: equal credit (the planner is paid only through the critic)',
  'class-per-step': 'credit lesson, B: per_step credit (the planner is paid its own step reward)',
};

/** The preset runs of the picker, each with one line: its purpose, team, level and size. */
export const PRESET_RUN_CHOICES: Array<{ name: string; line: string }> = Object.entries(PRESET_RUNS).map(([name, p]) => {
  const c = p.config as { level?: string; iterations?: number; rollout?: { episodes?: number } };
  const team = presetGraph(p.preset, { anonymous: p.anonymous })
    .agents.map((a) => a.role)
    .join(' → ');
  return {
    name,
    line: `${PRESET_RUN_PURPOSE[name] ?? name}; ${team}, ${c.level ?? 'action'} level, ${c.iterations ?? '?'} iterations × ${c.rollout?.episodes ?? '?'} episodes`,
  };
});
