// `marft inspect` in-process, with no model and no GPU: hand-worked episodes, every credit method at both
// levels and GRPO, the numbers worked by hand here from the references' formulas:
// - action-level GAE: legacy MARFT marft/buffers/action_level_buffer.py (delta = r + gamma*V(next agent,
//   or the next turn's first agent) - V; A = delta + gamma*lambda*A_next; return = A + V);
// - token-level GAE: legacy MARFT marft/buffers/token_level_buffer.py (inside an action delta_k = gamma*V_{k+1} - V_k; at an
//   action's last token delta = r + gamma*V(next agent's first token) - V_last);
// - credit: AReaL-based MARFT areal/workflow/multi_agent/credit.py (equal: R on the last action; step_discount:
//   R*d^(N-1-i); per_step: areal/reward/multi_agent.py's planner 0.5*min(steps/2,1) + 0.5*R, solver R / 0.1 / 0);
// - GRPO: each token's reward-to-go (AReaL's GRPO: PPO with values 0 and gamma = lambda = 1) normalised over
//   the group's generated tokens (areal/utils/data.py: pooled mean, unbiased std, eps 1e-5), or with
//   groupNorm agent_turn against the same agent's call in the group's other samples.
// Bad input exits with the line and field named.

import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { presetGraph } from '../config/presets.ts';
import type { InspectedLine } from '../marft/inspect-jsonl.ts';
import { inspectCommand } from './commands/inspect.ts';

const DIR = join(new URL('../../', import.meta.url).pathname, '.build/inspect-test');
mkdirSync(DIR, { recursive: true });
let files = 0;
/** A fresh file: f<N>.json for a config, f<N>.jsonl for episodes. */
const write = (text: string, ext = 'jsonl'): string => {
  const p = join(DIR, `f${files++}.${ext}`);
  writeFileSync(p, text);
  return p;
};
const configFile = (over: Record<string, unknown>): string =>
  write(
    JSON.stringify({
      graph: presetGraph('duo'),
      ppo: { gamma: 0.9, lambda: 0.8 },
      credit: { perStep: { planner: 'planner', solver: 'solver' }, discount: 0.5 },
      ...over,
    }),
    'json',
  );
const episodesFile = (eps: unknown[]): string => write(eps.map((e) => JSON.stringify(e)).join('\n') + '\n');

async function inspect(config: string, episodes: string, ...extra: string[]): Promise<string[]> {
  const out: string[] = [];
  await inspectCommand(['--config', config, '--episodes', episodes, ...extra], (l) => out.push(l));
  return out;
}
async function inspectJson(config: string, episodes: string, ...extra: string[]): Promise<InspectedLine[]> {
  return (await inspect(config, episodes, '--json', ...extra)).map((l) => JSON.parse(l) as InspectedLine);
}

/** Every number of `got` within 1e-9 of `want` (null stays null). */
function expectClose(got: unknown, want: unknown, path = ''): void {
  if (typeof want === 'number') {
    expect(typeof got, path).toBe('number');
    expect(Math.abs((got as number) - want), `${path}: ${got} vs ${want}`).toBeLessThan(1e-9);
  } else if (Array.isArray(want)) {
    expect(Array.isArray(got) && got.length, path).toBe(want.length);
    want.forEach((w, i) => expectClose((got as unknown[])[i], w, `${path}[${i}]`));
  } else if (want && typeof want === 'object') {
    expect(Object.keys(got as object).sort(), path).toEqual(Object.keys(want).sort());
    for (const [k, w] of Object.entries(want)) expectClose((got as Record<string, unknown>)[k], w, `${path}.${k}`);
  } else expect(got, path).toBe(want);
}

// planner text with 2 numbered steps (structure 1), solver boxed
const PLAN = '1. add\n2. double';
const ANSWER = 'so \\boxed{4}';

