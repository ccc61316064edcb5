// GRPO's advantages, worked by hand: computeTargets (advantage-targets.ts) and what the update trains on
// (minibatchAdvantages in update.ts), on hand-made episodes (no GPU).
// References: AReaL v0.5.3 areal/engine/ppo/actor.py (compute_advantages: with no critic the values are 0
// and gamma = lambda = 1, so each token's advantage is its reward-to-go; adv_norm is applied once, after it,
// and ppo_update does not normalise again), areal/utils/data.py (Normalization with mean_level and
// std_level 'group': mean and unbiased std pooled over the loss mask of a group's samples, eps 1e-5), the
// AReaL-based MARFT's areal/workflow/multi_agent/credit.py (each agent step's reward on its last generated
// token: equal, step_discount, per_step), and AT-GRPO's agent- and turn-wise groups (groupNorm agent_turn).

import { describe, expect, it } from 'vitest';
import { presetGraph } from '../config/presets.ts';
import { type RunConfig, parseRunConfig, targetKlOf } from '../config/run-config.ts';
import { computeTargets, creditRewards, shapedTeamRewards } from './advantage-targets.ts';
import { normalizePooled } from './advantages.ts';
import { actionLevelPolicyLoss } from './losses.ts';
import type { ActionRecord, EpisodeRecord } from './rollout.ts';
import type { ActionScores } from './score.ts';
import { inspectEpisode } from './inspect.ts';
import { handEpisode } from './testing-episodes.ts';
import { minibatchAdvantages } from './update.ts';

const grpo = (over: Record<string, unknown> = {}): RunConfig =>
  parseRunConfig({
    graph: presetGraph('duo'),
    algo: 'grpo',
    level: 'token',
    rollout: { groupSize: 4, episodes: 2, horizon: 1 },
    ...over,
  });

/** Episodes of one turn each (planner then solver): [team reward, planner tokens, solver tokens, planner text?, solver text?]. */
function episodes(config: RunConfig, specs: Array<[number, number, number, string?, string?]>) {
  const scores = new Map<ActionRecord, ActionScores>();
  const eps: EpisodeRecord[] = specs.map(([R, np, ns, tp, ts], i) => {
    const h = handEpisode(
      config,
      [
        {
          teamReward: R,
          actions: [
            { agent: 0, values: new Array(np).fill(0) },
            { agent: 1, values: new Array(ns).fill(0) },
          ],
        },
      ],
      i,
    );
    if (tp !== undefined) h.episode.actions[0].text = tp;
    if (ts !== undefined) h.episode.actions[1].text = ts;
    h.scores.forEach((v, k) => scores.set(k, v));
    return h.episode;
  });
  return { eps, scores };
}

const closeAll = (got: number[], want: number, digits = 6) => {
  for (const x of got) expect(x).toBeCloseTo(want, digits);
};

// The issue's example: group A rewards [1, 0, 0, 0] with 10/30/30/30 tokens (planner 5 + solver 5, then
// 15 + 15), group B [1, 1, 1, 1] with 10 tokens each; credit 'equal' (the whole reward on the solver).
const ISSUE: Array<[number, number, number]> = [
  [1, 5, 5],
  [0, 15, 15],
  [0, 15, 15],
  [0, 15, 15],
  [1, 5, 5],
  [1, 5, 5],
  [1, 5, 5],
  [1, 5, 5],
];

