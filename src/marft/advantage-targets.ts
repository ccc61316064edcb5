// From finished episodes to training targets: the team rewards are shaped as AReaL's actor shapes them
// (clip((R + bias) * scaling), then optionally normalised over the batch or the group; identity by default),
// credit assignment turns each turn's team reward into
// per-action rewards, then advantages and returns come from action-level GAE (one value per action, over
// the episode's actions in acting order), token-level GAE (one value per generated token, with the
// Bellman backup across agent boundaries), or GRPO's group normalisation (no critic; see grpoTargets).
// With ppo.klIn 'reward' the KL penalty joins the rewards before GAE (losses.ts klRewards): at token level
// on every generated token, as AReaL does; at action level, where the reference has no such path, the
// action's tokens' penalties summed onto the action's reward. ActionTargets.reward stays the credited
// reward; the trace's rewards are the shaped ones the recursion used.
// Each action keeps the GAE steps behind its numbers (its trace), so the inspector shows what the update used.

import { type GaeNextKind, type GaeStep, checkGroups, gae, normalizeGroup, normalizePooled, tokenLevelGae } from './advantages.ts';
import type { RunConfig } from '../config/run-config.ts';
import type { StepRewardName } from '../config/run-config-schema.ts';
import { STEP_REWARDS, assignCredit, stepRewardFns } from './credit.ts';
import { klRewards } from './losses.ts';
import type { ActionRecord, EpisodeRecord } from './rollout.ts';
import type { ActionScores } from './score.ts';
import { actionSpans, placeOnLastTokens } from './sequence.ts';

export interface ActionTargets {
  /** Credited reward of the action. */
  reward: number;
  /** Per generated token (token level, GRPO) or one entry (action level). */
  advantages: number[];
  /** Critic targets, one per critic row of the action (empty for GRPO). */
  returns: number[];
  /** The GAE steps that gave advantages and returns, one per entry of each (empty for GRPO). */
  trace: GaeStep[];
}

/** Where the recursion goes after action `a` when `b` acts next (action level, and token level at an action's last token). */
const boundary = (a: ActionRecord, b: ActionRecord | undefined): GaeNextKind => (!b ? 'end' : b.turn === a.turn ? 'agent' : 'turn');

/**
 * Every turn's team reward after AReaL's reward shaping (areal/engine/ppo/actor.py compute_advantages):
 * clip((R + rewardBias) * rewardScaling, ±rewardClip), then with rewardNorm normalised (mean, unbiased
 * std, eps 1e-5, as its NormConfig) over every turn of the batch or of each group of rollout.groupSize
 * episodes. AReaL has one reward per sample; here each turn's reward is a value of the pool (the same
 * thing with one turn per episode).
 */
export function shapedTeamRewards(episodes: readonly EpisodeRecord[], config: RunConfig): number[][] {
  const { rewardScaling, rewardBias, rewardClip, rewardNorm } = config.ppo;
  const shaped = episodes.map((ep) =>
    ep.turns.map((t) => Math.min(rewardClip, Math.max(-rewardClip, (t.teamReward + rewardBias) * rewardScaling))),
  );
  if (!rewardNorm || episodes.length === 0) return shaped;
  const G = rewardNorm === 'group' ? config.rollout.groupSize : episodes.length;
  checkGroups('shapedTeamRewards', episodes.length, G);
  for (let g0 = 0; g0 < episodes.length; g0 += G) {
    const flat = shaped.slice(g0, g0 + G).flat();
    const norm = normalizePooled(
      flat,
      flat.map(() => 1),
    );
    let i = 0;
    for (let e = g0; e < g0 + G; e++) shaped[e] = shaped[e].map(() => norm[i++]);
  }
  return shaped;
}

export function creditRewards(
  ep: EpisodeRecord,
  config: RunConfig,
  teamRewards: readonly number[] = ep.turns.map((t) => t.teamReward),
): Map<ActionRecord, number> {
  const c = config.credit;
  const out = new Map<ActionRecord, number>();
  ep.turns.forEach((turn, t) => {
    const acts = ep.actions.filter((a) => a.turn === t);
    const r = assignCredit(
      teamRewards[t],
      acts.map((a) => ({ role: a.role, text: a.text, score: turn.answers[a.role]?.score ?? null })),
      {
        method: c.method,
        discount: c.discount,
        rewardSharing: c.rewardSharing,
        correct: turn.correct,
        rewardFns: stepRewardFns(c.perStep),
        fallback: c.fallback ? STEP_REWARDS[c.fallback as StepRewardName] : undefined,
      },
    );
    acts.forEach((a, i) => out.set(a, r[i]));
  });
  return out;
}