describe('marft inspect: action level (gamma 0.9, lambda 0.8)', () => {
  const eps = episodesFile([
    {
      id: 'e1',
      turns: [
        {
          reward: 1,
          actions: [
            { role: 'planner', tokens: 3, value: 0.2, text: PLAN },
            { role: 'solver', tokens: 2, value: 0.5, text: ANSWER },
          ],
        },
      ],
    },
  ]);
  // solver (last): delta = r_s - 0.5, A = delta, return = A + 0.5 = r_s (r_s = 1 for every method here)
  // planner: delta = r_p + 0.9*0.5 - 0.2 = r_p + 0.25; A = delta + 0.9*0.8*0.5 = r_p + 0.61; return = r_p + 0.81
  const line = (rp: number) => ({
    id: 'e1',
    actions: [
      { turn: 0, role: 'planner', rewards: [rp], values: [0.2], deltas: [rp + 0.25], advantages: [rp + 0.61], returns: [rp + 0.81] },
      { turn: 0, role: 'solver', rewards: [1], values: [0.5], deltas: [0.5], advantages: [0.5], returns: [1] },
    ],
  });
  it('equal: R on the solver only', async () => {
    expectClose(await inspectJson(configFile({ credit: { method: 'equal' } }), eps), [line(0)]);
  });
  it('step_discount (d 0.5): the planner gets R*0.5', async () => {
    expectClose(await inspectJson(configFile({}), eps, '--credit', 'step_discount'), [line(0.5)]);
  });
  it('per_step: planner 0.5*min(2/2, 1) + 0.5*1 = 1, solver R = 1', async () => {
    expectClose(await inspectJson(configFile({}), eps, '--credit', 'per_step'), [line(1)]);
  });
  it('equal over two turns: the solver of turn 0 bootstraps from the planner of turn 1', async () => {
    const two = episodesFile([
      {
        id: 'm',
        turns: [
          {
            reward: 0,
            actions: [
              { role: 'planner', tokens: 1, value: 0.1 },
              { role: 'solver', tokens: 1, value: 0.3 },
            ],
          },
          {
            reward: 1,
            actions: [
              { role: 'planner', tokens: 1, value: 0.4 },
              { role: 'solver', tokens: 1, value: 0.6 },
            ],
          },
        ],
      },
    ]);
    // backwards: s1 delta 1-0.6 = 0.4, A 0.4; p1 delta 0.9*0.6-0.4 = 0.14, A 0.14+0.72*0.4 = 0.428;
    // s0 delta 0.9*0.4-0.3 = 0.06, A 0.06+0.72*0.428 = 0.36816; p0 delta 0.9*0.3-0.1 = 0.17, A 0.17+0.72*0.36816 = 0.4350752
    expectClose(await inspectJson(configFile({}), two, '--credit', 'equal'), [
      {
        id: 'm',
        actions: [
          { turn: 0, role: 'planner', rewards: [0], values: [0.1], deltas: [0.17], advantages: [0.4350752], returns: [0.5350752] },
          { turn: 0, role: 'solver', rewards: [0], values: [0.3], deltas: [0.06], advantages: [0.36816], returns: [0.66816] },
          { turn: 1, role: 'planner', rewards: [0], values: [0.4], deltas: [0.14], advantages: [0.428], returns: [0.828] },
          { turn: 1, role: 'solver', rewards: [1], values: [0.6], deltas: [0.4], advantages: [0.4], returns: [1] },
        ],
      },
    ]);
  });
  it('without --json: a table, a row per action', async () => {
    const out = await inspect(configFile({ credit: { method: 'equal' } }), eps);
    expect(out[0]).toMatch(/^credit equal, action level, ppo, gamma 0\.9, lambda 0\.8; 1 episode from f\d+\.jsonl$/);
    expect(out[1].split(/\s+/)).toEqual(['episode', 'turn', 'role', 'token', 'reward', 'value', 'delta', 'advantage', 'return']);
    expect(out.slice(2).map((r) => r.split(/\s+/))).toEqual([
      ['e1', '0', 'planner', '-', '0.0000', '0.2000', '0.2500', '0.6100', '0.8100'],
      ['e1', '0', 'solver', '-', '1.0000', '0.5000', '0.5000', '0.5000', '1.0000'],
    ]);
  });
});