describe('GRPO advantages, normalised once', () => {
  it("the issue's worked example: B is exactly 0, A carries the token-pooled value, and the update uses them as they are", () => {
    const config = grpo();
    expect(config.ppo.groupNorm).toBe('pooled');
    const { eps, scores } = episodes(config, ISSUE);
    const t = computeTargets(eps, scores, config);
    // A pools its 100 generated tokens: 10 carry 1, 90 carry 0. Mean 0.1; unbiased variance
    // (10 * 0.81 + 90 * 0.01) / 99 = 0.0909..., std 0.3015113446; winner 0.9 / 0.3015213446 = 2.9848633146,
    // losers -0.1 / 0.3015213446 = -0.3316514794 on every token: a short winner weighs less than a sample.
    closeAll(
      eps[0].actions.flatMap((a) => t.get(a)!.advantages),
      2.9848633146,
      9,
    );
    for (const e of eps.slice(1, 4))
      closeAll(
        e.actions.flatMap((a) => t.get(a)!.advantages),
        -0.3316514794,
        9,
      );
    // B: every reward 1, no signal: exactly 0 on every token.
    for (const e of eps.slice(4)) for (const a of e.actions) expect(t.get(a)!.advantages.every((x) => x === 0)).toBe(true);

    // The update's minibatch (all 8 episodes in one, advantageNorm on, its default): the same numbers.
    const pm = eps.flatMap((e) => e.actions);
    expect(config.ppo.advantageNorm).toBe(true);
    const { advOf, Z } = minibatchAdvantages(pm, t, config);
    expect(Z).toBe(10 + 90 + 40);
    for (const a of pm) expect(advOf.get(a)).toEqual(t.get(a)!.advantages);
    // pooled over tokens, A's advantages average 0 per token (10 * 2.98 = 90 * 0.33)
    const a = eps.slice(0, 4).flatMap((e) => e.actions.flatMap((x) => t.get(x)!.advantages));
    expect(a.reduce((x, y) => x + y, 0)).toBeCloseTo(0, 9);
  });

  it('Dr. GRPO (groupStd none) and population std', () => {
    const none = grpo({ ppo: { groupStd: 'none' } });
    let { eps, scores } = episodes(none, ISSUE);
    let t = computeTargets(eps, scores, none);
    // x - mean over A's tokens (mean 0.1), no std scaling and no eps: winner 0.9, losers -0.1, B 0.
    closeAll(t.get(eps[0].actions[1])!.advantages, 0.9, 12);
    closeAll(t.get(eps[2].actions[0])!.advantages, -0.1, 12);
    expect(t.get(eps[5].actions[1])!.advantages.every((x) => x === 0)).toBe(true);
    const pm = eps.flatMap((e) => e.actions);
    for (const a of pm) expect(minibatchAdvantages(pm, t, none).advOf.get(a)).toEqual(t.get(a)!.advantages); // scaling not brought back

    const pop = grpo({ ppo: { groupStd: 'population' } });
    ({ eps, scores } = episodes(pop, ISSUE));
    t = computeTargets(eps, scores, pop);
    // population std sqrt(9 / 100) = 0.3: 0.9 / 0.30001 = 2.9999000033, -0.1 / 0.30001 = -0.3333222226.
    closeAll(t.get(eps[0].actions[0])!.advantages, 2.9999000033, 9);
    closeAll(t.get(eps[3].actions[1])!.advantages, -0.3333222226, 9);
    expect(t.get(eps[7].actions[0])!.advantages.every((x) => x === 0)).toBe(true);
  });

  it('PPO still normalises over the minibatch when advantageNorm is on (and not when off)', () => {
    const ppo = parseRunConfig({ graph: presetGraph('duo'), level: 'token' });
    const { eps } = episodes(ppo, [
      [1, 1, 1],
      [0, 1, 1],
    ]);
    const adv = [
      [2, 0],
      [4, 6],
    ];
    const t = new Map(
      eps.flatMap((e) => e.actions).map((a, i) => [a, { reward: 0, advantages: [adv[Math.floor(i / 2)][i % 2]], returns: [0], trace: [] }]),
    );
    const pm = eps.flatMap((e) => e.actions);
    // [2, 0, 4, 6]: statistics over {2, 4, 6}: mean 4, std sqrt(8/3) = 1.6329932 (+1e-5)
    const got = pm.map((a) => minibatchAdvantages(pm, t, ppo).advOf.get(a)![0]);
    got.forEach((x, i) => expect(x).toBeCloseTo(([2, 0, 4, 6][i] - 4) / (Math.sqrt(8 / 3) + 1e-5), 10));
    const off = parseRunConfig({ graph: presetGraph('duo'), level: 'token', ppo: { advantageNorm: false } });
    expect(pm.map((a) => minibatchAdvantages(pm, t, off).advOf.get(a)![0])).toEqual([2, 0, 4, 6]);
  });
});

