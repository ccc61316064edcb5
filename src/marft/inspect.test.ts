// The inspector shows the numbers the update used: it formats computeTargets' trace (the trainer's call),
// A = delta + gamma*lambda*A_next holds on every token with hand-worked values, the last token of an agent
// bootstraps from the next agent's first token, and only another credit method recomputes the targets.

import { describe, expect, it } from 'vitest';
import { computeTargets } from './advantage-targets.ts';
import { type InspectInput, inspectEpisode } from './inspect.ts';
import { duoConfig, handEpisode } from './testing-episodes.ts';

/** A duo episode, planner V (0.1, 0.2, 0.3) then solver V (0.4, 0.5) (one V each at action level), team reward 1; gamma 0.9, lambda 0.8. */
function fixture(level: 'action' | 'token'): InspectInput {
  const cfg = duoConfig(level, 0.9, 0.8);
  const token = level === 'token';
  const { episode, scores } = handEpisode(cfg, [
    {
      teamReward: 1,
      actions: [
        { agent: 0, ids: [5, 6, 7], values: token ? [0.1, 0.2, 0.3] : [0.1] },
        { agent: 1, ids: [8, 9], values: token ? [0.4, 0.5] : [0.4] },
      ],
    },
  ]);
  // what the trainer keeps on its IterationResult
  const targets = computeTargets([episode], scores, cfg);
  return { iteration: 0, config: cfg, episodes: [episode], scores, targets, decode: (ids) => `t${ids[0]}` };
}

const close = (got: Array<number | null>, want: number[]) => {
  expect(got.length).toBe(want.length);
  want.forEach((w, i) => expect(got[i], `index ${i}`).toBeCloseTo(w, 10));
};

describe('inspectEpisode', () => {
  it('token level: the recursion holds on every token and crosses the agent boundary', () => {
    const r = inspectEpisode(fixture('token'), 0);
    const toks = r.actions.flatMap((a) => a.tokens);
    expect(toks).toHaveLength(5);
    for (const t of toks) expect(t.advantage).toBeCloseTo(t.delta! + 0.9 * 0.8 * t.next!.advantage, 10);
    // gamma*lambda = 0.72; credit equal: reward 1 on the solver's last token.
    // solver k=1: delta = 1 - 0.5 = 0.5, A = 0.5;  k=0: delta = 0.9*0.5 - 0.4 = 0.05, A = 0.05 + 0.72*0.5 = 0.41
    // planner k=2: delta = 0.9*0.4 - 0.3 = 0.06, A = 0.06 + 0.72*0.41 = 0.3552
    // planner k=1: delta = 0.9*0.3 - 0.2 = 0.07, A = 0.07 + 0.72*0.3552 = 0.325744
    // planner k=0: delta = 0.9*0.2 - 0.1 = 0.08, A = 0.08 + 0.72*0.325744 = 0.31453568
    close(
      toks.map((t) => t.delta),
      [0.08, 0.07, 0.06, 0.05, 0.5],
    );
    close(
      toks.map((t) => t.advantage),
      [0.31453568, 0.325744, 0.3552, 0.41, 0.5],
    );
    close(
      toks.map((t) => t.ret),
      [0.41453568, 0.525744, 0.6552, 0.81, 1.0],
    );
    expect(toks.map((t) => t.next!.kind)).toEqual(['token', 'token', 'agent', 'token', 'end']);
    const lastPlanner = r.actions[0].tokens[2];
    expect(lastPlanner.next).toMatchObject({ kind: 'agent', role: 'solver', value: 0.4 });
    expect(r.actions[1].tokens[1].next!.kind).toBe('end');
    expect(r.actions[1].tokens[1].reward).toBe(1); // equal: the whole team reward on the last token
    expect(r.actions[0].tokens[0].ratio).toBeCloseTo(Math.exp(0.1), 10);
    expect(r.actions[0].tokens[0].text).toBe('t5');
  });

  it('action level: one value per action, the planner bootstraps from the solver', () => {
    const r = inspectEpisode(fixture('action'), 0);
    const p = r.actions[0].tokens[0];
    expect(p.next).toMatchObject({ kind: 'agent', value: 0.4 });
    expect(p.delta).toBeCloseTo(0 + 0.9 * 0.4 - 0.1, 10);
    expect(p.advantage).toBeCloseTo(p.delta! + 0.72 * p.next!.advantage, 10);
    // solver: delta = 1 - 0.4 = 0.6, A = 0.6; planner: A = 0.26 + 0.72*0.6 = 0.692
    expect(p.advantage).toBeCloseTo(0.692, 10);
    expect(r.actions[1].tokens[0]).toMatchObject({ delta: 0.6, advantage: 0.6, next: { kind: 'end', value: 0, advantage: 0 } });
    expect(new Set(r.actions[0].tokens.map((t) => t.advantage)).size).toBe(1);
  });

  it("shows the trainer's targets as they are; another credit method recomputes them", () => {
    const input = fixture('token');
    // mark the kept trace: under the run's own method the view must show it, not a re-derivation
    const [planner] = input.episodes[0].actions;
    const kept = input.targets.get(planner)!;
    input.targets.set(planner, { ...kept, trace: kept.trace.map((s) => ({ ...s, advantage: 42 })) });
    expect(inspectEpisode(input, 0).actions[0].tokens.map((t) => t.advantage)).toEqual([42, 42, 42]);
    expect(inspectEpisode(input, 0, 'step_discount').actions[0].tokens.map((t) => t.advantage)).not.toContain(42);
  });

  it('another credit method re-runs the targets: step_discount rewards the planner too', () => {
    const input = fixture('token');
    input.config.credit.discount = 0.5;
    const eq = inspectEpisode(input, 0, 'equal');
    const sd = inspectEpisode(input, 0, 'step_discount');
    expect(eq.actions[0].reward).toBe(0);
    expect(sd.actions[0].reward).toBeCloseTo(0.5, 10);
    expect(sd.method).toBe('step_discount');
    // planner's last token: delta = 0.5 + 0.9*0.4 - 0.3 = 0.56
    expect(sd.actions[0].tokens[2].delta).toBeCloseTo(0.56, 10);
  });

  it('names an episode outside the iteration', () => {
    expect(() => inspectEpisode(fixture('token'), 3)).toThrow(/episode 3 is not in the last iteration \(0\.\.0\)/);
  });
});
