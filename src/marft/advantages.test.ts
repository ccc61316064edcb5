import { describe, expect, it } from 'vitest';
import { actionLevelGae, gae, groupNormalize, normalizeAdvantages, tokenLevelGae } from './advantages.ts';

const close = (got: ArrayLike<number>, want: number[], digits = 10) => {
  expect(got.length).toBe(want.length);
  want.forEach((w, i) => expect(got[i], `index ${i}`).toBeCloseTo(w, digits));
};

describe('action-level GAE', () => {
  it('matches the hand-worked two-turn, two-agent episode', () => {
    // gamma 0.9, lambda 0.5 (gamma*lambda = 0.45). Turn 0: agents (0.5, 0.6), rewards (0, 0);
    // turn 1: agents (0.7, 0.8), rewards (0, 1), done after turn 1.
    // t1, last agent (done): delta = 1 + 0 - 0.8 = 0.2;                         A = 0.2
    // t1, agent 0:           delta = 0 + 0.9*0.8 - 0.7 = 0.02;                   A = 0.02 + 0.45*0.2 = 0.11
    // t0, last agent:        delta = 0 + 0.9*V(o^1_1)=0.9*0.7 - 0.6 = 0.03;      A = 0.03 + 0.45*0.11 = 0.0795
    // t0, agent 0:           delta = 0 + 0.9*0.6 - 0.5 = 0.04;                   A = 0.04 + 0.45*0.0795 = 0.075775
    // returns = A + V: 0.575775, 0.6795, 0.81, 1.0
    const r = actionLevelGae([[0, 0], [0, 1]], [[0.5, 0.6], [0.7, 0.8]], [false, true], { gamma: 0.9, lambda: 0.5 });
    close(r.advantages.flat(), [0.075775, 0.0795, 0.11, 0.2]);
    close(r.returns.flat(), [0.575775, 0.6795, 0.81, 1.0]);
  });
  it('cuts the chain at an episode end and bootstraps a truncated rollout', () => {
    // Episode 1 = turn 0 (done, reward 1 on the last agent); turn 1 starts episode 2, truncated with
    // bootstrap V = 0.5. gamma 0.9, lambda 0.5.
    // t1, last:  delta = 0 + 0.9*0.5 - 0.8 = -0.35;              A = -0.35
    // t1, a0:    delta = 0 + 0.9*0.8 - 0.7 = 0.02;               A = 0.02 + 0.45*(-0.35) = -0.1375
    // t0, last (done): delta = 1 - 0.6 = 0.4;                    A = 0.4 (nothing carried across the end)
    // t0, a0:    delta = 0 + 0.9*0.6 - 0.5 = 0.04;               A = 0.04 + 0.45*0.4 = 0.22
    const r = actionLevelGae([[0, 1], [0, 0]], [[0.5, 0.6], [0.7, 0.8]], [true, false], { gamma: 0.9, lambda: 0.5, bootstrapValue: 0.5 });
    close(r.advantages.flat(), [0.22, 0.4, -0.1375, -0.35]);
  });
  it('with gamma = lambda = 1 gives reward-to-go minus value', () => {
    const r = gae([0, 0, 1], [0.1, 0.2, 0.3], [0, 0, 1], { gamma: 1, lambda: 1 });
    close(r.advantages, [0.9, 0.8, 0.7]);
  });
  it('checks shapes', () => {
    expect(() => actionLevelGae([[0, 0]], [[0]], [true], { gamma: 1, lambda: 1 })).toThrow(/SHAPE|length/);
  });
});