it("action level: one advantage per action (its tokens' common value), Z counts actions, and the loss takes the whole action's ratio", () => {
  // Once GRPO ignored `level` and always trained per token, so its action and token rows of the learning
  // matrix were one setting. At action level the advantage enters appo_trainer.py's action-level loss.
  const config = grpo({ level: 'action' });
  const { eps, scores } = episodes(config, ISSUE);
  const t = computeTargets(eps, scores, config);
  const pm = eps.flatMap((e) => e.actions);
  const { advOf, Z } = minibatchAdvantages(pm, t, config);
  expect(Z).toBe(16); // 8 episodes x 2 actions, not 140 tokens
  expect(advOf.get(eps[0].actions[1])![0]).toBeCloseTo(2.9848633146, 9);
  expect(advOf.get(eps[1].actions[0])![0]).toBeCloseTo(-0.3316514794, 9);
  for (const a of pm) expect(advOf.get(a)).toEqual([t.get(a)!.advantages[0]]); // no second normalisation
  expect(targetKlOf(config)).toBe(1e-3); // the action-level threshold (appo_trainer.py), per action
  // The winner's planner action (5 tokens), each token's log-prob raised by 0.02: the action's ratio is
  // exp(0.1), inside the clip (0.2), so the loss is -A * exp(0.1) / Z and so is each token's gradient.
  const A = advOf.get(eps[0].actions[0])![0];
  const old = [-1, -1, -1, -1, -1];
  const x = actionLevelPolicyLoss({
    tokenLogp: old.map((v) => v + 0.02),
    oldTokenLogp: old,
    spans: [{ agent: 0, start: 0, end: 5 }],
    advantages: [A],
    norm: 'sum',
    wordCounts: [1],
    clip: 0.2,
    normalizer: Z,
  });
  expect(x.loss).toBeCloseTo((-A * Math.exp(0.1)) / Z, 12);
  for (const g of x.dTokenLogp) expect(g).toBeCloseTo((-A * Math.exp(0.1)) / Z, 12);
});

