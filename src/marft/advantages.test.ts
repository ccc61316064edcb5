// The advantage code on the path the trainer runs: computeTargets (credit -> GAE -> targets and their
// trace) on hand-built episodes with hand-worked numbers; gae and tokenLevelGae directly only for what an
// iteration's finished episodes cannot show (a truncated rollout, prompt tokens inside the sequence).
import { describe, expect, it } from 'vitest';
import { computeTargets } from './advantage-targets.ts';
import { gae, groupNormalize, normalizeAdvantages, tokenLevelGae } from './advantages.ts';
import type { ActionRecord } from './rollout.ts';
import { duoConfig, handEpisode } from './testing-episodes.ts';

const close = (got: ArrayLike<number>, want: number[], digits = 10) => {
  expect(got.length).toBe(want.length);
  want.forEach((w, i) => expect(got[i], `index ${i}`).toBeCloseTo(w, digits));
};

/** computeTargets over hand-built episodes: per action (acting order, all episodes) its targets. */
function targetsOf(config: ReturnType<typeof duoConfig>, ...built: Array<ReturnType<typeof handEpisode>>) {
  const episodes = built.map((b) => b.episode);
  const t = computeTargets(episodes, new Map(built.flatMap((b) => [...b.scores])), config);
  return episodes.flatMap((ep) => ep.actions).map((a: ActionRecord) => t.get(a)!);
}

