// A field's help: the schema's description, and the paper's term from the field or its section (the schema holds
// the terms, so docs/RUN-CONFIG.md and the builder name the same ones).

import { describe, expect, it } from 'vitest';
import { fieldHelp, PAPER_URL } from './help.ts';

describe('fieldHelp', () => {
  it('links the paper for the credit, level, LoRA, critic, schedule and GAE settings, and only those', () => {
    const term = (path: string) => fieldHelp(path)?.paper?.term ?? null;
    expect(term('credit.method')).toBe('credit assignment');
    expect(term('level')).toBe('action-level and token-level MARFT (MARFT-A, MARFT-T)');
    expect(term('lora.r')).toBe('LoRA fine-tuning of each agent');
    expect(term('critic.mode')).toBe('the critic (centralised value function, CTDE)');
    expect(term('schedule.criticWarmup')).toBe('agent-by-agent training and critic warm-up');
    expect(term('ppo.gamma')).toBe('GAE over agents and turns');
    expect(term('ppo.lambda')).toBe('GAE over agents and turns');
    for (const path of ['ppo.clip', 'algo', 'rollout.episodes', 'graph.agents[1].topP', 'env.name']) expect(term(path), path).toBeNull();
    expect(fieldHelp('credit.method')?.paper?.url).toBe(PAPER_URL);
  });

  it('gives the description, and nothing for a path outside the schema', () => {
    expect(fieldHelp('graph.agents[1].topP')?.text).toMatch(/Nucleus sampling/);
    expect(fieldHelp('ppo.nope')).toBeNull();
  });
});