// Hand-worked from AReaL v0.5.3's areal/utils/data.py (Normalization, mean_level and std_level 'group'):
// mean = sum(x * mask) / sum(mask), std = sqrt(sum(((x - mean) * mask)^2) / (sum(mask) - 1)),
// A = (x - mean) * mask / (std + 1e-5), over every generated token of a group's samples.
describe("GRPO as AReaL normalises it (pooled over the group's generated tokens)", () => {
  it('the loss mask leaves prompt and transition tokens out of the statistics and gives them 0', () => {
    // a prompt token (5) and a transition token (9) between two actions' tokens [1, 1] and [0, 0]
    const x = [5, 1, 1, 9, 0, 0];
    const mask = [0, 1, 1, 0, 1, 1];
    // over [1, 1, 0, 0]: mean 0.5, std sqrt(1 / 3) = 0.5773502692; +-0.5 / 0.5773602692 = +-0.8660104040
    const got = normalizePooled(x, mask);
    expect(got[0]).toBe(0);
    expect(got[3]).toBe(0);
    [1, 2].forEach((k) => expect(got[k]).toBeCloseTo(0.866010404, 9));
    [4, 5].forEach((k) => expect(got[k]).toBeCloseTo(-0.866010404, 9));
    // the masked values do not move the others: the same tokens without them give the same numbers
    expect(Array.from(normalizePooled([1, 1, 0, 0], [1, 1, 1, 1]))).toEqual([got[1], got[2], got[4], got[5]]);
  });

  it("step_discount gives advantages different from equal's (the scale of the planner's reward-to-go survives)", () => {
    const cfg = (credit: Record<string, unknown>) => grpo({ credit, rollout: { groupSize: 2, episodes: 1, horizon: 1 } });
    const adv = (config: RunConfig) => {
      const { eps, scores } = episodes(config, [
        [1, 2, 2],
        [0, 2, 2],
      ]);
      const t = computeTargets(eps, scores, config);
      return eps.map((e) => e.actions.map((a) => t.get(a)!.advantages));
    };
    // equal: reward-to-go R on every token: [1, 1, 1, 1 | 0, 0, 0, 0], mean 0.5, std 0.5345224838;
    // +-0.5 / 0.5345324838 = +-0.9353968471
    const eq = adv(cfg({ method: 'equal' }));
    closeAll(eq[0].flat(), 0.9353968471, 9);
    closeAll(eq[1].flat(), -0.9353968471, 9);
    // step_discount d 0.5: planner 0.5 R, solver R on its last token; reward-to-go planner 1.5 R, solver R:
    // [1.5, 1.5, 1, 1 | 0, 0, 0, 0], mean 0.625, std 0.6943650748 (+1e-5):
    // planner (1.5 - 0.625) / 0.6943750748 = 1.2601258768, solver 0.375 / ... = 0.5400539472,
    // the wrong sample's tokens -0.625 / ... = -0.9000899120
    const sd = adv(cfg({ method: 'step_discount', discount: 0.5 }));
    closeAll(sd[0][0], 1.2601258768, 9);
    closeAll(sd[0][1], 0.5400539472, 9);
    closeAll(sd[1].flat(), -0.900089912, 9);
    expect(sd[0][0][0]).not.toBeCloseTo(eq[0][0][0], 2);
    // AT-GRPO's agent-and-turn groups normalise the scale away: planner [1.5, 0] and solver [1, 0] each
    // give +-0.70710 (1.5 and 1 differ only through eps), equal's numbers there
    const at = (credit: Record<string, unknown>) =>
      adv(grpo({ credit, ppo: { groupNorm: 'agent_turn' }, rollout: { groupSize: 2, episodes: 1, horizon: 1 } }));
    const atSd = at({ method: 'step_discount', discount: 0.5 });
    const atEq = at({ method: 'equal' });
    closeAll(atSd[0][0], 0.7071001146, 9);
    closeAll(atSd[0][1], 0.7070967813, 9);
    closeAll(atEq[0].flat(), 0.7070967813, 9);
    expect(atSd[0][0][0]).toBeCloseTo(atEq[0][0][0], 5);
  });

  it('a group of equal rewards gives 0 on every token; step_discount with equal rewards still ranks the planner above the solver', () => {
    for (const credit of [{ method: 'equal' }, { method: 'per_step', perStep: { planner: 'team', solver: 'team' }, rewardSharing: true }]) {
      const config = grpo({ credit, rollout: { groupSize: 4, episodes: 1, horizon: 1 } });
      const { eps, scores } = episodes(config, [
        [1, 2, 3],
        [1, 4, 1],
        [1, 1, 1],
        [1, 3, 5],
      ]);
      const t = computeTargets(eps, scores, config);
      for (const a of eps.flatMap((e) => e.actions)) expect(t.get(a)!.advantages.every((x) => x === 0)).toBe(true);
    }
    const zero = grpo({ credit: { method: 'step_discount', discount: 0.5 }, rollout: { groupSize: 2, episodes: 1, horizon: 1 } });
    let { eps, scores } = episodes(zero, [
      [0, 2, 2],
      [0, 2, 2],
    ]);
    let t = computeTargets(eps, scores, zero);
    for (const a of eps.flatMap((e) => e.actions)) expect(t.get(a)!.advantages.every((x) => x === 0)).toBe(true);
    // every sample right (R 1): tokens [1.5, 1.5, 1, 1] twice, mean 1.25, std 0.2672612419: AReaL's pooled
    // statistic gives the planner +0.25 / 0.2672712419 = +0.9353793480 and the solver -0.9353793480
    ({ eps, scores } = episodes(zero, [
      [1, 2, 2],
      [1, 2, 2],
    ]));
    t = computeTargets(eps, scores, zero);
    for (const e of eps) {
      closeAll(t.get(e.actions[0])!.advantages, 0.935379348, 9);
      closeAll(t.get(e.actions[1])!.advantages, -0.935379348, 9);
    }
  });

  it("per_step: every token against the group's tokens (planner 2 tokens, solver 3)", () => {
    const config = grpo({
      credit: { method: 'per_step', perStep: { planner: 'planner', solver: 'solver' } },
      rollout: { groupSize: 4, episodes: 1, horizon: 1 },
    });
    const { eps, scores } = episodes(config, PER_STEP);
    const t = computeTargets(eps, scores, config);
    // reward-to-go planner [2, 0.6, 1.5, 0.5], solver [1, 0.1, 1, 0]; 20 tokens, mean 0.775, std 0.6381511123
    const m = 0.775;
    const sd = 0.6381511123 + 1e-5;
    [2, 0.6, 1.5, 0.5].forEach((g, e) => closeAll(t.get(eps[e].actions[0])!.advantages, (g - m) / sd, 8));
    [1, 0.1, 1, 0].forEach((g, e) => closeAll(t.get(eps[e].actions[1])!.advantages, (g - m) / sd, 8));
    closeAll(t.get(eps[0].actions[0])!.advantages, 1.9195779505, 8);
  });
});

