// A role is the agent's identity: the issue-17 rename bug (typing "solver2" into a new agent's role passed
// through "solver" and moved the real solver's edges) and what a committed rename carries along.

import { describe, expect, it } from 'vitest';
import { validateConfig } from '../../config/run-config.ts';
import { defaultRunConfig } from '../../config/run-presets.ts';
import { presetGraph } from '../../config/presets.ts';
import { addAgent, addEdge, renameAgent, roleIssue } from './graph-ops.ts';

describe('renaming an agent', () => {
  it('refuses a name taken on the way ("solver" while typing "solver2"): the solver keeps its edges', () => {
    const c = defaultRunConfig();
    const i = addAgent(c);
    addEdge(c, 'agent_3', 'solver');
    const edgesBefore = structuredClone(c.graph.edges);
    // what committing each prefix would do; only the final name is committed by the builder
    for (const prefix of ['s', 'so', 'sol', 'solv', 'solve']) expect(roleIssue(c, i, prefix)).toBeNull();
    expect(renameAgent(c, i, 'solver')).toBe('"solver" is already the role of agent 2: roles must be unique');
    expect(c.graph.agents.map((a) => a.role)).toEqual(['planner', 'solver', 'agent_3']);
    expect(c.graph.edges).toEqual(edgesBefore);
    expect(renameAgent(c, i, 'solver2')).toBeNull();
    expect(c.graph.edges).toEqual([
      { from: 'planner', to: 'solver' },
      { from: 'solver2', to: 'solver' },
    ]);
    expect(validateConfig(c).issues).toEqual([]);
  });

  it('refuses an empty or malformed name with the rule', () => {
    const c = defaultRunConfig();
    expect(renameAgent(c, 0, '')).toBe('a role must not be empty');
    expect(renameAgent(c, 0, '2nd planner')).toBe('"2nd planner" must start with a letter or _ and use letters, digits, _ and -');
    expect(c.graph.agents[0].role).toBe('planner');
  });

  it('carries edges, per_step credit and the orchestrator to the new name', () => {
    const c = defaultRunConfig();
    c.credit.method = 'per_step';
    c.credit.perStep = { planner: 'planner', solver: 'solver' };
    expect(renameAgent(c, 0, 'thinker')).toBeNull();
    expect(c.graph.edges).toEqual([{ from: 'thinker', to: 'solver' }]);
    expect(c.credit.perStep).toEqual({ thinker: 'planner', solver: 'solver' });
    const o = defaultRunConfig();
    o.graph = presetGraph('orchestrated');
    const orch = o.graph.dynamic!.orchestrator;
    const k = o.graph.agents.findIndex((a) => a.role === orch);
    expect(renameAgent(o, k, 'router')).toBeNull();
    expect(o.graph.dynamic!.orchestrator).toBe('router');
  });

  it('leaves keyed entries with the other agent when an imported config has the old name twice', () => {
    const c = defaultRunConfig();
    c.graph.agents[0].role = 'solver'; // two "solver"s (invalid, as imported)
    c.graph.edges = [{ from: 'solver', to: 'solver' }];
    expect(renameAgent(c, 0, 'planner')).toBeNull();
    expect(c.graph.agents.map((a) => a.role)).toEqual(['planner', 'solver']);
    expect(c.graph.edges).toEqual([{ from: 'solver', to: 'solver' }]);
  });
});
