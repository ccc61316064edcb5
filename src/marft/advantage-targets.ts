// From finished episodes to training targets: credit assignment turns each turn's team reward into
// per-action rewards, then advantages and returns come from action-level GAE (one value per action, over
// the episode's actions in acting order), token-level GAE (one value per generated token, with the
// Bellman backup across agent boundaries), or GRPO's group normalisation (no critic). Each action keeps
// the GAE steps behind its numbers (its trace), so the inspector shows what the update used.

import { type GaeNextKind, type GaeStep, gae, groupNormalize, tokenLevelGae } from './advantages.ts';
import type { RunConfig } from '../config/run-config.ts';
import type { StepRewardName } from '../config/run-config.ts';
import { STEP_REWARDS, assignCredit, stepRewardFns } from './credit.ts';
import type { ActionRecord, EpisodeRecord } from './rollout.ts';
import type { ActionScores } from './score.ts';

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
  if (config.algo === 'grpo') {
    const G = config.rollout.groupSize;
    const totals = credited.map((m) => [...m.values()].reduce((a, b) => a + b, 0));
    const adv = groupNormalize(totals, G, { std: config.ppo.groupStd });
    episodes.forEach((ep, e) => {
      for (const a of ep.actions) out.set(a, { reward: credited[e].get(a)!, advantages: a.actionIds.map(() => adv[e]), returns: [], trace: [] });
    });
    return out;
  }
  episodes.forEach((ep, e) => {
    const acts = ep.actions;
    if (config.level === 'action') {
      const r = gae(acts.map((a) => credited[e].get(a)!), acts.map((a) => scores.get(a)!.values[0]), acts.map((a, i) => boundary(a, acts[i + 1])), { gamma, lambda });
      acts.forEach((a, i) => out.set(a, { reward: credited[e].get(a)!, advantages: [r.advantages[i]], returns: [r.returns[i]], trace: [r.trace[i]] }));
      return;
    }
    // token level: the episode's generated tokens in acting order, a masked separator between actions
    const values: number[] = [];
    const mask: number[] = [];
    const agentIds: number[] = [];
    for (const a of acts) {
      if (values.length) { values.push(0); mask.push(0); agentIds.push(-1); }
      const v = scores.get(a)!.values;
      for (let k = 0; k < a.actionIds.length; k++) { values.push(v[k]); mask.push(1); agentIds.push(a.agent); }
    }
    const r = tokenLevelGae({
      values, lossMask: mask, agentIds, actionRewards: acts.map((a) => credited[e].get(a)!), actionTurns: acts.map((a) => a.turn), gamma, lambda,
    });
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
