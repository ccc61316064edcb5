// GRPO's advantages, worked by hand: computeTargets (advantage-targets.ts) and what the update trains on
// (minibatchAdvantages in update.ts), on hand-made episodes (no GPU).
// References: the AReaL-based MARFT, areal/trainer/ppo/actor.py (compute_advantages: with no critic the
// values are 0 and gamma = lambda = 1, so each token's advantage is its reward-to-go; adv_norm is applied
// once, after it, and ppo_update does not normalise again) and areal/workflow/multi_agent/credit.py (each
// agent step's reward on its last generated token: equal, step_discount, per_step).

import { describe, expect, it } from 'vitest';
import { presetGraph } from '../config/presets.ts';
import { type RunConfig, parseRunConfig, targetKlOf } from '../config/run-config.ts';
import { computeTargets } from './advantage-targets.ts';
import { normalizeAdvantages } from './advantages.ts';
import { actionLevelPolicyLoss } from './losses.ts';
import type { ActionRecord, EpisodeRecord } from './rollout.ts';
import type { ActionScores } from './score.ts';
import { inspectEpisode } from './inspect.ts';
import { handEpisode } from './testing-episodes.ts';
import { minibatchAdvantages } from './update.ts';

const grpo = (over: Record<string, unknown> = {}): RunConfig => parseRunConfig({
  graph: presetGraph('duo'), algo: 'grpo', level: 'token', rollout: { groupSize: 4, episodes: 2, horizon: 1 }, ...over,
});

/** Episodes of one turn each (planner then solver): [team reward, planner tokens, solver tokens, planner text?, solver text?]. */
function episodes(config: RunConfig, specs: Array<[number, number, number, string?, string?]>) {
  const scores = new Map<ActionRecord, ActionScores>();
  const eps: EpisodeRecord[] = specs.map(([R, np, ns, tp, ts], i) => {
    const h = handEpisode(config, [{ teamReward: R, actions: [{ agent: 0, values: new Array(np).fill(0) }, { agent: 1, values: new Array(ns).fill(0) }] }], i);
    if (tp !== undefined) h.episode.actions[0].text = tp;
    if (ts !== undefined) h.episode.actions[1].text = ts;
    h.scores.forEach((v, k) => scores.set(k, v));
    return h.episode;
  });
  return { eps, scores };
}

const closeAll = (got: number[], want: number, digits = 6) => { for (const x of got) expect(x).toBeCloseTo(want, digits); };

// The issue's example: group A rewards [1, 0, 0, 0] with 10/30/30/30 tokens (planner 5 + solver 5, then
// 15 + 15), group B [1, 1, 1, 1] with 10 tokens each; credit 'equal' (the whole reward on the solver).
const ISSUE: Array<[number, number, number]> = [[1, 5, 5], [0, 15, 15], [0, 15, 15], [0, 15, 15], [1, 5, 5], [1, 5, 5], [1, 5, 5], [1, 5, 5]];