describe('token-level GAE', () => {
  // Tokens: [p, p, a0, a0, transition, a1, a1, a1]; values on prompt tokens are 9 to show they are unused.
  const lossMask = [0, 0, 1, 1, 0, 1, 1, 1];
  const agentIds = [-1, -1, 0, 0, -1, 1, 1, 1];
  const values = [9, 9, 0.2, 0.4, 9, 0.5, 0.6, 0.7];
  it('matches the hand-worked episode (gamma 0.9, lambda 0.5)', () => {
    // Rewards: 0.5 on a0's last token (index 3), 1 on a1's last token (index 7). gamma*lambda = 0.45.
    // k=7 (last): delta = 1 + 0 - 0.7 = 0.3;                          A = 0.3
    // k=6:        delta = 0 + 0.9*0.7 - 0.6 = 0.03;                   A = 0.03 + 0.45*0.3 = 0.165
    // k=5:        delta = 0 + 0.9*0.6 - 0.5 = 0.04;                   A = 0.04 + 0.45*0.165 = 0.11425
    // k=4: skipped (transition token)
    // k=3 (a0 last; bootstrap from a1's first token, k=5):
    //             delta = 0.5 + 0.9*0.5 - 0.4 = 0.55;                 A = 0.55 + 0.45*0.11425 = 0.6014125
    // k=2:        delta = 0 + 0.9*0.4 - 0.2 = 0.16;                   A = 0.16 + 0.45*0.6014125 = 0.430635625
    // returns = A + V on generated tokens, 0 elsewhere.
    const r = tokenLevelGae({ values, lossMask, agentIds, actionRewards: [0.5, 1], gamma: 0.9, lambda: 0.5 });
    close(r.advantages, [0, 0, 0.430635625, 0.6014125, 0, 0.11425, 0.165, 0.3]);
    close(r.returns, [0, 0, 0.630635625, 1.0014125, 0, 0.61425, 0.765, 1.0]);
    const same = tokenLevelGae({ values, lossMask, agentIds, rewards: [0, 0, 0, 0.5, 0, 0, 0, 1], gamma: 0.9, lambda: 0.5 });
    close(same.advantages, Array.from(r.advantages));
  });
  it('with gamma = lambda = 1 (AReaL default) gives reward-to-go minus value', () => {
    // Reward-to-go from a0's tokens is 0.5 + 1 = 1.5, from a1's is 1.
    const r = tokenLevelGae({ values, lossMask, agentIds, actionRewards: [0.5, 1], gamma: 1, lambda: 1 });
    close(r.advantages, [0, 0, 1.3, 1.1, 0, 0.5, 0.4, 0.3]);
  });
  it('rejects rewards on masked tokens and bad agent ids', () => {
    expect(() => tokenLevelGae({ values, lossMask, agentIds, rewards: [1, 0, 0, 0, 0, 0, 0, 0], gamma: 1, lambda: 1 })).toThrow(/token 0 has reward 1 but lossMask 0/);
    expect(() => tokenLevelGae({ values, lossMask, agentIds: [-1, -1, -1, 0, -1, 1, 1, 1], actionRewards: [0, 0], gamma: 1, lambda: 1 })).toThrow(/agent id -1/);
  });
});

describe('GRPO group normalisation', () => {
  it('normalises within groups (sample std by default)', () => {
    // Group 1 = [1, 0, 0, 1]: mean 0.5; sample variance = 4 * 0.25 / 3 = 1/3, std = 0.5773503;
    // A = +-0.5 / 0.5773503 = +-0.8660254. Group 2 = [1, 1, 1, 1]: all equal -> 0.
    close(groupNormalize([1, 0, 0, 1, 1, 1, 1, 1], 4), [0.8660254, -0.8660254, -0.8660254, 0.8660254, 0, 0, 0, 0], 5);
    // Population std of group 1 = 0.5 -> A = +-1.
    close(groupNormalize([1, 0, 0, 1], 4, { std: 'population', eps: 0 }), [1, -1, -1, 1]);
    // Dr. GRPO: no std division -> r - mean.
    close(groupNormalize([1, 0, 0, 0], 4, { std: 'none' }), [0.75, -0.25, -0.25, -0.25]);
    close(groupNormalize([3], 1), [0]);
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
