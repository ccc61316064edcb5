// From finished episodes to training targets: credit assignment turns each turn's team reward into
// per-action rewards, then advantages and returns come from action-level GAE (one value per action, over
// the episode's actions in acting order), token-level GAE (one value per generated token, with the
// Bellman backup across agent boundaries), or GRPO's group normalisation (no critic; see grpoTargets).
// With ppo.klIn 'reward' the KL penalty joins the rewards before GAE (losses.ts klRewards): at token level
// on every generated token, as AReaL does; at action level, where the reference has no such path, the
// action's tokens' penalties summed onto the action's reward. ActionTargets.reward stays the credited
// reward; the trace's rewards are the shaped ones the recursion used.
// Each action keeps the GAE steps behind its numbers (its trace), so the inspector shows what the update used.

import { type GaeNextKind, type GaeStep, checkGroups, gae, groupNormalize, normalizeGroup, tokenLevelGae } from './advantages.ts';
import type { RunConfig, StepRewardName } from '../config/run-config.ts';
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

export function creditRewards(ep: EpisodeRecord, config: RunConfig): Map<ActionRecord, number> {
  const c = config.credit;
  const out = new Map<ActionRecord, number>();
  ep.turns.forEach((turn, t) => {
    const acts = ep.actions.filter((a) => a.turn === t);
    const r = assignCredit(turn.teamReward, acts.map((a) => ({ role: a.role, text: a.text })), {
      method: c.method, discount: c.discount, rewardSharing: c.rewardSharing,
      rewardFns: stepRewardFns(c.perStep), fallback: c.fallback ? STEP_REWARDS[c.fallback as StepRewardName] : undefined,
    });
    acts.forEach((a, i) => out.set(a, r[i]));
  });
  return out;
}

export function computeTargets(episodes: readonly EpisodeRecord[], scores: Map<ActionRecord, ActionScores>, config: RunConfig): Map<ActionRecord, ActionTargets> {
  const out = new Map<ActionRecord, ActionTargets>();
  const { gamma, lambda } = config.ppo;
  const credited = episodes.map((ep) => creditRewards(ep, config));
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
      const r = gae(shaped, acts.map((a) => scores.get(a)!.values[0]), acts.map((a, i) => boundary(a, acts[i + 1])), { gamma, lambda });
      acts.forEach((a, i) => out.set(a, { reward: credited[e].get(a)!, advantages: [r.advantages[i]], returns: [r.returns[i]], trace: [r.trace[i]] }));
      return;
    }
    // token level: the episode's generated tokens in acting order, a masked separator between actions
    const values: number[] = [];
    const mask: number[] = [];
    const agentIds: number[] = [];
    const kl: number[] = []; // per position: the KL reward (0 without klIn 'reward' and on separators)
    for (const a of acts) {
      if (values.length) { values.push(0); mask.push(0); agentIds.push(-1); kl.push(0); }
      const v = scores.get(a)!.values;
      const ka = klOf(a);
      for (let k = 0; k < a.actionIds.length; k++) { values.push(v[k]); mask.push(1); agentIds.push(a.agent); kl.push(ka ? ka[k] : 0); }
    }
    const actionRewards = acts.map((a) => credited[e].get(a)!);
    const credit = klIn === 'reward' && klCoef > 0 ? { rewards: placeOnLastTokens(values.length, actionSpans(mask, agentIds), actionRewards).map((r, k) => r + kl[k]) } : { actionRewards };
    const r = tokenLevelGae({ values, lossMask: mask, agentIds, ...credit, actionTurns: acts.map((a) => a.turn), gamma, lambda });
    let pos = 0;
    let step = 0; // r.trace has one step per generated token, without the separators
    acts.forEach((a, i) => {
      if (i > 0) pos++;
      const n = a.actionIds.length;
      out.set(a, {
        reward: credited[e].get(a)!, advantages: Array.from(r.advantages.subarray(pos, pos + n)), returns: Array.from(r.returns.subarray(pos, pos + n)),
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
 * come in consecutive groups of rollout.groupSize samples of one task.
 * - credit 'equal': every token of an episode gets its episode reward R (the sum of its credited rewards)
 *   normalised over the group's episodes, A = (R - mean_group) / (std_group + eps), std per ppo.groupStd.
 * - credit 'step_discount' / 'per_step' (a reward on each action's last token): every token gets its
 *   reward-to-go G (AReaL's GRPO is PPO with values 0 and gamma = lambda = 1, so the advantage before
 *   normalisation is the sum of the credited rewards from that token's action to the episode's end: a
 *   token's own action and the ones after it, never an earlier agent's), normalised over the group per
 *   action position: the k-th action of an episode against the k-th actions of the group's episodes
 *   (episodes without a k-th action take no part), A = (G - mean) / (std + eps). An agent's advantage thus
 *   compares its own reward-to-go with the same agent's in the other samples of the task.
 * Either way a group whose samples all got the same rewards gets exactly 0 on every token.
 */
function grpoTargets(episodes: readonly EpisodeRecord[], credited: Map<ActionRecord, number>[], config: RunConfig): Map<ActionRecord, ActionTargets> {
  const out = new Map<ActionRecord, ActionTargets>();
  const G = config.rollout.groupSize;
  const opts = { std: config.ppo.groupStd };
  const set = (a: ActionRecord, e: number, adv: number) => out.set(a, { reward: credited[e].get(a)!, advantages: a.actionIds.map(() => adv), returns: [], trace: [] });
  if (config.credit.method === 'equal') {
    const totals = credited.map((m) => [...m.values()].reduce((a, b) => a + b, 0));
    const adv = groupNormalize(totals, G, opts);
    episodes.forEach((ep, e) => { for (const a of ep.actions) set(a, e, adv[e]); });
    return out;
  }
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
    const positions = Math.max(...members.map((e) => episodes[e].actions.length));
    for (let k = 0; k < positions; k++) {
      const at = members.filter((e) => k < episodes[e].actions.length);
      const adv = normalizeGroup(at.map((e) => togo[e][k]), opts);
      at.forEach((e, i) => set(episodes[e].actions[k], e, adv[i]));
    }
  }
  return out;
}