const PLAN = '1. add\n2. multiply';
/** Four samples of one task, per_step helpers planner and solver (planner 2 tokens, solver 3). */
const PER_STEP: Array<[number, number, number, string, string]> = [
  [1, 2, 3, PLAN, '\\boxed{4}'], // planner 0.5 * 1 + 0.5 * 1 = 1, solver 1 -> reward-to-go planner 2, solver 1
  [0, 2, 3, PLAN, '\\boxed{5}'], // planner 0.5, solver 0.1 (answered, wrong) -> planner 0.6, solver 0.1
  [1, 2, 3, 'think', '\\boxed{4}'], // planner 0 + 0.5, solver 1 -> planner 1.5, solver 1
  [0, 2, 3, PLAN, 'no answer'], // planner 0.5, solver 0 -> planner 0.5, solver 0
];

describe("GRPO with agent-and-turn groups (AT-GRPO): each action against the same agent's call in the other samples", () => {
  const at = (over: Record<string, unknown>) => grpo({ ...over, ppo: { groupNorm: 'agent_turn' } });

  it("per_step: the solver's advantage does not carry the planner's bonus (token and action level)", () => {
    for (const level of ['token', 'action'] as const) {
      const config = at({
        level,
        credit: { method: 'per_step', perStep: { planner: 'planner', solver: 'solver' } },
        rollout: { groupSize: 4, episodes: 1, horizon: 1 },
      });
      const { eps, scores } = episodes(config, PER_STEP);
      const t = computeTargets(eps, scores, config);
      expect(eps.map((e) => t.get(e.actions[0])!.reward)).toEqual([1, 0.5, 0.5, 0.5]);
      expect(eps.map((e) => t.get(e.actions[1])!.reward)).toEqual([1, 0.1, 1, 0]);
      // solver's first call: [1, 0.1, 1, 0], mean 0.525, sample std sqrt(0.9075 / 3) = 0.55:
      // (G - 0.525) / 0.55001 = [0.8636206614, -0.7727132234, 0.8636206614, -0.9545280995]
      [0.8636206614, -0.7727132234, 0.8636206614, -0.9545280995].forEach((w, e) => {
        const adv = t.get(eps[e].actions[1])!.advantages;
        expect(adv.length).toBe(3);
        closeAll(adv, w, 9);
      });
      // planner's first call: [2, 0.6, 1.5, 0.5], mean 1.15, sample std sqrt(1.57 / 3) = 0.7234178138:
      // [1.1749617360, -0.7602693586, 0.4838077737, -0.8985001511]
      [1.174961736, -0.7602693586, 0.4838077737, -0.8985001511].forEach((w, e) => closeAll(t.get(eps[e].actions[0])!.advantages, w, 9));
      // solvers 0 and 2 answered alike and get the same advantage
      const pm = eps.flatMap((e) => e.actions);
      // the update trains on them as they are: one per token, or at action level the action's one value
      const perUnit = (a: ActionRecord) => (level === 'action' ? t.get(a)!.advantages.slice(0, 1) : t.get(a)!.advantages);
      for (const a of pm) expect(minibatchAdvantages(pm, t, config).advOf.get(a)).toEqual(perUnit(a));
      // the inspector shows the numbers the update uses, on every token of the action
      const shown = inspectEpisode({ iteration: 0, config, episodes: eps, scores, targets: t, decode: (ids) => ids.join(' ') }, 2);
      shown.actions.forEach((s, i) => {
        for (const k of s.tokens) expect(k.advantage).toBe(perUnit(eps[2].actions[i])[0]);
      });
      expect(shown.actions.map((a) => a.tokens.map((k) => k.reward))).toEqual([
        [0, 0.5],
        [0, 0, 1],
      ]);
    }
  });

  it("step_discount across turns: the k-th call of an agent meets the other samples' k-th call of that agent", () => {
    // Two turns: episode 0 wrong then right (turn rewards 0, 1), episode 1 right at once (done after turn 0).
    const config = at({ credit: { method: 'step_discount', discount: 0.5 }, rollout: { groupSize: 2, episodes: 1, horizon: 2 } });
    const e0 = handEpisode(
      config,
      [
        {
          teamReward: 0,
          actions: [
            { agent: 0, values: [0, 0] },
            { agent: 1, values: [0, 0] },
          ],
        },
        {
          teamReward: 1,
          actions: [
            { agent: 0, values: [0, 0] },
            { agent: 1, values: [0, 0] },
          ],
        },
      ],
      0,
    );
    const e1 = handEpisode(
      config,
      [
        {
          teamReward: 1,
          actions: [
            { agent: 0, values: [0, 0] },
            { agent: 1, values: [0, 0] },
          ],
        },
      ],
      1,
    );
    const t = computeTargets([e0.episode, e1.episode], new Map([...e0.scores, ...e1.scores]), config);
    // credited: e0 [0, 0, 0.5, 1], e1 [0.5, 1]; reward-to-go: e0 [1.5, 1.5, 1.5, 1], e1 [1.5, 1].
    // planner's 1st call: [1.5, 1.5] -> 0 (the turn-0 planner gets its later turn's reward, as every token's reward-to-go does);
    // solver's 1st call: [1.5, 1] -> mean 1.25, std 0.3535533906 -> +-0.25 / 0.3535633906 = +-0.7070867818;
    // 2nd calls: episode 0 only -> 0.
    const adv = (ep: EpisodeRecord) => ep.actions.map((a) => t.get(a)!.advantages[0]);
    const a0 = adv(e0.episode);
    const a1 = adv(e1.episode);
    expect(a0[0]).toBe(0);
    expect(a1[0]).toBe(0);
    expect(a0[1]).toBeCloseTo(0.7070867818, 9);
    expect(a1[1]).toBeCloseTo(-0.7070867818, 9);
    expect([a0[2], a0[3]]).toEqual([0, 0]);
  });

  it('a dynamic orchestrator: groups follow the agent and its call count, not the position', () => {
    // sample 0: orchestrator, planner, solver; sample 1: orchestrator, solver (the planner skipped).
    // By position the 2nd action would be sample 0's planner against sample 1's solver.
    const graph = presetGraph('orchestrated');
    const config = at({ graph, credit: { method: 'step_discount', discount: 0.5 }, rollout: { groupSize: 2, episodes: 1, horizon: 1 } });
    const solver = graph.agents.findIndex((a) => a.role === 'solver');
    const planner = graph.agents.findIndex((a) => a.role === 'planner');
    const e0 = handEpisode(
      config,
      [
        {
          teamReward: 1,
          actions: [
            { agent: 0, values: [0] },
            { agent: planner, values: [0] },
            { agent: solver, values: [0] },
          ],
        },
      ],
      0,
    );
    const e1 = handEpisode(
      config,
      [
        {
          teamReward: 0,
          actions: [
            { agent: 0, values: [0] },
            { agent: solver, values: [0] },
          ],
        },
      ],
      1,
    );
    const t = computeTargets([e0.episode, e1.episode], new Map([...e0.scores, ...e1.scores]), config);
    // credited e0 [0.25, 0.5, 1] (reward-to-go [1.75, 1.5, 1]), e1 [0, 0] (reward-to-go [0, 0]).
    // orchestrator [1.75, 0] -> 0.875 / 1.2374468474 = +-0.7071010669, solver [1, 0] -> +-0.7070967813; the planner alone -> 0.
    const g = (ep: EpisodeRecord, k: number) => t.get(ep.actions[k])!.advantages[0];
    expect(g(e0.episode, 1)).toBe(0);
    expect(g(e0.episode, 2)).toBeCloseTo(0.7070967813, 9);
    expect(g(e1.episode, 1)).toBeCloseTo(-0.7070967813, 9);
    expect(g(e0.episode, 0)).toBeCloseTo(0.7071010669, 9);
  });
});