describe('GRPO advantages, normalised once', () => {
  it('the issue\'s worked example: B is exactly 0, A carries the group-normalised value, and the update uses them as they are', () => {
    const config = grpo();
    const { eps, scores } = episodes(config, ISSUE);
    const t = computeTargets(eps, scores, config);
    // A: mean 0.25; sample variance (0.75^2 + 3 * 0.25^2) / 3 = 0.25, std 0.5;
    // winner (1 - 0.25) / (0.5 + 1e-6) = 1.499997000006, losers -0.25 / 0.500001 = -0.499999000002, on every token.
    closeAll(eps[0].actions.flatMap((a) => t.get(a)!.advantages), 1.499997000006, 10);
    for (const e of eps.slice(1, 4)) closeAll(e.actions.flatMap((a) => t.get(a)!.advantages), -0.499999000002, 10);
    // B: every reward 1, no signal: exactly 0 on every token.
    for (const e of eps.slice(4)) for (const a of e.actions) expect(t.get(a)!.advantages.every((x) => x === 0)).toBe(true);

    // The update's minibatch (all 8 episodes in one, advantageNorm on, its default): the same numbers.
    const pm = eps.flatMap((e) => e.actions);
    expect(config.ppo.advantageNorm).toBe(true);
    const { advOf, Z } = minibatchAdvantages(pm, t, config);
    expect(Z).toBe(10 + 90 + 40);
    for (const a of pm) expect(advOf.get(a)).toEqual(t.get(a)!.advantages);

    // What it was: the per-token copies normalised again over the minibatch. Statistics over the non-zero
    // tokens (10 x 1.5, 90 x -0.5; B's 0s excluded): mean -0.3, population std 0.6, so B's 0 became
    // (0 + 0.3) / 0.6 = +0.5 on every token (A's winner 3, losers -1/3).
    const old = normalizeAdvantages(pm.flatMap((a) => t.get(a)!.advantages), undefined, { eps: 0 });
    expect(old[100]).toBeCloseTo(0.5, 5);
    expect(old[0]).toBeCloseTo(3, 5);
  });

  it('Dr. GRPO (groupStd none) and population std', () => {
    const none = grpo({ ppo: { groupStd: 'none' } });
    let { eps, scores } = episodes(none, ISSUE);
    let t = computeTargets(eps, scores, none);
    // r - mean, no std scaling: A [0.75, -0.25, -0.25, -0.25], B 0.
    closeAll(t.get(eps[0].actions[1])!.advantages, 0.75, 12);
    closeAll(t.get(eps[2].actions[0])!.advantages, -0.25, 12);
    expect(t.get(eps[5].actions[1])!.advantages.every((x) => x === 0)).toBe(true);
    const pm = eps.flatMap((e) => e.actions);
    for (const a of pm) expect(minibatchAdvantages(pm, t, none).advOf.get(a)).toEqual(t.get(a)!.advantages); // scaling not brought back

    const pop = grpo({ ppo: { groupStd: 'population' } });
    ({ eps, scores } = episodes(pop, ISSUE));
    t = computeTargets(eps, scores, pop);
    // population std sqrt(0.75 / 4) = 0.4330127019: 0.75 / 0.4330137019 = 1.7320468076, -0.25 / ... = -0.5773489359.
    closeAll(t.get(eps[0].actions[0])!.advantages, 1.7320468076, 9);
    closeAll(t.get(eps[3].actions[1])!.advantages, -0.5773489359, 9);
    expect(t.get(eps[7].actions[0])!.advantages.every((x) => x === 0)).toBe(true);
  });

  it('PPO still normalises over the minibatch when advantageNorm is on (and not when off)', () => {
    const ppo = parseRunConfig({ graph: presetGraph('duo'), level: 'token' });
    const { eps } = episodes(ppo, [[1, 1, 1], [0, 1, 1]]);
    const adv = [[2, 0], [4, 6]];
    const t = new Map(eps.flatMap((e) => e.actions).map((a, i) => [a, { reward: 0, advantages: [adv[Math.floor(i / 2)][i % 2]], returns: [0], trace: [] }]));
    const pm = eps.flatMap((e) => e.actions);
    // [2, 0, 4, 6]: statistics over {2, 4, 6}: mean 4, std sqrt(8/3) = 1.6329932 (+1e-5)
    const got = pm.map((a) => minibatchAdvantages(pm, t, ppo).advOf.get(a)![0]);
    got.forEach((x, i) => expect(x).toBeCloseTo(([2, 0, 4, 6][i] - 4) / (Math.sqrt(8 / 3) + 1e-5), 10));
    const off = parseRunConfig({ graph: presetGraph('duo'), level: 'token', ppo: { advantageNorm: false } });
    expect(pm.map((a) => minibatchAdvantages(pm, t, off).advOf.get(a)![0])).toEqual([2, 0, 4, 6]);
  });
});

  it('action level: one advantage per action (its tokens\' common value), Z counts actions, and the loss takes the whole action\'s ratio', () => {
    // Once GRPO ignored `level` and always trained per token, so its action and token rows of the learning
    // matrix were one setting. At action level the advantage enters appo_trainer.py's action-level loss.
    const config = grpo({ level: 'action' });
    const { eps, scores } = episodes(config, ISSUE);
    const t = computeTargets(eps, scores, config);
    const pm = eps.flatMap((e) => e.actions);
    const { advOf, Z } = minibatchAdvantages(pm, t, config);
    expect(Z).toBe(16); // 8 episodes x 2 actions, not 140 tokens
    expect(advOf.get(eps[0].actions[1])![0]).toBeCloseTo(1.499997000006, 10);
    expect(advOf.get(eps[1].actions[0])![0]).toBeCloseTo(-0.499999000002, 10);
    for (const a of pm) expect(advOf.get(a)).toEqual([t.get(a)!.advantages[0]]); // no second normalisation
    expect(targetKlOf(config)).toBe(1e-3); // the action-level threshold (appo_trainer.py), per action
    // The winner's planner action (5 tokens), each token's log-prob raised by 0.02: the action's ratio is
    // exp(0.1), inside the clip (0.2), so the loss is -A * exp(0.1) / Z and so is each token's gradient.
    const A = advOf.get(eps[0].actions[0])![0];
    const old = [-1, -1, -1, -1, -1];
    const x = actionLevelPolicyLoss({ tokenLogp: old.map((v) => v + 0.02), oldTokenLogp: old, spans: [{ agent: 0, start: 0, end: 5 }], advantages: [A], norm: 'sum', wordCounts: [1], clip: 0.2, normalizer: Z });
    expect(x.loss).toBeCloseTo(-A * Math.exp(0.1) / Z, 12);
    for (const g of x.dTokenLogp) expect(g).toBeCloseTo(-A * Math.exp(0.1) / Z, 12);
  });

