import { describe, expect, it } from 'vitest';
import { ConfigError } from './errors.ts';
import { compileGraph, decideRoute, findCycle, graphIssues, makeProfile, parseRoute, validateGraph, type AgentGraph } from './graph.ts';
import { PRESET_NAMES, presetForAgents, presetGraph } from './presets.ts';
import { validateConfig } from './run-config.ts';

const agent = (role: string, withAnswer = false) => makeProfile(role, `you are ${role}`, { withAnswer });
const codeOf = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    if (e instanceof ConfigError) return e.code;
    throw e;
  }
  return 'none';
};

describe('graph validation', () => {
  it('checks a profile field with one validator: the same message as the run config gives', () => {
    const g: AgentGraph = { agents: [{ ...agent('a', true), topP: 2 }], edges: [] };
    expect(graphIssues(g)).toEqual([
      { code: 'GRAPH_PROFILE', path: 'agents[0].topP', message: 'agents[0].topP must be a number in (0, 1], got 2' },
    ]);
    expect(validateConfig({ graph: g }).issues.map((i) => i.message)).toEqual(['graph.agents[0].topP must be a number in (0, 1], got 2']);
  });
  it('names the cycle', () => {
    const g: AgentGraph = {
      agents: [agent('a'), agent('b'), agent('c', true)],
      edges: [
        { from: 'a', to: 'b' },
        { from: 'b', to: 'c' },
        { from: 'c', to: 'a' },
      ],
    };
    expect(findCycle(['a', 'b', 'c'], g.edges)).toEqual(['a', 'b', 'c', 'a']);
    expect(() => validateGraph(g)).toThrow(/cycle: a → b → c → a/);
    expect(codeOf(() => validateGraph(g))).toBe('GRAPH_CYCLE');
    expect(findCycle(['x'], [{ from: 'x', to: 'x' }])).toEqual(['x', 'x']);
  });
  it('reports unknown roles, duplicates, missing answerer and bad profiles together', () => {
    const g: AgentGraph = {
      agents: [agent('a'), agent('a'), { ...agent('b'), topP: 0 }],
      edges: [
        { from: 'a', to: 'zed' },
        { from: 'a', to: 'b' },
        { from: 'a', to: 'b' },
      ],
    };
    const msgs = graphIssues(g).map((i) => `${i.code} ${i.path}: ${i.message}`);
    expect(msgs).toEqual(
      expect.arrayContaining([
        expect.stringContaining('GRAPH_ROLE agents[1].role: role "a" is used twice'),
        expect.stringContaining('GRAPH_PROFILE agents[2].topP'),
        expect.stringContaining('GRAPH_EDGE edges[0].to: edges[0].to names an unknown role "zed"'),
        expect.stringContaining('GRAPH_EDGE edges[2]: edge a → b is given twice'),
        expect.stringContaining('GRAPH_NO_ANSWER'),
      ]),
    );
    expect(codeOf(() => validateGraph({ agents: [], edges: [] }))).toBe('GRAPH_EMPTY');
    expect(codeOf(() => validateGraph({ agents: [agent('has space', true)], edges: [] }))).toBe('GRAPH_ROLE');
  });
  it('checks a dynamic topology', () => {
    const ok: AgentGraph = { agents: [agent('orch'), agent('solver', true)], edges: [], dynamic: { orchestrator: 'orch', maxSteps: 5 } };
    expect(graphIssues(ok)).toEqual([]);
    expect(graphIssues({ ...ok, dynamic: { orchestrator: 'nobody', maxSteps: 0 } }).map((i) => i.path)).toEqual([
      'dynamic.orchestrator',
      'dynamic.maxSteps',
    ]);
    expect(graphIssues({ ...ok, dynamic: { orchestrator: 'solver', maxSteps: 1 } })[0].message).toMatch(/must not give the answer/);
  });
});

