// The inspector's per-token GAE terms agree with computeTargets: A = delta + gamma*lambda*A_next on every
// token, the last token of an agent bootstraps from the next agent's first token, and another credit
// method changes the rewards side by side.

import { describe, expect, it } from 'vitest';
import type { ActionRecord, EpisodeRecord } from '../marft/rollout.ts';
import type { ActionScores } from '../marft/score.ts';
import { defaultRunConfig } from '../config/run-presets.ts';
import { inspectEpisode } from './inspect.ts';

function fixture(level: 'action' | 'token') {
  const cfg = defaultRunConfig();
  cfg.level = level;
  cfg.ppo.gamma = 0.9;
  cfg.ppo.lambda = 0.8;
  const act = (agent: number, ids: number[]): ActionRecord => ({
    episode: 0, turn: 0, agent, role: cfg.graph.agents[agent].role, promptIds: [1], actionIds: ids,
    behaviourLogp: ids.map(() => -1), text: ids.join(' '), finish: 'length', truncated: 0,
  });
  const a0 = act(0, [5, 6, 7]);
  const a1 = act(1, [8, 9]);
  const ep: EpisodeRecord = {
    index: 0, seed: 1, task: '2+2', info: {}, actions: [a0, a1], done: true, correct: true,
    turns: [{ teamReward: 1, correct: true, feedback: 'judge: correct', answers: { solver: { answer: '4', correct: true } } }],
  };
  const sc = (a: ActionRecord, vals: number[]): ActionScores => ({
    oldLogp: a.actionIds.map(() => -0.9), refLogp: [], entropy: a.actionIds.map(() => 1), values: level === 'token' ? vals : [vals[0]], criticRow: 0,
  });
  const scores = new Map([[a0, sc(a0, [0.1, 0.2, 0.3])], [a1, sc(a1, [0.4, 0.5])]]);
  return { input: { iteration: 0, episodes: [ep], scores, config: cfg, decode: (ids: number[]) => `t${ids[0]}` }, cfg };
}

describe('inspectEpisode', () => {
  it('token level: the recursion holds on every token and crosses the agent boundary', () => {
    const { input } = fixture('token');
    const r = inspectEpisode(input, 0);
    const toks = r.actions.flatMap((a) => a.tokens);
    expect(toks).toHaveLength(5);
    for (const t of toks) expect(t.advantage).toBeCloseTo(t.delta! + 0.9 * 0.8 * t.next!.advantage, 10);
    const lastPlanner = r.actions[0].tokens[2];
    expect(lastPlanner.next).toMatchObject({ kind: 'agent', role: 'solver', value: 0.4 });
    expect(r.actions[1].tokens[1].next!.kind).toBe('end');
    expect(r.actions[1].tokens[1].reward).toBe(1); // equal: the whole team reward on the last token
    expect(r.actions[0].tokens[0].ratio).toBeCloseTo(Math.exp(0.1), 10);
    expect(r.actions[0].tokens[0].text).toBe('t5');
  });

  it('action level: one value per action, the planner bootstraps from the solver', () => {
    const { input } = fixture('action');
    const r = inspectEpisode(input, 0);
    const p = r.actions[0].tokens[0];
    expect(p.next).toMatchObject({ kind: 'agent', value: 0.4 });
    expect(p.delta).toBeCloseTo(0 + 0.9 * 0.4 - 0.1, 10);
    expect(p.advantage).toBeCloseTo(p.delta! + 0.72 * p.next!.advantage, 10);
    expect(new Set(r.actions[0].tokens.map((t) => t.advantage)).size).toBe(1);
  });

  it('another credit method re-runs the targets: step_discount rewards the planner too', () => {
    const { input, cfg } = fixture('token');
    cfg.credit.discount = 0.5;
    const eq = inspectEpisode(input, 0, 'equal');
    const sd = inspectEpisode(input, 0, 'step_discount');
    expect(eq.actions[0].reward).toBe(0);
    expect(sd.actions[0].reward).toBeCloseTo(0.5, 10);
    expect(sd.method).toBe('step_discount');
  });
});