describe('GRPO with per-agent credit: reward-to-go, normalised per action position over the group', () => {
  it('per_step: the solver\'s advantage no longer carries the planner\'s bonus (token and action level)', () => {
    for (const level of ['token', 'action'] as const) {
      const config = grpo({ level, credit: { method: 'per_step', perStep: { planner: 'planner', solver: 'solver' } }, rollout: { groupSize: 4, episodes: 1, horizon: 1 } });
      const plan = '1. add\n2. multiply';
      const { eps, scores } = episodes(config, [
        [1, 2, 3, plan, '\\boxed{4}'], // planner 0.5 * 1 + 0.5 * 1 = 1, solver 1 -> reward-to-go planner 2, solver 1
        [0, 2, 3, plan, '\\boxed{5}'], // planner 0.5, solver 0.1 (answered, wrong) -> planner 0.6, solver 0.1
        [1, 2, 3, 'think', '\\boxed{4}'], // planner 0 + 0.5, solver 1 -> planner 1.5, solver 1
        [0, 2, 3, plan, 'no answer'], // planner 0.5, solver 0 -> planner 0.5, solver 0
      ]);
      const t = computeTargets(eps, scores, config);
      expect(eps.map((e) => t.get(e.actions[0])!.reward)).toEqual([1, 0.5, 0.5, 0.5]);
      expect(eps.map((e) => t.get(e.actions[1])!.reward)).toEqual([1, 0.1, 1, 0]);
      // solver position: [1, 0.1, 1, 0], mean 0.525, sample std sqrt(0.9075 / 3) = 0.55:
      // (G - 0.525) / 0.550001 = [0.8636347934, -0.7727258678, 0.8636347934, -0.9545437190]
      [0.8636347934, -0.7727258678, 0.8636347934, -0.954543719].forEach((w, e) => {
        const adv = t.get(eps[e].actions[1])!.advantages;
        expect(adv.length).toBe(3);
        closeAll(adv, w, 9);
      });
      // planner position: [2, 0.6, 1.5, 0.5], mean 1.15, sample std sqrt(1.57 / 3) = 0.7234178138:
      // [1.1749763536, -0.7602788171, 0.4838137927, -0.8985113293]
      [1.1749763536, -0.7602788171, 0.4838137927, -0.8985113293].forEach((w, e) => closeAll(t.get(eps[e].actions[0])!.advantages, w, 9));
      // Before, every token got the episode total normalised ([2, 0.6, 1.5, 0.5], the planner's numbers):
      // solvers 0 and 2 answered alike but got 1.17 and 0.48; now both 0.8636.
      const pm = eps.flatMap((e) => e.actions);
      // the update trains on them as they are: one per token, or at action level the action's one value
      const perUnit = (a: ActionRecord) => (level === 'action' ? t.get(a)!.advantages.slice(0, 1) : t.get(a)!.advantages);
      for (const a of pm) expect(minibatchAdvantages(pm, t, config).advOf.get(a)).toEqual(perUnit(a));
      // the inspector shows the numbers the update uses, on every token of the action
      const shown = inspectEpisode({ iteration: 0, config, episodes: eps, scores, targets: t, decode: (ids) => ids.join(' ') }, 2);
      shown.actions.forEach((s, i) => { for (const k of s.tokens) expect(k.advantage).toBe(perUnit(eps[2].actions[i])[0]); });
      expect(shown.actions.map((a) => a.tokens.map((k) => k.reward))).toEqual([[0, 0.5], [0, 0, 1]]);
    }
  });

  it('step_discount: one turn (token and action level) and across turns', () => {
    for (const level of ['token', 'action'] as const) {
      const config = grpo({ level, credit: { method: 'step_discount', discount: 0.5 }, rollout: { groupSize: 2, episodes: 1, horizon: 1 } });
      const { eps, scores } = episodes(config, [[1, 2, 2], [0, 2, 2]]);
      const t = computeTargets(eps, scores, config);
      // rewards planner 0.5 R, solver R; reward-to-go planner [1.5, 0], solver [1, 0].
      // planner: mean 0.75, sample std 1.0606602 -> +-0.75 / 1.0606612 = +-0.7071061145;
      // solver: mean 0.5, std 0.7071068 -> +-0.5 / 0.7071078 = +-0.7071057812.
      closeAll(t.get(eps[0].actions[0])!.advantages, 0.7071061145, 9);
      closeAll(t.get(eps[1].actions[0])!.advantages, -0.7071061145, 9);
      closeAll(t.get(eps[0].actions[1])!.advantages, 0.7071057812, 9);
      closeAll(t.get(eps[1].actions[1])!.advantages, -0.7071057812, 9);
    }
    // Two turns: episode 0 wrong then right (turn rewards 0, 1), episode 1 right at once (done after turn 0).
    const config = grpo({ credit: { method: 'step_discount', discount: 0.5 }, rollout: { groupSize: 2, episodes: 1, horizon: 2 } });
    const e0 = handEpisode(config, [
      { teamReward: 0, actions: [{ agent: 0, values: [0, 0] }, { agent: 1, values: [0, 0] }] },
      { teamReward: 1, actions: [{ agent: 0, values: [0, 0] }, { agent: 1, values: [0, 0] }] },
    ], 0);
    const e1 = handEpisode(config, [{ teamReward: 1, actions: [{ agent: 0, values: [0, 0] }, { agent: 1, values: [0, 0] }] }], 1);
    const t = computeTargets([e0.episode, e1.episode], new Map([...e0.scores, ...e1.scores]), config);
    // credited: e0 [0, 0, 0.5, 1], e1 [0.5, 1]; reward-to-go: e0 [1.5, 1.5, 1.5, 1], e1 [1.5, 1].
    // position 0: [1.5, 1.5] -> 0 (the turn-0 planner gets its later turn's reward, as every token's reward-to-go does);
    // position 1: [1.5, 1] -> mean 1.25, std 0.3535534 -> +-0.25 / 0.3535544 = +-0.7071047812;
    // positions 2 and 3: episode 0 only -> 0.
    const adv = (ep: EpisodeRecord) => ep.actions.map((a) => t.get(a)!.advantages[0]);
    const a0 = adv(e0.episode);
    const a1 = adv(e1.episode);
    expect(a0[0]).toBe(0);
    expect(a1[0]).toBe(0);
    expect(a0[1]).toBeCloseTo(0.7071047812, 9);
    expect(a1[1]).toBeCloseTo(-0.7071047812, 9);
    expect([a0[2], a0[3]]).toEqual([0, 0]);
  });

  it('equal credit stays as before: every token gets its episode\'s normalised reward', () => {
    const config = grpo({ rollout: { groupSize: 2, episodes: 1, horizon: 1 } });
    const { eps, scores } = episodes(config, [[1, 2, 2], [0, 2, 2]]);
    const t = computeTargets(eps, scores, config);
    // [1, 0]: mean 0.5, sample std 0.7071068 -> +-0.7071057812 on the planner's tokens too
    for (const a of eps[0].actions) closeAll(t.get(a)!.advantages, 0.7071057812, 9);
    for (const a of eps[1].actions) closeAll(t.get(a)!.advantages, -0.7071057812, 9);
  });

  it('reward sharing: one team reward at the end, the numbers of equal credit, whatever the method', () => {
    // AReaL-based MARFT areal/trainer/ppo/actor.py: with reward_sharing only the team reward is placed (on the
    // sequence's last generated token), the per-agent token_rewards are not read.
    const equal = grpo({ rollout: { groupSize: 2, episodes: 1, horizon: 1 } });
    const e = episodes(equal, [[1, 2, 3, '1. a\n2. b'], [0, 2, 3, '1. a\n2. b']]);
    const te = computeTargets(e.eps, e.scores, equal);
    for (const credit of [{ method: 'per_step', perStep: { planner: 'planner', solver: 'solver' } }, { method: 'step_discount', discount: 0.5 }]) {
      const config = grpo({ credit: { ...credit, rewardSharing: true }, rollout: { groupSize: 2, episodes: 1, horizon: 1 } });
      const { eps, scores } = episodes(config, [[1, 2, 3, '1. a\n2. b'], [0, 2, 3, '1. a\n2. b']]);
      const t = computeTargets(eps, scores, config);
      // credited: planner 0, solver R (per_step would give the planner 0.5 * 1 + 0.5 R, step_discount 0.5 R)
      expect(eps.map((ep) => ep.actions.map((a) => t.get(a)!.reward))).toEqual([[0, 1], [0, 0]]);
      // reward-to-go R on both positions, normalised over the group: +-0.7071057812, as equal credit gives
      eps.forEach((ep, i) => ep.actions.forEach((a, k) => expect(t.get(a)!.advantages).toEqual(te.get(e.eps[i].actions[k])!.advantages)));
      closeAll(t.get(eps[0].actions[0])!.advantages, 0.7071057812, 9);
    }
  });
});
