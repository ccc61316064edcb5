// The demo run's episodes record: each credit method's numbers are inspectEpisode's (hand-worked here on a
// duo episode at action level), the record survives JSON and parsing, and a broken file is DEMO_INVALID.

import { describe, expect, it } from 'vitest';
import { computeTargets } from './advantage-targets.ts';
import { DEMO_EPISODES_FILE, demoEpisodesJsonl, demoInspect, parseDemoEpisodes, recordDemoEpisodes } from './demo-run.ts';
import { inspectRecorded, parseRecordedEpisodes } from './inspect-jsonl.ts';
import type { InspectInput } from './inspect.ts';
import { summarize } from './run-events.ts';
import { duoConfig, handEpisode } from './testing-episodes.ts';

/** Planner V 0.1, solver V 0.4, team reward 1, gamma 0.9, lambda 0.8 (credit discount 1, the default). */
function fixture(): InspectInput {
  const cfg = duoConfig('action', 0.9, 0.8);
  const { episode, scores } = handEpisode(cfg, [
    {
      teamReward: 1,
      actions: [
        { agent: 0, ids: [5, 6, 7], values: [0.1] },
        { agent: 1, ids: [8, 9], values: [0.4] },
      ],
    },
  ]);
  return {
    iteration: 2,
    config: cfg,
    episodes: [episode],
    scores,
    targets: computeTargets([episode], scores, cfg),
    decode: (ids) => `t${ids[0]}`,
  };
}

const advantages = (d: ReturnType<typeof recordDemoEpisodes>, m: 'equal' | 'step_discount') =>
  demoInspect(d, 0, m).actions.map((a) => a.tokens[0].advantage);

describe('recordDemoEpisodes', () => {
  it('keeps every episode under each credit method, with the numbers the update uses', () => {
    const input = fixture();
    const d = recordDemoEpisodes(input, input.episodes.map(summarize));
    expect(d.iteration).toBe(2);
    expect(d.method).toBe('equal');
    expect(d.episodes).toEqual([expect.objectContaining({ index: 0, teamReward: 1, actions: 2 })]);
    // equal: reward 1 on the solver only. solver: δ = 1 - 0.4 = 0.6 = A; planner: δ = 0.9*0.4 - 0.1 = 0.26, A = 0.26 + 0.9*0.8*0.6 = 0.692
    advantages(d, 'equal').forEach((a, i) => expect(a).toBeCloseTo([0.692, 0.6][i], 10));
    // step_discount, d = 1: reward 1 on each. solver A = 0.6; planner δ = 1 + 0.36 - 0.1 = 1.26, A = 1.26 + 0.72*0.6 = 1.692
    advantages(d, 'step_discount').forEach((a, i) => expect(a).toBeCloseTo([1.692, 0.6][i], 10));
    // the run's own method is the default, as the worker's inspect() without a method
    expect(demoInspect(d, 0)).toEqual(demoInspect(d, 0, 'equal'));
  });

  it('round-trips through the JSON file the lab fetches', () => {
    const input = fixture();
    const d = recordDemoEpisodes(input, input.episodes.map(summarize));
    expect(parseDemoEpisodes(JSON.stringify(d))).toEqual(JSON.parse(JSON.stringify(d)));
  });
});

describe('parseDemoEpisodes and demoInspect', () => {
  const good = () => {
    const input = fixture();
    return JSON.parse(JSON.stringify(recordDemoEpisodes(input, input.episodes.map(summarize)))) as Record<string, unknown>;
  };

  it('refuses what is not a demo record with DEMO_INVALID naming the file and the problem', () => {
    expect(() => parseDemoEpisodes('{')).toThrow(
      expect.objectContaining({ code: 'DEMO_INVALID', message: expect.stringContaining(`${DEMO_EPISODES_FILE} is not JSON`) }),
    );
    expect(() => parseDemoEpisodes(JSON.stringify({ ...good(), version: 2 }))).toThrow(
      expect.objectContaining({ code: 'DEMO_INVALID', message: expect.stringContaining('not a version 1') }),
    );
    expect(() => parseDemoEpisodes(JSON.stringify({ ...good(), method: 'best' }))).toThrow(
      expect.objectContaining({ code: 'DEMO_INVALID', message: expect.stringContaining('credit method') }),
    );
    expect(() => parseDemoEpisodes(JSON.stringify({ ...good(), inspected: { equal: [] } }))).toThrow(
      expect.objectContaining({ code: 'DEMO_INVALID', message: expect.stringContaining('inspected.equal') }),
    );
  });

  it('names a method the record lacks (CREDIT) and an episode out of range (INSPECT_RANGE)', () => {
    const d = parseDemoEpisodes(JSON.stringify({ ...good(), inspected: { equal: (good().inspected as Record<string, unknown>).equal } }));
    expect(() => demoInspect(d, 0, 'step_discount')).toThrow(
      expect.objectContaining({ code: 'CREDIT', message: expect.stringContaining('"step_discount"') }),
    );
    expect(() => demoInspect(d, 5)).toThrow(expect.objectContaining({ code: 'INSPECT_RANGE' }));
  });
});

describe('demoEpisodesJsonl', () => {
  it('gives the recorded episodes in the recorded-episodes format, which replay to the recorded advantages', () => {
    for (const level of ['action', 'token'] as const) {
      const cfg = duoConfig(level, 0.9, 0.8);
      const { episode, scores } = handEpisode(cfg, [
        {
          teamReward: 1,
          actions: [
            { agent: 0, ids: [5, 6, 7], values: level === 'action' ? [0.1] : [0.1, 0.2, 0.3] },
            { agent: 1, ids: [8, 9], values: level === 'action' ? [0.4] : [0.4, 0.5] },
          ],
        },
      ]);
      const input: InspectInput = {
        iteration: 2,
        config: cfg,
        episodes: [episode],
        scores,
        targets: computeTargets([episode], scores, cfg),
        decode: (ids) => `t${ids[0]}`,
      };
      const d = recordDemoEpisodes(input, input.episodes.map(summarize));
      const jsonl = demoEpisodesJsonl(d, cfg);
      const line = inspectRecorded(parseRecordedEpisodes(jsonl, cfg), cfg)[0];
      expect(line.id).toBe('e0');
      const recorded = demoInspect(d, 0).actions;
      expect(line.actions.map((a) => a.role)).toEqual(['planner', 'solver']);
      line.actions.forEach((a, i) => {
        const want = level === 'action' ? [recorded[i].tokens[0].advantage] : recorded[i].tokens.map((t) => t.advantage);
        a.advantages.forEach((v, k) => expect(v).toBeCloseTo(want[k], 12));
      });
    }
  });
});
