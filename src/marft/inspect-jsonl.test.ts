// The recorded-episodes format round trip: what the lab's Inspect tab downloads (episodesToJsonl of an
// iteration) is what `marft inspect` reads, and the numbers it prints are the ones the trainer computed for
// that iteration (computeTargets) and the in-app inspector shows (inspectEpisode), token by token, at both
// levels and under GRPO, including per_step credit, which reads each action's text.

import { describe, expect, it } from 'vitest';
import { parseRunConfig } from '../config/run-config.ts';
import { presetGraph } from '../config/presets.ts';
import { computeTargets } from './advantage-targets.ts';
import { episodesToJsonl, inspectRecorded, parseRecordedEpisodes } from './inspect-jsonl.ts';
import { inspectEpisode } from './inspect.ts';
import type { ActionRecord, EpisodeRecord } from './rollout.ts';
import type { ActionScores } from './score.ts';
import { handEpisode } from './testing-episodes.ts';

/** Four duo episodes (two turns in the last), planner texts with 0-2 plan steps so per_step credit differs. */
function iteration(over: Record<string, unknown>) {
  const config = parseRunConfig({
    graph: presetGraph('duo'),
    ppo: { gamma: 0.95, lambda: 0.9 },
    rollout: { groupSize: 2 },
    credit: { perStep: { planner: 'planner', solver: 'solver' } },
    ...over,
  });
  const token = config.level === 'token' || config.algo === 'grpo';
  // n generated tokens: a value per token (token level; GRPO scores at token level too) or one per action
  const act = (agent: number, x: number, n: number) => ({
    agent,
    ids: Array.from({ length: n }, (_, k) => 5 + k),
    values: token ? Array.from({ length: n }, (_, k) => x + 0.1 * k) : [x],
  });
  const episodes: EpisodeRecord[] = [];
  const scores = new Map<ActionRecord, ActionScores>();
  const add = (turns: Parameters<typeof handEpisode>[1], texts: string[]) => {
    const h = handEpisode(config, turns, episodes.length);
    h.episode.actions.forEach((a, i) => {
      a.text = texts[i];
    });
    episodes.push(h.episode);
    for (const [a, s] of h.scores) scores.set(a, s);
  };
  add([{ teamReward: 1, actions: [act(0, 0.2, 3), act(1, 0.5, 2)] }], ['1. a\n2. b', '\\boxed{4}']);
  add([{ teamReward: 0, actions: [act(0, 0.3, 2), act(1, 0.1, 1)] }], ['1. a', '\\boxed{5}']);
  add([{ teamReward: 1, actions: [act(0, 0.4, 1), act(1, 0.6, 2)] }], ['go', 'no answer']);
  add(
    [
      { teamReward: 0, actions: [act(0, 0.1, 2), act(1, 0.2, 2)] },
      { teamReward: 1, actions: [act(0, 0.3, 1), act(1, 0.7, 3)] },
    ],
    ['- x\n- y', '\\boxed{1}', '1. z', '\\boxed{2}'],
  );
  return { config, episodes, scores, targets: computeTargets(episodes, scores, config) };
}

const CASES: Array<[string, Record<string, unknown>]> = [
  ['action level, equal', { level: 'action', credit: { method: 'equal' } }],
  ['action level, per_step', { level: 'action', credit: { method: 'per_step', perStep: { planner: 'planner', solver: 'solver' } } }],
  ['token level, step_discount', { level: 'token', credit: { method: 'step_discount', discount: 0.7 } }],
  ['token level, per_step', { level: 'token', credit: { method: 'per_step', perStep: { planner: 'planner', solver: 'solver' } } }],
  ['GRPO, equal', { algo: 'grpo', credit: { method: 'equal' } }],
  [
    'GRPO, per_step, token level',
    { algo: 'grpo', level: 'token', credit: { method: 'per_step', perStep: { planner: 'planner', solver: 'solver' } } },
  ],
];

