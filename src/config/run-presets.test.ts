import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseRunConfig } from './run-config.ts';
import { presetGraph } from './presets.ts';
import { PRESET_RUNS, presetRunConfig, suggestedStepRewards } from './run-presets.ts';

describe('configs/*.json', () => {
  it('has no preset for an unknown name', () => {
    expect(presetRunConfig('nope')).toBeNull();
    expect(presetRunConfig('toString')).toBeNull();
  });

  for (const [name, p] of Object.entries(PRESET_RUNS)) {
    it(`${name} parses and uses the preset's prompts`, () => {
      const c = parseRunConfig(JSON.parse(readFileSync(new URL(`../../configs/${name}.json`, import.meta.url), 'utf8')));
      const g = presetGraph(p.preset, { anonymous: p.anonymous });
      expect(c.graph.agents.map((a) => [a.role, a.systemPrompt, a.withAnswer])).toEqual(
        g.agents.map((a) => [a.role, a.systemPrompt, a.withAnswer]),
      );
      expect(c.env.name).toBe('coop-arith');
      // the file is what presetRunConfig gives (the lab loads it by name: /?run=<name>)
      expect(parseRunConfig(presetRunConfig(name))).toEqual(c);
    });
  }
});

describe('suggestedStepRewards', () => {
  it("pays a planner its plan-step reward, on coop-plan the environment's check of its plan", () => {
    expect(suggestedStepRewards(['planner', 'solver'])).toEqual({ planner: 'planner' });
    expect(suggestedStepRewards(['planner', 'solver'], 'coop-plan')).toEqual({ planner: 'plan-check' });
    expect(suggestedStepRewards(['solver'], 'coop-plan')).toEqual({});
  });
});