describe('GRPO with either grouping', () => {
  it("equal credit: every token gets its episode's reward-to-go R, normalised over the group", () => {
    const config = grpo({ rollout: { groupSize: 2, episodes: 1, horizon: 1 } });
    const { eps, scores } = episodes(config, [
      [1, 2, 2],
      [0, 2, 2],
    ]);
    const t = computeTargets(eps, scores, config);
    // pooled: [1, 1, 1, 1 | 0, 0, 0, 0] -> +-0.9353968471, the planner's tokens too
    for (const a of eps[0].actions) closeAll(t.get(a)!.advantages, 0.9353968471, 9);
    for (const a of eps[1].actions) closeAll(t.get(a)!.advantages, -0.9353968471, 9);
  });

  it('reward sharing: one team reward at the end, the numbers of equal credit, whatever the method', () => {
    // AReaL-based MARFT areal/trainer/ppo/actor.py: with reward_sharing only the team reward is placed (on the
    // sequence's last generated token), the per-agent token_rewards are not read.
    for (const groupNorm of ['pooled', 'agent_turn'] as const) {
      const equal = grpo({ ppo: { groupNorm }, rollout: { groupSize: 2, episodes: 1, horizon: 1 } });
      const e = episodes(equal, [
        [1, 2, 3, '1. a\n2. b'],
        [0, 2, 3, '1. a\n2. b'],
      ]);
      const te = computeTargets(e.eps, e.scores, equal);
      for (const credit of [
        { method: 'per_step', perStep: { planner: 'planner', solver: 'solver' } },
        { method: 'step_discount', discount: 0.5 },
      ]) {
        const config = grpo({
          ppo: { groupNorm },
          credit: { ...credit, rewardSharing: true },
          rollout: { groupSize: 2, episodes: 1, horizon: 1 },
        });
        const { eps, scores } = episodes(config, [
          [1, 2, 3, '1. a\n2. b'],
          [0, 2, 3, '1. a\n2. b'],
        ]);
        const t = computeTargets(eps, scores, config);
        // credited: planner 0, solver R (per_step would give the planner 0.5 * 1 + 0.5 R, step_discount 0.5 R)
        expect(eps.map((ep) => ep.actions.map((a) => t.get(a)!.reward))).toEqual([
          [0, 1],
          [0, 0],
        ]);
        eps.forEach((ep, i) => ep.actions.forEach((a, k) => expect(t.get(a)!.advantages).toEqual(te.get(e.eps[i].actions[k])!.advantages)));
        // reward-to-go R on both actions: pooled [1 x 5 | 0 x 5] -> 0.5 / 0.5270562767 = 0.9486652984; by agent and turn [1, 0] -> 0.7070967813
        closeAll(t.get(eps[0].actions[0])!.advantages, groupNorm === 'pooled' ? 0.9486652984 : 0.7070967813, 9);
      }
    }
  });
});

