// Writes configs/*.json: the lab's preset run configs (used by `marft train --config`, the UI and the
// measured-learning runs of README.md), generated from src/config/presets.ts so prompts match the
// built-in model's pretraining transcripts. Run: npx tsx scripts/make-presets.ts
import { writeFileSync } from 'node:fs';
import { PRESET_RUNS, presetRunConfig } from '../src/config/run-presets.ts';

for (const name of Object.keys(PRESET_RUNS)) {
  writeFileSync(`configs/${name}.json`, `${JSON.stringify(presetRunConfig(name), null, 2)}\n`);
  console.log(`configs/${name}.json`);
}