describe('action-level GAE', () => {
  it('matches the hand-worked two-turn, two-agent episode', () => {
    // gamma 0.9, lambda 0.5 (gamma*lambda = 0.45). Turn 0: agents (0.5, 0.6), rewards (0, 0);
    // turn 1: agents (0.7, 0.8), rewards (0, 1), done after turn 1 (credit 'equal': team reward 1 on the last agent).
    // t1, last agent (done): delta = 1 + 0 - 0.8 = 0.2;                         A = 0.2
    // t1, agent 0:           delta = 0 + 0.9*0.8 - 0.7 = 0.02;                   A = 0.02 + 0.45*0.2 = 0.11
    // t0, last agent:        delta = 0 + 0.9*V(o^1_1)=0.9*0.7 - 0.6 = 0.03;      A = 0.03 + 0.45*0.11 = 0.0795
    // t0, agent 0:           delta = 0 + 0.9*0.6 - 0.5 = 0.04;                   A = 0.04 + 0.45*0.0795 = 0.075775
    // returns = A + V: 0.575775, 0.6795, 0.81, 1.0
    const cfg = duoConfig('action', 0.9, 0.5);
    const t = targetsOf(
      cfg,
      handEpisode(cfg, [
        {
          teamReward: 0,
          actions: [
            { agent: 0, values: [0.5] },
            { agent: 1, values: [0.6] },
          ],
        },
        {
          teamReward: 1,
          actions: [
            { agent: 0, values: [0.7] },
            { agent: 1, values: [0.8] },
          ],
        },
      ]),
    );
    close(
      t.map((x) => x.reward),
      [0, 0, 0, 1],
    );
    close(
      t.flatMap((x) => x.advantages),
      [0.075775, 0.0795, 0.11, 0.2],
    );
    close(
      t.flatMap((x) => x.returns),
      [0.575775, 0.6795, 0.81, 1.0],
    );
    // the trace holds the terms above: delta, where V_next came from, V_next and A_next
    const steps = t.flatMap((x) => x.trace);
    close(
      steps.map((s) => s.delta),
      [0.04, 0.03, 0.02, 0.2],
    );
    expect(steps.map((s) => s.next)).toEqual(['agent', 'turn', 'agent', 'end']);
    close(
      steps.map((s) => s.nextValue),
      [0.6, 0.7, 0.8, 0],
    );
    close(
      steps.map((s) => s.nextAdvantage),
      [0.0795, 0.11, 0.2, 0],
    );
    for (const s of steps) {
      expect([s.gamma, s.lambda]).toEqual([0.9, 0.5]);
      expect(s.delta).toBe(s.reward + s.gamma * s.nextValue - s.value);
      expect(s.advantage).toBe(s.delta + s.gamma * s.lambda * s.nextAdvantage);
      expect(s.ret).toBe(s.advantage + s.value);
    }
    close(
      steps.map((s) => s.advantage),
      t.flatMap((x) => x.advantages),
      15,
    );
  });
  it('cuts the chain at an episode end and bootstraps a truncated rollout', () => {
    // Episode 1 = turn 0 (done, reward 1 on the last agent); turn 1 starts episode 2, truncated with
    // bootstrap V = 0.5. gamma 0.9, lambda 0.5.
    // t1, last:  delta = 0 + 0.9*0.5 - 0.8 = -0.35;              A = -0.35
    // t1, a0:    delta = 0 + 0.9*0.8 - 0.7 = 0.02;               A = 0.02 + 0.45*(-0.35) = -0.1375
    // t0, last (done): delta = 1 - 0.6 = 0.4;                    A = 0.4 (nothing carried across the end)
    // t0, a0:    delta = 0 + 0.9*0.6 - 0.5 = 0.04;               A = 0.04 + 0.45*0.4 = 0.22
    // The trainer's episodes always finish, so the truncated rollout is gae's flat form (what computeTargets calls).
    const r = gae([0, 1, 0, 0], [0.5, 0.6, 0.7, 0.8], ['agent', 'end', 'agent', 'turn'], { gamma: 0.9, lambda: 0.5, bootstrapValue: 0.5 });
    close(r.advantages, [0.22, 0.4, -0.1375, -0.35]);
    expect(r.trace[3]).toMatchObject({ next: 'turn', nextValue: 0.5 });
    expect(r.trace[1]).toMatchObject({ next: 'end', nextValue: 0, nextAdvantage: 0 });
    // On the trainer's path the second episode finishes too (team reward 0), and episode 1 is unchanged:
    // ep 2, last: delta = 0 + 0 - 0.8 = -0.8, A = -0.8; a0: delta = 0.9*0.8 - 0.7 = 0.02, A = 0.02 + 0.45*(-0.8) = -0.34.
    const cfg = duoConfig('action', 0.9, 0.5);
    const t = targetsOf(
      cfg,
      handEpisode(
        cfg,
        [
          {
            teamReward: 1,
            actions: [
              { agent: 0, values: [0.5] },
              { agent: 1, values: [0.6] },
            ],
          },
        ],
        0,
      ),
      handEpisode(
        cfg,
        [
          {
            teamReward: 0,
            actions: [
              { agent: 0, values: [0.7] },
              { agent: 1, values: [0.8] },
            ],
          },
        ],
        1,
      ),
    );
    close(
      t.flatMap((x) => x.advantages),
      [0.22, 0.4, -0.34, -0.8],
    );
    expect(t.map((x) => x.trace[0].next)).toEqual(['agent', 'end', 'agent', 'end']);
  });
  it('with gamma = lambda = 1 gives reward-to-go minus value', () => {
    const r = gae([0, 0, 1], [0.1, 0.2, 0.3], ['agent', 'agent', 'end'], { gamma: 1, lambda: 1 });
    close(r.advantages, [0.9, 0.8, 0.7]);
  });
  it('checks shapes', () => {
    expect(() => gae([0, 0], [0], ['agent', 'end'], { gamma: 1, lambda: 1 })).toThrow(/SHAPE|length/);
  });
});