export function computeTargets(
  episodes: readonly EpisodeRecord[],
  scores: Map<ActionRecord, ActionScores>,
  config: RunConfig,
): Map<ActionRecord, ActionTargets> {
  const out = new Map<ActionRecord, ActionTargets>();
  const { gamma, lambda } = config.ppo;
  const team = shapedTeamRewards(episodes, config);
  const credited = episodes.map((ep, e) => creditRewards(ep, config, team[e]));
  if (config.algo === 'grpo') return grpoTargets(episodes, credited, config);
  const { klIn, klCoef, klEstimator } = config.ppo;
  const klOf = (a: ActionRecord): Float64Array | null => {
    if (klIn !== 'reward' || klCoef === 0) return null;
    const s = scores.get(a)!;
    return klRewards(s.oldLogp, s.refLogp, klCoef, klEstimator);
  };
  episodes.forEach((ep, e) => {
    const acts = ep.actions;
    if (config.level === 'action') {
      const shaped = acts.map((a) => credited[e].get(a)! + (klOf(a)?.reduce((x, y) => x + y, 0) ?? 0));
      const r = gae(
        shaped,
        acts.map((a) => scores.get(a)!.values[0]),
        acts.map((a, i) => boundary(a, acts[i + 1])),
        { gamma, lambda },
      );
      acts.forEach((a, i) =>
        out.set(a, { reward: credited[e].get(a)!, advantages: [r.advantages[i]], returns: [r.returns[i]], trace: [r.trace[i]] }),
      );
      return;
    }
    // token level: the episode's generated tokens in acting order, a masked separator between actions
    const values: number[] = [];
    const mask: number[] = [];
    const agentIds: number[] = [];
    const kl: number[] = []; // per position: the KL reward (0 without klIn 'reward' and on separators)
    for (const a of acts) {
      if (values.length) {
        values.push(0);
        mask.push(0);
        agentIds.push(-1);
        kl.push(0);
      }
      const v = scores.get(a)!.values;
      const ka = klOf(a);
      for (let k = 0; k < a.actionIds.length; k++) {
        values.push(v[k]);
        mask.push(1);
        agentIds.push(a.agent);
        kl.push(ka ? ka[k] : 0);
      }
    }
    const actionRewards = acts.map((a) => credited[e].get(a)!);
    const credit =
      klIn === 'reward' && klCoef > 0
        ? { rewards: placeOnLastTokens(values.length, actionSpans(mask, agentIds), actionRewards).map((r, k) => r + kl[k]) }
        : { actionRewards };
    const r = tokenLevelGae({ values, lossMask: mask, agentIds, ...credit, actionTurns: acts.map((a) => a.turn), gamma, lambda });
    let pos = 0;
    let step = 0; // r.trace has one step per generated token, without the separators
    acts.forEach((a, i) => {
      if (i > 0) pos++;
      const n = a.actionIds.length;
      out.set(a, {
        reward: credited[e].get(a)!,
        advantages: Array.from(r.advantages.subarray(pos, pos + n)),
        returns: Array.from(r.returns.subarray(pos, pos + n)),
        trace: r.trace.slice(step, step + n),
      });
      pos += n;
      step += n;
    });
  });
  return out;
}

/**
 * GRPO targets: the advantages the update uses as they are (it normalises nothing after this). Episodes
 * come in consecutive groups of rollout.groupSize samples of one task. AReaL's GRPO is PPO with values 0
 * and gamma = lambda = 1, so before normalisation every generated token's advantage is its reward-to-go G:
 * the sum of the credited rewards from its own action to the episode's end (never an earlier agent's).
 * - groupNorm 'pooled' (AReaL's adv_norm with mean_level and std_level 'group'): G normalised over every
 *   generated token of the group's samples together, so an action counts once per token and the scale of
 *   step_discount (the planner's G = R(1 + d), the solver's R) survives.
 * - groupNorm 'agent_turn' (AT-GRPO): G of an action normalised against the actions of the same agent with
 *   the same call count (its k-th action of the episode) in the group's other samples, one value per
 *   sample; samples without such an action take no part. An agent's advantage then compares its own
 *   reward-to-go with the same agent's, which suits per_step rewards; a common scale is normalised away.
 * Either way a group whose values are all equal gets exactly 0; std per ppo.groupStd, eps 1e-5.
 */
function grpoTargets(
  episodes: readonly EpisodeRecord[],
  credited: Map<ActionRecord, number>[],
  config: RunConfig,
): Map<ActionRecord, ActionTargets> {
  const out = new Map<ActionRecord, ActionTargets>();
  const G = config.rollout.groupSize;
  const opts = { std: config.ppo.groupStd };
  const set = (a: ActionRecord, e: number, adv: number) =>
    out.set(a, { reward: credited[e].get(a)!, advantages: a.actionIds.map(() => adv), returns: [], trace: [] });
  checkGroups('grpoTargets', episodes.length, G);
  // reward-to-go of every action (gamma = 1): its own credited reward plus every later one of the episode
  const togo = episodes.map((ep, e) => {
    const g = new Array<number>(ep.actions.length);
    let acc = 0;
    for (let k = ep.actions.length - 1; k >= 0; k--) g[k] = acc += credited[e].get(ep.actions[k])!;
    return g;
  });
  for (let g0 = 0; g0 < episodes.length; g0 += G) {
    const members = Array.from({ length: G }, (_, i) => g0 + i);
    if (config.ppo.groupNorm === 'pooled') {
      // one entry per generated token; the action's first token carries the value its tokens share
      const x: number[] = [];
      const firstToken: number[][] = members.map((e) =>
        episodes[e].actions.map((a, k) => {
          const at = x.length;
          for (let j = 0; j < a.actionIds.length; j++) x.push(togo[e][k]);
          return at;
        }),
      );
      const adv = normalizePooled(
        x,
        x.map(() => 1),
        opts,
      );
      members.forEach((e, m) => episodes[e].actions.forEach((a, k) => set(a, e, a.actionIds.length ? adv[firstToken[m][k]] : 0)));
      continue;
    }
    // agent_turn: key = agent and its call count in the episode
    const groups = new Map<string, Array<[number, number]>>(); // key -> [episode, action index]
    for (const e of members) {
      const calls = new Map<number, number>();
      episodes[e].actions.forEach((a, k) => {
        const n = calls.get(a.agent) ?? 0;
        calls.set(a.agent, n + 1);
        const key = `${a.agent}:${n}`;
        groups.set(key, [...(groups.get(key) ?? []), [e, k]]);
      });
    }
    for (const at of groups.values()) {
      const adv = normalizeGroup(
        at.map(([e, k]) => togo[e][k]),
        opts,
      );
      at.forEach(([e, k], i) => set(episodes[e].actions[k], e, adv[i]));
    }
  }
  return out;
}