describe("recorded episodes: the lab's export is what marft inspect reads", () => {
  for (const [name, over] of CASES) {
    it(name, () => {
      const it0 = iteration(over);
      const text = episodesToJsonl(it0.config, it0.episodes, it0.scores);
      expect(text.trim().split('\n')).toHaveLength(4);
      const lines = inspectRecorded(parseRecordedEpisodes(text, it0.config), it0.config);
      const perToken = it0.config.level === 'token';
      lines.forEach((line, e) => {
        expect(line.id).toBe(`e${e}`);
        const ep = it0.episodes[e];
        const shown = inspectEpisode({ iteration: 0, ...it0, decode: () => '' }, e);
        line.actions.forEach((a, i) => {
          const rec = ep.actions[i];
          const t = it0.targets.get(rec)!;
          expect({ turn: a.turn, role: a.role }).toEqual({ turn: rec.turn, role: rec.role });
          // the trainer's numbers, bit for bit
          const n = perToken ? rec.actionIds.length : 1;
          expect(a.advantages).toEqual(t.advantages.slice(0, n));
          expect(a.advantages).toHaveLength(n);
          if (it0.config.algo === 'grpo') expect([a.values, a.deltas, a.returns]).toEqual([null, null, null]);
          else {
            expect(a.returns).toEqual(t.returns);
            expect(a.deltas).toEqual(t.trace.map((g) => g.delta));
          }
          // and the in-app inspector's (per token; one action-level entry repeats on each token)
          const toks = shown.actions[i].tokens;
          expect(toks.map((x) => x.advantage)).toEqual(perToken ? a.advantages : toks.map(() => a.advantages[0]));
          if (perToken) expect(toks.map((x) => x.reward)).toEqual(a.rewards);
          else expect(shown.actions[i].reward).toBe(a.rewards[0]);
        });
      });
    });
  }

  it("the export writes the value the config's level needs, the action text and GRPO's groups", () => {
    const act = iteration({ level: 'action' });
    const first = JSON.parse(episodesToJsonl(act.config, act.episodes, act.scores).split('\n')[0]);
    expect(first).toEqual({
      id: 'e0',
      turns: [
        {
          reward: 1,
          actions: [
            { role: 'planner', tokens: 3, value: 0.2, text: '1. a\n2. b' },
            { role: 'solver', tokens: 2, value: 0.5, text: '\\boxed{4}' },
          ],
        },
      ],
    });
    const tok = iteration({ level: 'token' });
    const t0 = JSON.parse(episodesToJsonl(tok.config, tok.episodes, tok.scores).split('\n')[0]);
    expect(t0.turns[0].actions[1]).toEqual({ role: 'solver', tokens: 2, values: [0.5, 0.6], text: '\\boxed{4}' });
    const grpo = iteration({ algo: 'grpo' });
    const g = episodesToJsonl(grpo.config, grpo.episodes, grpo.scores)
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(g.map((x) => x.group)).toEqual(['g0', 'g0', 'g1', 'g1']);
    expect(g[0].turns[0].actions[0]).toEqual({ role: 'planner', tokens: 3, text: '1. a\n2. b' });
  });
});