describe('token-level GAE', () => {
  it('matches the hand-worked episode (gamma 0.9, lambda 0.5)', () => {
    // Rewards: 0.5 on a0's last token, 1 on a1's last token (credit step_discount 0.5 of team reward 1).
    // gamma*lambda = 0.45. Tokens of a0: V (0.2, 0.4); of a1: V (0.5, 0.6, 0.7).
    // a1 k=2 (last): delta = 1 + 0 - 0.7 = 0.3;                        A = 0.3
    // a1 k=1:        delta = 0 + 0.9*0.7 - 0.6 = 0.03;                 A = 0.03 + 0.45*0.3 = 0.165
    // a1 k=0:        delta = 0 + 0.9*0.6 - 0.5 = 0.04;                 A = 0.04 + 0.45*0.165 = 0.11425
    // a0 k=1 (a0 last; bootstrap from a1's first token):
    //                delta = 0.5 + 0.9*0.5 - 0.4 = 0.55;               A = 0.55 + 0.45*0.11425 = 0.6014125
    // a0 k=0:        delta = 0 + 0.9*0.4 - 0.2 = 0.16;                 A = 0.16 + 0.45*0.6014125 = 0.430635625
    // returns = A + V.
    const cfg = duoConfig('token', 0.9, 0.5);
    cfg.credit = { ...cfg.credit, method: 'step_discount', discount: 0.5 };
    const t = targetsOf(
      cfg,
      handEpisode(cfg, [
        {
          teamReward: 1,
          actions: [
            { agent: 0, values: [0.2, 0.4] },
            { agent: 1, values: [0.5, 0.6, 0.7] },
          ],
        },
      ]),
    );
    close(
      t.map((x) => x.reward),
      [0.5, 1],
    );
    close(
      t.flatMap((x) => x.advantages),
      [0.430635625, 0.6014125, 0.11425, 0.165, 0.3],
    );
    close(
      t.flatMap((x) => x.returns),
      [0.630635625, 1.0014125, 0.61425, 0.765, 1.0],
    );
    const steps = t.flatMap((x) => x.trace);
    close(
      steps.map((s) => s.delta),
      [0.16, 0.55, 0.04, 0.03, 0.3],
    );
    close(
      steps.map((s) => s.reward),
      [0, 0.5, 0, 0, 1],
    );
    expect(steps.map((s) => s.next)).toEqual(['token', 'agent', 'token', 'token', 'end']);
    close(
      steps.map((s) => s.nextValue),
      [0.4, 0.5, 0.6, 0.7, 0],
    );
    close(
      steps.map((s) => s.advantage),
      t.flatMap((x) => x.advantages),
      15,
    );
  });
  it('with gamma = lambda = 1 (AReaL default) gives reward-to-go minus value', () => {
    // Reward-to-go from a0's tokens is 0.5 + 1 = 1.5, from a1's is 1.
    const cfg = duoConfig('token', 1, 1);
    cfg.credit = { ...cfg.credit, method: 'step_discount', discount: 0.5 };
    const t = targetsOf(
      cfg,
      handEpisode(cfg, [
        {
          teamReward: 1,
          actions: [
            { agent: 0, values: [0.2, 0.4] },
            { agent: 1, values: [0.5, 0.6, 0.7] },
          ],
        },
      ]),
    );
    close(
      t.flatMap((x) => x.advantages),
      [1.3, 1.1, 0.5, 0.4, 0.3],
    );
  });
  it('crosses into the next turn from the last agent', () => {
    // One token per action, gamma = lambda = 1, credit equal: reward 1 on turn 1's solver only.
    const cfg = duoConfig('token', 1, 1);
    const t = targetsOf(
      cfg,
      handEpisode(cfg, [
        {
          teamReward: 0,
          actions: [
            { agent: 0, values: [0.1] },
            { agent: 1, values: [0.2] },
          ],
        },
        {
          teamReward: 1,
          actions: [
            { agent: 0, values: [0.3] },
            { agent: 1, values: [0.4] },
          ],
        },
      ]),
    );
    expect(t.map((x) => x.trace[0].next)).toEqual(['agent', 'turn', 'agent', 'end']);
    close(
      t.flatMap((x) => x.advantages),
      [0.9, 0.8, 0.7, 0.6],
    );
  });

  // The sequence layout itself: prompt and transition tokens inside one sequence (values 9 to show they are unused).
  const lossMask = [0, 0, 1, 1, 0, 1, 1, 1];
  const agentIds = [-1, -1, 0, 0, -1, 1, 1, 1];
  const values = [9, 9, 0.2, 0.4, 9, 0.5, 0.6, 0.7];
  it('skips prompt and transition tokens (the same numbers as the hand-worked episode)', () => {
    const r = tokenLevelGae({ values, lossMask, agentIds, actionRewards: [0.5, 1], gamma: 0.9, lambda: 0.5 });
    close(r.advantages, [0, 0, 0.430635625, 0.6014125, 0, 0.11425, 0.165, 0.3]);
    close(r.returns, [0, 0, 0.630635625, 1.0014125, 0, 0.61425, 0.765, 1.0]);
    expect(r.trace.map((s) => s.next)).toEqual(['token', 'agent', 'token', 'token', 'end']);
    const same = tokenLevelGae({ values, lossMask, agentIds, rewards: [0, 0, 0, 0.5, 0, 0, 0, 1], gamma: 0.9, lambda: 0.5 });
    close(same.advantages, Array.from(r.advantages));
    const gamma1 = tokenLevelGae({ values, lossMask, agentIds, actionRewards: [0.5, 1], gamma: 1, lambda: 1 });
    close(gamma1.advantages, [0, 0, 1.3, 1.1, 0, 0.5, 0.4, 0.3]);
  });
  it('rejects rewards on masked tokens and bad agent ids', () => {
    expect(() => tokenLevelGae({ values, lossMask, agentIds, rewards: [1, 0, 0, 0, 0, 0, 0, 0], gamma: 1, lambda: 1 })).toThrow(
      /token 0 has reward 1 but lossMask 0/,
    );
    expect(() =>
      tokenLevelGae({ values, lossMask, agentIds: [-1, -1, -1, 0, -1, 1, 1, 1], actionRewards: [0, 0], gamma: 1, lambda: 1 }),
    ).toThrow(/agent id -1/);
  });
});