describe('marft inspect: token level (gamma 0.9, lambda 0.8)', () => {
  const eps = episodesFile([
    {
      id: 't1',
      turns: [
        {
          reward: 1,
          actions: [
            { role: 'planner', tokens: 2, values: [0.2, 0.4], text: PLAN },
            { role: 'solver', tokens: 2, values: [0.5, 0.6], text: ANSWER },
          ],
        },
      ],
    },
  ]);
  const config = configFile({ level: 'token' });
  // solver: s1 delta 1-0.6 = 0.4, A 0.4, return 1; s0 delta 0.9*0.6-0.5 = 0.04, A 0.04+0.72*0.4 = 0.328, return 0.828
  // planner: p1 delta r_p + 0.9*0.5 - 0.4 = r_p + 0.05, A = r_p + 0.05 + 0.72*0.328 = r_p + 0.28616;
  //          p0 delta 0.9*0.4 - 0.2 = 0.16, A = 0.16 + 0.72*(r_p + 0.28616)
  const line = (rp: number) => ({
    id: 't1',
    actions: [
      {
        turn: 0,
        role: 'planner',
        rewards: [0, rp],
        values: [0.2, 0.4],
        deltas: [0.16, rp + 0.05],
        advantages: [0.16 + 0.72 * (rp + 0.28616), rp + 0.28616],
        returns: [0.36 + 0.72 * (rp + 0.28616), rp + 0.68616],
      },
      { turn: 0, role: 'solver', rewards: [0, 1], values: [0.5, 0.6], deltas: [0.04, 0.4], advantages: [0.328, 0.4], returns: [0.828, 1] },
    ],
  });
  it('equal', async () => {
    const got = await inspectJson(config, eps, '--credit', 'equal');
    expectClose(got, [line(0)]);
    expectClose(got[0].actions[0].advantages, [0.3660352, 0.28616]);
  });
  it('step_discount (d 0.5)', async () => {
    const got = await inspectJson(config, eps, '--credit', 'step_discount');
    expectClose(got, [line(0.5)]);
    expectClose(got[0].actions[0].advantages, [0.7260352, 0.78616]);
  });
  it('per_step', async () => {
    const got = await inspectJson(config, eps, '--credit', 'per_step');
    expectClose(got, [line(1)]);
    expectClose(got[0].actions[0].advantages, [1.0860352, 1.28616]);
  });
  it('without --json: a row per generated token', async () => {
    const out = await inspect(config, eps, '--credit', 'equal');
    expect(out.slice(2).map((r) => r.split(/\s+/).slice(0, 4))).toEqual([
      ['t1', '0', 'planner', '0'],
      ['t1', '0', 'planner', '1'],
      ['t1', '0', 'solver', '0'],
      ['t1', '0', 'solver', '1'],
    ]);
  });
});