describe('compileGraph', () => {
  // a -> c, b -> c, c -> d, a -> d: layers [a, b], [c], [d].
  const g: AgentGraph = {
    agents: [agent('d', true), agent('c'), agent('a'), agent('b')],
    edges: [
      { from: 'a', to: 'c' },
      { from: 'b', to: 'c' },
      { from: 'c', to: 'd' },
      { from: 'a', to: 'd' },
    ],
  };
  const cg = compileGraph(g);
  it('builds topological layers in declared order within a layer', () => {
    expect(cg.layers).toEqual([['a', 'b'], ['c'], ['d']]);
    expect(cg.order).toEqual(['a', 'b', 'c', 'd']);
    expect(cg.answerers).toEqual(['d']);
  });
  it('gives ancestors and parents in acting order', () => {
    expect(cg.ancestors('d')).toEqual(['a', 'b', 'c']);
    expect(cg.parents('d')).toEqual(['a', 'c']);
    expect(cg.ancestors('a')).toEqual([]);
    expect(cg.index('a')).toBe(2);
    expect(() => cg.ancestors('zz')).toThrow(/unknown role "zz"/);
  });
});

describe('parseRoute', () => {
  const roles = ['planner', 'solver'];
  it('reads calls and done', () => {
    expect(parseRoute('I think the solver. <call>solver</call>', roles)).toEqual({ next: 'solver' });
    expect(parseRoute('<call> Planner </call>', roles)).toEqual({ next: 'planner' });
    expect(parseRoute('all good <done/>', roles)).toEqual({ done: true });
    expect(parseRoute('<DONE />', roles)).toEqual({ done: true });
    // As the reference: <done/> anywhere wins over a call.
    expect(parseRoute('<call>solver</call> <done/>', roles)).toEqual({ done: true });
    expect(parseRoute('<call>planner</call><call>solver</call>', roles)).toEqual({ next: 'planner' });
  });
  it('explains invalid outputs', () => {
    expect(parseRoute('let me think', roles)).toEqual({ invalid: 'no <call>role</call> or <done/> in the output' });
    expect((parseRoute('<call>coder</call>', roles) as { invalid: string }).invalid).toMatch(
      /names no agent it may call \(planner, solver\)/,
    );
    expect((parseRoute('<call>solver', roles) as { invalid: string }).invalid).toMatch(/without a valid role/);
  });
  it('applies the step limit', () => {
    expect(decideRoute('<call>solver</call>', roles, 2, 3)).toEqual({ next: 'solver' });
    expect(decideRoute('<call>solver</call>', roles, 3, 3)).toMatchObject({ done: true, reason: 'step_limit' });
    expect(decideRoute('hmm', roles, 0, 3)).toMatchObject({ done: true, reason: 'invalid' });
  });
});

describe('presets', () => {
  it('are all valid, named and anonymous', () => {
    for (const name of PRESET_NAMES) {
      for (const anonymous of [false, true]) expect(graphIssues(presetGraph(name, { anonymous }))).toEqual([]);
    }
  });
  it('chain the roles and keep answering positions in the anonymous variant', () => {
    const q = compileGraph(presetForAgents(4));
    expect(q.order).toEqual(['planner', 'solver', 'reflector', 'verifier']);
    expect(q.answerers).toEqual(['solver', 'verifier']);
    expect(q.ancestors('verifier')).toEqual(['planner', 'solver', 'reflector']);
    const anon = compileGraph(presetForAgents(4, { anonymous: true }));
    expect(anon.order).toEqual(['agent_1', 'agent_2', 'agent_3', 'agent_4']);
    expect(anon.answerers).toEqual(['agent_2', 'agent_4']);
    expect(anon.profile('agent_1').systemPrompt).not.toMatch(/planner/);
    expect(presetGraph('duo').agents[0].systemPrompt).toMatch(/Do not carry out any calculation/);
    expect(presetGraph('duo').agents[1].systemPrompt).toContain('\\boxed{}');
  });
  it('orchestrated preset routes with <call>', () => {
    const g = presetGraph('orchestrated');
    expect(g.dynamic).toEqual({ orchestrator: 'orchestrator', maxSteps: 10 });
    expect(g.agents[0].systemPrompt).toContain('<call>agent_name</call>');
    expect(g.agents[0].systemPrompt).toContain('- solver: ');
  });
});