describe('KL in the rewards (ppo.klIn "reward")', () => {
  // AReaL-based MARFT areal/trainer/ppo/actor.py compute_advantages: rewards = -kl_ctl * KL(old, ref) on every
  // generated token (estimator clamped to ±10, areal/utils/data.py), the team reward added on top, then GAE.
  // Hand episode: old log-probs -0.9 on every token; reference log-probs a0 (-1.4, -0.9), a1 (-0.9, -2.9, -20).
  // k1 = old - ref: a0 (0.5, 0), a1 (0, 2, 19.1 -> clamped to 10); with kl_ctl 0.1: a0 (-0.05, 0), a1 (0, -0.2, -1).
  const refs = [
    [-1.4, -0.9],
    [-0.9, -2.9, -20],
  ];
  function shaped(level: 'action' | 'token', klIn: 'loss' | 'reward') {
    const cfg = duoConfig(level, 1, 1);
    cfg.ppo = { ...cfg.ppo, klIn, klCoef: 0.1, klEstimator: 'k1' };
    const built = handEpisode(cfg, [
      {
        teamReward: 1,
        actions:
          level === 'token'
            ? [
                { agent: 0, values: [0.2, 0.4] },
                { agent: 1, values: [0.5, 0.6, 0.7] },
              ]
            : [
                { agent: 0, values: [0.3], ids: [5, 6] },
                { agent: 1, values: [0.6], ids: [5, 6, 7] },
              ],
      },
    ]);
    built.episode.actions.forEach((a, i) => {
      built.scores.get(a)!.refLogp = refs[i];
    });
    return targetsOf(cfg, built);
  }
  it('token level: on every generated token before GAE', () => {
    // credit equal: R = 1 on a1's last token -> token rewards (-0.05, 0 | 0, -0.2, 1 - 1 = 0); gamma = lambda = 1:
    // A = reward-to-go - V = (-0.25 - 0.2, -0.2 - 0.4, -0.2 - 0.5, -0.2 - 0.6, 0 - 0.7)
    const t = shaped('token', 'reward');
    close(
      t.flatMap((x) => x.advantages),
      [-0.45, -0.6, -0.7, -0.8, -0.7],
    );
    close(
      t.flatMap((x) => x.trace).map((st) => st.reward),
      [-0.05, 0, 0, -0.2, 0],
    );
    close(
      t.map((x) => x.reward),
      [0, 1],
    ); // the credited reward, without the KL part
    // klIn "loss" (today's placement): the rewards carry no KL, whatever klCoef says
    close(
      shaped('token', 'loss').flatMap((x) => x.advantages),
      [0.8, 0.6, 0.5, 0.4, 0.3],
    );
  });
  it("action level: the action's tokens' penalties summed onto its reward", () => {
    // a0: 0 + (-0.05 + 0) = -0.05; a1: 1 + (0 - 0.2 - 1) = -0.2; A = reward-to-go - V = (-0.25 - 0.3, -0.2 - 0.6)
    const t = shaped('action', 'reward');
    close(
      t.flatMap((x) => x.trace).map((st) => st.reward),
      [-0.05, -0.2],
    );
    close(
      t.flatMap((x) => x.advantages),
      [-0.55, -0.8],
    );
    close(
      shaped('action', 'loss').flatMap((x) => x.advantages),
      [0.7, 0.4],
    );
  });
  it('needs the reference log-probs', () => {
    const cfg = duoConfig('token', 1, 1);
    cfg.ppo = { ...cfg.ppo, klIn: 'reward', klCoef: 0.1 };
    expect(() => targetsOf(cfg, handEpisode(cfg, [{ teamReward: 1, actions: [{ agent: 0, values: [0.2] }] }]))).toThrow(
      /klRewards: refLogp has length 0, expected 1/,
    );
  });
});

