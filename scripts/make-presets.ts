// Writes configs/*.json: the lab's preset run configs (used by `marft train --config`, the UI and the
// measured-learning runs of README.md), generated from src/marft/presets.ts so prompts match the
// built-in model's pretraining transcripts. Run: npx tsx scripts/make-presets.ts
import { writeFileSync } from 'node:fs';
import { presetGraph } from '../src/marft/presets.ts';
import { PRESET_RUNS } from '../src/marft/run-presets.ts';

for (const [name, p] of Object.entries(PRESET_RUNS)) {
  const graph = presetGraph(p.preset, { anonymous: p.anonymous });
  for (const a of graph.agents) a.maxNewTokens = p.maxNewTokens;
  writeFileSync(`configs/${name}.json`, `${JSON.stringify({ ...p.config, graph }, null, 2)}\n`);
  console.log(`configs/${name}.json`);
}