describe("recorded episodes carry the environment's verdicts that per_step helpers pay", () => {
  const planConfig = parseRunConfig({
    graph: presetGraph('duo'),
    env: { name: 'coop-plan' },
    level: 'action',
    credit: { method: 'per_step', perStep: { planner: 'plan-check', solver: 'solver' } },
  });

  it("plan-check: the planner's plan score goes out with the action and comes back as its credited reward", () => {
    const h = handEpisode(planConfig, [
      {
        teamReward: 0,
        actions: [
          { agent: 0, values: [0.2] },
          { agent: 1, values: [0.4] },
        ],
      },
    ]);
    h.episode.turns[0].answers = { planner: { answer: null, correct: false, score: 0.5 } };
    const text = episodesToJsonl(planConfig, [h.episode], h.scores);
    expect(JSON.parse(text).turns[0].actions.map((a: { score?: number }) => a.score)).toEqual([0.5, undefined]);
    const [line] = inspectRecorded(parseRecordedEpisodes(text, planConfig), planConfig);
    const targets = computeTargets([h.episode], h.scores, planConfig);
    // the plan-check helper pays the score (0.5), the solver's helper 0 for a wrong team with no \boxed{} answer
    expect(line.actions.map((a) => a.rewards[0])).toEqual([0.5, 0]);
    expect(line.actions.map((a) => a.advantages)).toEqual(h.episode.actions.map((a) => [...targets.get(a)!.advantages]));
    // without the score the helper has no check to pay: 0
    const noScore = JSON.stringify({
      id: 'e0',
      turns: [
        {
          reward: 0,
          actions: [
            { role: 'planner', tokens: 1, value: 0.2 },
            { role: 'solver', tokens: 1, value: 0.4 },
          ],
        },
      ],
    });
    expect(inspectRecorded(parseRecordedEpisodes(noScore, planConfig), planConfig)[0].actions[0].rewards).toEqual([0]);
  });

  it("a turn's correct goes out only where it differs from reward > 0, and the reviewer's helper reads it", () => {
    const codeConfig = parseRunConfig({
      env: { name: 'code' },
      level: 'action',
      graph: {
        agents: [
          { role: 'coder', systemPrompt: 'c', withAnswer: true },
          { role: 'reviewer', systemPrompt: 'r' },
        ],
        edges: [{ from: 'coder', to: 'reviewer' }],
      },
      credit: { method: 'per_step', perStep: { coder: 'coder', reviewer: 'reviewer' } },
    });
    const h = handEpisode(codeConfig, [
      {
        teamReward: 0.5,
        actions: [
          { agent: 0, values: [0] },
          { agent: 1, values: [0] },
        ],
      },
    ]);
    // half the tests passed: a partial reward, yet the team's code is not right, and the reviewer rejected it
    h.episode.turns[0].correct = false;
    h.episode.turns[0].answers = { coder: { answer: 'f', correct: false, score: 0.5 } };
    h.episode.actions[1].text = 'reject: it fails';
    const line = JSON.parse(episodesToJsonl(codeConfig, [h.episode], h.scores));
    expect(line.turns[0]).toMatchObject({ reward: 0.5, correct: false });
    expect(line.turns[0].actions[0].score).toBe(0.5);
    const [inspected] = inspectRecorded(parseRecordedEpisodes(JSON.stringify(line), codeConfig), codeConfig);
    expect(inspected.actions.map((a) => a.rewards[0])).toEqual([0.5, 1]);
    // read as reward > 0 (the default) the rejection would be wrong: 0
    delete line.turns[0].correct;
    expect(inspectRecorded(parseRecordedEpisodes(JSON.stringify(line), codeConfig), codeConfig)[0].actions[1].rewards).toEqual([0]);
    // a correct turn whose reward is positive writes nothing extra
    h.episode.turns[0].correct = true;
    expect(JSON.parse(episodesToJsonl(codeConfig, [h.episode], h.scores)).turns[0]).not.toHaveProperty('correct');
  });

  it('a malformed score or correct is refused naming the field', () => {
    const ep = (turn: Record<string, unknown>) =>
      JSON.stringify({ id: 'e0', turns: [{ reward: 1, actions: [{ role: 'planner', tokens: 1, value: 0 }], ...turn }] });
    expect(() => parseRecordedEpisodes(ep({ correct: 'yes' }), planConfig, 'f.jsonl')).toThrow(
      /^f\.jsonl line 1, turns\[0\]\.correct: must be true or false/,
    );
    const withScores = (a: unknown, b: unknown) =>
      JSON.stringify({
        id: 'e0',
        turns: [
          {
            reward: 1,
            actions: [
              { role: 'planner', tokens: 1, value: 0, score: a },
              { role: 'planner', tokens: 1, value: 0, score: b },
            ],
          },
        ],
      });
    expect(() => parseRecordedEpisodes(withScores('1', 1), planConfig, 'f.jsonl')).toThrow(
      /turns\[0\]\.actions\[0\]\.score: must be a finite number/,
    );
    expect(() => parseRecordedEpisodes(withScores(1, 0.5), planConfig, 'f.jsonl')).toThrow(
      /turns\[0\]\.actions\[1\]\.score: role "planner" has score 1 on an earlier action of this turn/,
    );
    expect(parseRecordedEpisodes(withScores(1, 1), planConfig).episodes[0].turns[0].answers).toEqual({
      planner: { answer: null, correct: true, score: 1 },
    });
  });
});