describe('GRPO group normalisation', () => {
  it('normalises within groups (sample std by default)', () => {
    // Group 1 = [1, 0, 0, 1]: mean 0.5; sample variance = 4 * 0.25 / 3 = 1/3, std = 0.5773503;
    // A = +-0.5 / (0.5773503 + 1e-5) = +-0.8660104 (eps 1e-5, AReaL's). Group 2 = [1, 1, 1, 1]: all equal -> 0.
    close(groupNormalize([1, 0, 0, 1, 1, 1, 1, 1], 4), [0.8660104, -0.8660104, -0.8660104, 0.8660104, 0, 0, 0, 0], 6);
    // Population std of group 1 = 0.5 -> A = +-1.
    close(groupNormalize([1, 0, 0, 1], 4, { std: 'population', eps: 0 }), [1, -1, -1, 1]);
    // Dr. GRPO: no std division -> r - mean.
    close(groupNormalize([1, 0, 0, 0], 4, { std: 'none' }), [0.75, -0.25, -0.25, -0.25]);
    close(groupNormalize([3], 1), [0]);
    // A constant group is exactly 0, even where its mean rounds ((0.1 + 0.1 + 0.1) / 3 != 0.1) and with no eps.
    expect(Array.from(groupNormalize([0.1, 0.1, 0.1], 3, { std: 'population', eps: 0 }))).toEqual([0, 0, 0]);
    expect(() => groupNormalize([1, 2, 3], 2)).toThrow(/do not split into groups of 2/);
  });
});

describe('advantage normalisation', () => {
  it('takes statistics over non-zero masked-in entries', () => {
    // adv [2, 0, 4, 6, 100], mask [1, 1, 1, 1, 0]: statistics over {2, 4, 6} (0 excluded, 100 masked out):
    // mean 4, population variance (4 + 0 + 4)/3 = 8/3, std = 1.6329932.
    // out = (a - 4)/std on masked-in entries: [-1.2247449, -2.4494897, 0, 1.2247449], masked-out -> 0.
    close(normalizeAdvantages([2, 0, 4, 6, 100], [1, 1, 1, 1, 0], { eps: 0 }), [-1.2247449, -2.4494897, 0, 1.2247449, 0], 6);
    // Zeros included: {2, 0, 4, 6}, mean 3, variance (1 + 9 + 1 + 9)/4 = 5, std 2.2360680.
    close(normalizeAdvantages([2, 0, 4, 6], undefined, { excludeZeros: false, eps: 0 }), [-0.4472136, -1.3416408, 0.4472136, 1.3416408], 6);
    close(normalizeAdvantages([0, 0], [1, 1]), [0, 0]);
  });
});