// AReaL v0.5.3 areal/engine/ppo/actor.py compute_advantages: reward = clip((reward + reward_bias) *
// reward_scaling, ±reward_clip), then reward_norm (areal/utils/data.py Normalization) when set.
describe("reward shaping and normalisation, as AReaL's actor does them", () => {
  const eps4 = (config: RunConfig) =>
    episodes(config, [
      [1, 1, 1],
      [0, 1, 1],
      [0, 1, 1],
      [1, 1, 1],
    ]);
  it('off by default: the team rewards as the environment gave them', () => {
    const config = grpo({ rollout: { groupSize: 2, episodes: 2, horizon: 1 } });
    expect(shapedTeamRewards(eps4(config).eps, config)).toEqual([[1], [0], [0], [1]]);
  });

  it("scaling 10 and bias -0.5 (the MARFT examples' values), a clip, then group or batch normalisation", () => {
    const ppo = (over: Record<string, unknown>) =>
      parseRunConfig({
        graph: presetGraph('duo'),
        rollout: { groupSize: 2, episodes: 2, horizon: 1 },
        ppo: { rewardScaling: 10, rewardBias: -0.5, ...over },
      });
    // (1 - 0.5) * 10 = 5, (0 - 0.5) * 10 = -5
    let config = ppo({});
    const { eps, scores } = eps4(config);
    expect(shapedTeamRewards(eps, config)).toEqual([[5], [-5], [-5], [5]]);
    // the credited reward is the shaped one: equal puts it on the solver
    expect(computeTargets(eps, scores, config).get(eps[0].actions[1])!.reward).toBe(5);
    config = ppo({ rewardClip: 4 });
    expect(shapedTeamRewards(eps, config)).toEqual([[4], [-4], [-4], [4]]);
    // group [4, -4]: mean 0, unbiased std sqrt(32) = 5.6568542495; 4 / 5.6568642495 = 0.7071055312
    const group = shapedTeamRewards(eps, ppo({ rewardClip: 4, rewardNorm: 'group' })).flat();
    [0.7071055312, -0.7071055312, -0.7071055312, 0.7071055312].forEach((w, i) => expect(group[i]).toBeCloseTo(w, 9));
    // batch [4, -4, -4, 4]: mean 0, std sqrt(64 / 3) = 4.6188021535; 4 / 4.6188121535 = 0.8660235288
    const batch = shapedTeamRewards(eps, ppo({ rewardClip: 4, rewardNorm: 'batch' })).flat();
    [0.8660235288, -0.8660235288, -0.8660235288, 0.8660235288].forEach((w, i) => expect(batch[i]).toBeCloseTo(w, 9));
  });

  it("the coder helper reads its own answer's score from the turn", () => {
    const graph = {
      agents: [
        { role: 'tester', systemPrompt: 't' },
        { role: 'coder', systemPrompt: 'c', withAnswer: true },
      ],
      edges: [{ from: 'tester', to: 'coder' }],
    };
    const config = parseRunConfig({
      graph,
      env: { name: 'code' },
      credit: { method: 'per_step', perStep: { tester: 'tester', coder: 'coder' } },
    });
    const h = handEpisode(config, [
      {
        teamReward: 0.5,
        actions: [
          { agent: 0, values: [0] },
          { agent: 1, values: [0] },
        ],
      },
    ]);
    h.episode.actions[0].text = 'assert(f(1) === 1)';
    h.episode.turns[0].answers = { coder: { answer: 'function f(x) { return x; }', correct: false, score: 0.5 } };
    h.episode.turns[0].correct = false;
    // tester 0.5 * min(1 / 2, 1) + 0.5 * 0.5 = 0.5; coder its score 0.5
    expect([...creditRewards(h.episode, config).values()]).toEqual([0.5, 0.5]);
    h.episode.turns[0].answers.coder.score = 0.25;
    expect([...creditRewards(h.episode, config).values()]).toEqual([0.5, 0.25]);
  });
});