describe('marft inspect: GRPO', () => {
  it("equal, action level: R pooled over the group's generated tokens (AReaL: mean, unbiased std, eps 1e-5), in input order; a constant group exactly 0", async () => {
    const config = configFile({ algo: 'grpo', rollout: { groupSize: 2 }, credit: { method: 'equal' } });
    const act = (reward: number) => [
      {
        reward,
        actions: [
          { role: 'planner', tokens: 2 },
          { role: 'solver', tokens: 3 },
        ],
      },
    ];
    const eps = episodesFile([
      { id: 'a', group: 'x', turns: act(1) },
      { id: 'b', group: 'y', turns: act(1) },
      { id: 'c', group: 'x', turns: act(0) },
      { id: 'd', group: 'y', turns: act(1) },
    ]);
    // group x: 5 tokens of 1 and 5 of 0, mean 0.5, unbiased std sqrt(2.5 / 9); A = +-0.5 / (sqrt(2.5 / 9) + 1e-5)
    const a = 0.5 / (Math.sqrt(2.5 / 9) + 1e-5);
    const line = (id: string, adv: number, r: number) => ({
      id,
      actions: [
        { turn: 0, role: 'planner', rewards: [0], values: null, deltas: null, advantages: [adv], returns: null },
        { turn: 0, role: 'solver', rewards: [r], values: null, deltas: null, advantages: [adv], returns: null },
      ],
    });
    const got = await inspectJson(config, eps);
    expectClose(got, [line('a', a, 1), line('b', 0, 1), line('c', -a, 0), line('d', 0, 1)]);
    expect([got[1], got[3]].flatMap((l) => l.actions.flatMap((x) => x.advantages))).toEqual([0, 0, 0, 0]);
  });

  it("per_step, token level, agent-and-turn groups: each action's reward-to-go against the same agent's call", async () => {
    const config = configFile({
      algo: 'grpo',
      level: 'token',
      ppo: { groupNorm: 'agent_turn' },
      rollout: { groupSize: 3 },
      credit: { method: 'per_step', perStep: { planner: 'planner', solver: 'solver' } },
    });
    const ep = (id: string, reward: number, plan: string) => ({
      id,
      group: 'g',
      turns: [
        {
          reward,
          actions: [
            { role: 'planner', tokens: 1, text: plan },
            { role: 'solver', tokens: 2, text: ANSWER },
          ],
        },
      ],
    });
    // credited (planner, solver): e1 R 1, 2 steps: (1, 1); e2 R 0, no steps: (0, 0.1); e3 R 1, no steps: (0.5, 1)
    // reward-to-go: planner [2, 0.1, 1.5] (mean 1.2, sample std sqrt(0.97)); solver [1, 0.1, 1] (mean 0.7, std sqrt(0.27))
    const eps = episodesFile([ep('e1', 1, PLAN), ep('e2', 0, 'think'), ep('e3', 1, 'just do it')]);
    const p = (g: number) => (g - 1.2) / (Math.sqrt(0.97) + 1e-5);
    const s = (g: number) => (g - 0.7) / (Math.sqrt(0.27) + 1e-5);
    const line = (id: string, rp: number, rs: number, gp: number, gs: number) => ({
      id,
      actions: [
        { turn: 0, role: 'planner', rewards: [rp], values: null, deltas: null, advantages: [p(gp)], returns: null },
        { turn: 0, role: 'solver', rewards: [0, rs], values: null, deltas: null, advantages: [s(gs), s(gs)], returns: null },
      ],
    });
    expectClose(await inspectJson(config, eps), [line('e1', 1, 1, 2, 1), line('e2', 0, 0.1, 0.1, 0.1), line('e3', 0.5, 1, 1.5, 1)]);
  });
});

