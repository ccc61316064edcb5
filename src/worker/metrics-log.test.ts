// A CLI run's training log loads as a chart overlay: hand-made lines and state.json, the learning matrix's
// committed logs (a runner log and a kept state.json) read back with the numbers they hold, and what is not
// a log is refused with a line number.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { WorkerFail } from './errors.ts';
import { parseMetricsLog } from './metrics-log.ts';

const bytes = (s: string) => new TextEncoder().encode(s);
const line = (iteration: number, teamReward: number) => ({
  iteration,
  accuracy: teamReward,
  teamReward,
  policyLoss: 0,
  valueLoss: 0,
  entropy: 0,
  approxKl: 0,
  klToRef: 0,
  clipFraction: 0,
  tokensPerSecond: 1,
  seconds: { rollout: 1, score: 0, advantages: 0, update: 0, total: 1 },
  skipped: [],
  trained: [],
  agents: {
    planner: { reward: 0, accuracy: null, actions: 4, tokens: 40 },
    solver: { reward: teamReward, accuracy: teamReward, actions: 4, tokens: 60 },
  },
});
const results = new URL('../../bench/results/matrix/', import.meta.url);

describe('training logs as overlays', () => {
  it('reads marft train --json lines; null (plain JSON NaN) comes back as NaN', () => {
    const h = parseMetricsLog(bytes(`${JSON.stringify(line(0, 0.25))}\n${JSON.stringify(line(1, 0.5))}\n`), 'a.jsonl');
    expect(h.map((m) => [m.iteration, m.teamReward, m.agents.solver.accuracy])).toEqual([
      [0, 0.25, 0.25],
      [1, 0.5, 0.5],
    ]);
    expect(h[0].agents.planner.accuracy).toBeNaN();
    expect(h[1].agents.planner.tokens).toBe(40);
  });

  it('reads a state.json, NaN written as {"f64": "NaN"}', () => {
    const state = {
      iteration: 2,
      metrics: [{ ...line(0, 0.1), agents: { planner: { reward: 0, accuracy: { f64: 'NaN' }, actions: 1, tokens: 9 } } }, line(1, 0.2)],
    };
    const h = parseMetricsLog(bytes(JSON.stringify(state, null, 2)), 'state.json');
    expect(h.map((m) => m.teamReward)).toEqual([0.1, 0.2]);
    expect(h[0].agents.planner.accuracy).toBeNaN();
  });

  it("loads the learning matrix's committed outputs: a runner log and a kept checkpoint's state.json", () => {
    const log = parseMetricsLog(readFileSync(new URL('seed1-batch2/team-trio-s1.jsonl', results)), 'team-trio-s1.jsonl');
    // its job record (team-trio-s1.job.json, the runner's own count): 18 iterations, 195 776 tokens
    expect(log).toHaveLength(18);
    expect(log.reduce((a, m) => a + Object.values(m.agents).reduce((b, x) => b + x.tokens, 0), 0)).toBe(195_776);
    expect(Object.keys(log[0].agents)).toEqual(['planner', 'solver', 'verifier']);
    const state = parseMetricsLog(readFileSync(new URL('seed1-checkpoints/ppo-action-s1/ckpt-000030/state.json', results)), 'state.json');
    expect(state.map((m) => m.iteration)).toEqual(Array.from({ length: 30 }, (_, i) => i));
    expect(state[0].teamReward).toBe(0.2890625);
    expect(state[0].agents.planner.accuracy).toBeNaN();
  });

  it('refuses what is not a log, naming the line', () => {
    const refused = (text: string) => {
      try {
        parseMetricsLog(bytes(text), 'x.jsonl');
      } catch (e) {
        return e;
      }
      return null;
    };
    const e = refused(`${JSON.stringify(line(0, 0.5))}\n{"iteration": 1}`) as WorkerFail;
    expect(e).toBeInstanceOf(WorkerFail);
    expect(e.code).toBe('LOG_INVALID');
    expect(e.message).toMatch(/x\.jsonl: line 2 has no iteration and teamReward numbers/);
    expect((refused('') as WorkerFail).message).toMatch(/is empty/);
    expect((refused(`${JSON.stringify(line(0, 0.5))}\nnot json`) as WorkerFail).message).toMatch(/line 2 is not JSON/);
    expect((refused(JSON.stringify({ graph: {} }, null, 2)) as WorkerFail).message).toMatch(/one JSON document without metrics/);
    expect((refused('{"format": "marft-lab-checkpoint"}') as WorkerFail).message).toMatch(/line 1 has no iteration/);
    expect((refused(JSON.stringify({ ...line(0, 1), agents: { solver: 3 } })) as WorkerFail).message).toMatch(
      /agent solver has no reward number/,
    );
  });
});
