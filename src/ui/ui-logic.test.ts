// Pure logic of the lab UI: append-only series and their decimation, the graph layout and edits,
// token colours, metric extraction and time left.

import { describe, expect, it } from 'vitest';
import { validateConfig } from '../config/run-config.ts';
import { addAgent, addEdge, removeAgent, renameAgent } from './builder/graph-ops.ts';
import { arcPath, edgeKind, layoutGraph } from './builder/layout.ts';
import { PRESET_RUNS, defaultRunConfig } from '../config/run-presets.ts';
import { PRESET_RUN_CHOICES } from './defaults.ts';
import { errorHint, errorTitle } from './errors.ts';
import { colorFor, scaleOf } from './inspector/colors.ts';
import { formatDuration, timeLeft } from './live/metric-keys.ts';
import { Series } from './live/series.ts';

describe('error titles', () => {
  it('titles every catalogued code (the typecheck enforces it) and spells out a foreign one', () => {
    expect(errorTitle('GRAPH_CYCLE')).toBe('The agent graph has a cycle');
    expect(errorTitle('ST_TRUNCATED')).toBe('A safetensors file is truncated');
    expect(errorTitle('ENOENT_LIKE')).toBe('enoent like');
    expect(errorHint({ code: 'BUSY', message: 'x' })).toBeUndefined();
    expect(errorHint({ code: 'ENOENT_LIKE', message: 'x' })).toMatch(/reload the page/);
  });
});

describe('series', () => {
  it('appends past its initial capacity and resets', () => {
    const s = new Series();
    for (let i = 0; i < 1000; i++) s.append(i, i * 2);
    expect(s.length).toBe(1000);
    expect(s.ys[999]).toBe(1998);
    s.reset();
    expect(s.length).toBe(0);
  });
});

describe('graph editing', () => {
  it('lays the duo preset out in two columns and survives a cycle', () => {
    const c = defaultRunConfig();
    const l = layoutGraph(c.graph);
    expect(l.nodes.map((n) => n.layer)).toEqual([0, 1]);
    c.graph.edges.push({ from: 'solver', to: 'planner' });
    expect(layoutGraph(c.graph).nodes).toHaveLength(2);
  });

  it('adds, connects, renames and removes agents keeping the config valid', () => {
    const c = defaultRunConfig();
    const i = addAgent(c);
    expect(c.graph.agents[i].role).toBe('agent_3');
    expect(addEdge(c, 'solver', 'agent_3')).toBe(true);
    expect(addEdge(c, 'solver', 'agent_3')).toBe(false);
    expect(addEdge(c, 'solver', 'solver')).toBe(false);
    expect(renameAgent(c, i, 'critic_agent')).toBeNull();
    expect(c.graph.edges).toContainEqual({ from: 'solver', to: 'critic_agent' });
    expect(validateConfig(c).issues).toEqual([]);
    removeAgent(c, 1); // the solver: its edges go, and nobody answers any more
    expect(c.graph.edges.some((e) => e.from === 'solver' || e.to === 'solver')).toBe(false);
    expect(validateConfig(c).issues.map((x) => x.path)).toContain('graph.agents');
  });

  it('reports a cycle at graph.edges', () => {
    const c = defaultRunConfig();
    addEdge(c, 'solver', 'planner');
    expect(validateConfig(c).issues.map((x) => x.path)).toContain('graph.edges');
  });
});

describe('colours and progress', () => {
  it('diverges around zero and greys out missing values', () => {
    const sc = scaleOf([-2, 1, null], 'advantage');
    expect(sc).toEqual({ lo: -2, hi: 2 });
    expect(colorFor(0, sc, 'advantage')).toBe('rgb(255,255,255)');
    expect(colorFor(-2, sc, 'advantage')).toBe('rgb(59,110,214)');
    expect(colorFor(null, sc, 'advantage')).toBe('rgb(236,236,236)');
  });

  it('estimates the time left from the recent iterations', () => {
    const m = (s: number) => ({ seconds: { total: s } }) as never;
    expect(timeLeft([m(10), m(20)], 2, 6)).toBe(60);
    expect(timeLeft([], 0, 5)).toBeNull();
    // before the first iteration, the probe's estimate; it counts down through the iteration in flight
    expect(timeLeft([], 0, 5, 12)).toBe(60);
    expect(timeLeft([], 0, 5, 12, 5)).toBe(55);
    expect(timeLeft([m(10), m(20)], 2, 6, 99, 4)).toBe(56);
    expect(timeLeft([m(10), m(20)], 2, 6, null, 40)).toBe(45); // an iteration slower than the mean: the rest stays
    expect(formatDuration(125)).toBe('2 min 5 s');
  });
});

describe('preset runs of the builder', () => {
  it('lists every preset run with its line', () => {
    expect(PRESET_RUN_CHOICES.map((c) => c.name)).toEqual(Object.keys(PRESET_RUNS));
    expect(PRESET_RUN_CHOICES.find((c) => c.name === 'classroom')?.line).toBe(
      'a short, visible rise of accuracy for a lesson; planner → solver, action level, 15 iterations × 64 episodes',
    );
    expect(PRESET_RUN_CHOICES.find((c) => c.name === 'lab')?.line).toBe(
      "the lab's start: light enough for a live demo on a laptop GPU; planner → solver, action level, 20 iterations × 4 episodes",
    );
  });
});

describe('graph layout edges', () => {
  it('classifies the quartet preset edges (every pair) as next, skip arcs and a back edge', () => {
    const layers = new Map([
      ['a', 0],
      ['b', 1],
      ['c', 2],
      ['d', 3],
    ]);
    expect(edgeKind(layers, 'a', 'b')).toEqual({ kind: 'next', span: 1 });
    expect(edgeKind(layers, 'a', 'c')).toEqual({ kind: 'skip', span: 2 });
    expect(edgeKind(layers, 'a', 'd')).toEqual({ kind: 'skip', span: 3 });
    expect(edgeKind(layers, 'c', 'a')).toEqual({ kind: 'back', span: 2 });
  });
  it('bows arcs above (up) or below (down) by 28 + 22 per spanned layer', () => {
    expect(arcPath(0, 100, 300, 100, -1, 2)).toBe('M 0 100 C 0 28, 300 28, 300 100');
    expect(arcPath(0, 100, 300, 120, 1, 1)).toBe('M 0 100 C 0 170, 300 170, 300 120');
  });
});