describe('marft inspect: bad input names the line and the field', () => {
  const config = configFile({ level: 'token' });
  const good = { id: 'e1', turns: [{ reward: 1, actions: [{ role: 'planner', tokens: 2, values: [0.1, 0.2] }] }] };
  const cases: Array<[string, string, RegExp]> = [
    ['malformed JSON', `${JSON.stringify(good)}\n{"id": "e2", "turns": [\n`, /line 2: not JSON/],
    ['missing turns', JSON.stringify({ id: 'e1' }), /line 1, turns: must be a non-empty array/],
    [
      'missing values at token level',
      JSON.stringify({ id: 'e1', turns: [{ reward: 1, actions: [{ role: 'planner', tokens: 2, value: 0.3 }] }] }),
      /line 1, turns\[0\]\.actions\[0\]\.values: is missing: a token-level PPO config needs the critic value of every generated token/,
    ],
    [
      'tokens vs values',
      JSON.stringify({ id: 'e1', turns: [{ reward: 1, actions: [{ role: 'planner', tokens: 3, values: [0.1, 0.2] }] }] }),
      /line 1, turns\[0\]\.actions\[0\]\.values: has 2 entries but tokens is 3/,
    ],
    [
      'unknown role',
      JSON.stringify({ id: 'e1', turns: [{ reward: 1, actions: [{ role: 'critic', tokens: 2, values: [0.1, 0.2] }] }] }),
      /line 1, turns\[0\]\.actions\[0\]\.role: "critic" is not a role of the run config \(planner, solver\)/,
    ],
    ['unknown field', JSON.stringify({ ...good, reward: 1 }), /line 1, reward: unknown field/],
    [
      'non-finite reward',
      JSON.stringify({ id: 'e1', turns: [{ reward: 'yes', actions: good.turns[0].actions }] }),
      /line 1, turns\[0\]\.reward: must be a finite number/,
    ],
    ['duplicate id', `${JSON.stringify(good)}\n${JSON.stringify(good)}`, /line 2, id: "e1" is also the id of line 1/],
  ];
  for (const [what, text, want] of cases) {
    it(what, async () => {
      await expect(inspect(config, write(text))).rejects.toMatchObject({ code: 'EPISODES_INVALID', message: expect.stringMatching(want) });
    });
  }

  it('ppo.klIn "reward": -klCoef*k3(old, ref) per token joins the rewards (AReaL areal/trainer/ppo/actor.py); logp and refLogp required', async () => {
    const kl = configFile({ level: 'token', ppo: { gamma: 0.9, lambda: 0.8, klIn: 'reward', klCoef: 0.1 } });
    // planner token: k3 = e^(ref-old) - (ref-old) - 1 with ref-old = -0.5: e^-0.5 - 0.5 = 0.10653066; reward -0.010653066
    // solver token: ref = old, k3 = 0: reward R = 1. delta_s = 1 - 0.5; delta_p = r_p + 0.9*0.5 - 0.2; A_p = delta_p + 0.72*0.5
    const rp = -0.1 * (Math.exp(-0.5) - 0.5);
    const eps = episodesFile([
      {
        id: 'k',
        turns: [
          {
            reward: 1,
            actions: [
              { role: 'planner', tokens: 1, values: [0.2], logp: [-1], refLogp: [-1.5] },
              { role: 'solver', tokens: 1, values: [0.5], logp: [-2], refLogp: [-2] },
            ],
          },
        ],
      },
    ]);
    expectClose(await inspectJson(kl, eps), [
      {
        id: 'k',
        actions: [
          { turn: 0, role: 'planner', rewards: [rp], values: [0.2], deltas: [rp + 0.25], advantages: [rp + 0.61], returns: [rp + 0.81] },
          { turn: 0, role: 'solver', rewards: [1], values: [0.5], deltas: [0.5], advantages: [0.5], returns: [1] },
        ],
      },
    ]);
    const without = episodesFile([{ id: 'k', turns: [{ reward: 1, actions: [{ role: 'planner', tokens: 1, values: [0.2] }] }] }]);
    await expect(inspect(kl, without)).rejects.toMatchObject({
      code: 'EPISODES_INVALID',
      message: expect.stringMatching(/actions\[0\]\.logp: is missing: with ppo.klIn "reward"/),
    });
  });

  it('a GRPO group with fewer episodes than rollout.groupSize', async () => {
    const grpo = configFile({ algo: 'grpo', rollout: { groupSize: 3 } });
    const ep = (id: string, group: string) => ({ id, group, turns: [{ reward: 1, actions: [{ role: 'solver', tokens: 1 }] }] });
    const eps = episodesFile([ep('a', 'x'), ep('b', 'x'), ep('c', 'x'), ep('d', 'y'), ep('e', 'y')]);
    await expect(inspect(grpo, eps)).rejects.toMatchObject({
      code: 'EPISODES_GROUP',
      message: expect.stringMatching(/group "y" has 2 episodes \(d, e\); rollout.groupSize is 3/),
    });
    const noGroup = episodesFile([{ id: 'a', turns: [{ reward: 1, actions: [{ role: 'solver', tokens: 1 }] }] }]);
    await expect(inspect(grpo, noGroup)).rejects.toMatchObject({
      code: 'EPISODES_INVALID',
      message: expect.stringMatching(/line 1, group: is missing/),
    });
  });

  it('an unknown --credit and a missing --episodes are usage errors', async () => {
    const eps = episodesFile([good]);
    await expect(inspect(config, eps, '--credit', 'shapley')).rejects.toThrow(
      /--credit must be one of equal, step_discount, per_step, got "shapley"/,
    );
    await expect(inspectCommand(['--config', config], () => {})).rejects.toThrow(/--episodes is required/);
  });
});
