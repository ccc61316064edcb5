// Advantage estimation for MARFT, on the CPU, as the trainer runs it:
// (a) action-level GAE (MARFT-A) over turns t and agents i, as the original codebase does: for agent
//     i < N-1, delta = r_i + gamma*V(o^{i+1}_t) - V(o^i_t); for the last agent,
//     delta = r_N + gamma*V(o^1_{t+1})*notdone_t - V(o^N_t); A = delta + gamma*lambda*A_next (the chain is
//     cut where the episode ends); returns = A + V. This is ordinary GAE over the flattened sequence of
//     actions (t, i), with "done" only after an episode's last action — gae() is that flat form, which
//     also serves dynamic topologies whose turns have different numbers of actions.
// (b) token-level GAE (MARFT-T) over one episode's concatenated tokens: only generated tokens
//     (lossMask 1) take part; for generated token k with next generated token k',
//     delta_k = r_k + gamma*V_{k'} - V_k and A_k = delta_k + gamma*lambda*A_{k'}, with V and A of "k'"
//     taken as 0 after the last generated token. Inside an action k' = k+1 and r_k = 0; at an action's last
//     token r_k is its credited reward and k' is the next agent's first generated token (the Bellman
//     backup across agents; prompt, transition and feedback tokens in between are skipped). It is gae()
//     over the generated tokens, so both levels share one recursion.
// (c) GRPO: values of the G samples of one task -> (x - mean)/(std + eps), eps 1e-5; std is the sample
//     standard deviation (n-1, torch.std's default and AReaL's std_unbiased) unless 'population' or 'none'
//     (Dr. GRPO). normalizePooled pools every generated token of the group (AReaL's areal/utils/data.py
//     Normalization with mean_level and std_level 'group' over the loss mask); normalizeGroup takes one
//     value per sample (the agent- and turn-wise groups of AT-GRPO). This is GRPO's only normalisation: the
//     update does not normalise GRPO advantages again (d is PPO's).
// (d) per-minibatch advantage normalisation over masked-in entries, excluding exact zeros from the
//     statistics as the original codebase does (nanmean/nanstd after zeros -> NaN, population std), then
//     applied to every masked-in entry; masked-out entries come back 0.
// GAE returns its trace beside the advantages: per step r, V, V_next and A_next and where they came from,
// delta, gamma, lambda, A and the return, so the inspector shows the numbers the update used.

import { checkLengths, marftFail } from './errors.ts';
import { actionSpans, placeOnLastTokens } from './sequence.ts';

export interface GaeParams {
  gamma: number;
  lambda: number;
}

/**
 * Where a step of the recursion takes V_next and A_next from: the next token of the same action, the next
 * agent's action (across the agent boundary), the next turn's first action, or nothing (the episode ends).
 */
export type GaeNextKind = 'token' | 'agent' | 'turn' | 'end';

/** One step of the recursion with the numbers it used: what the update trains on and the inspector shows. */
export interface GaeStep {
  /** r: the credited reward on this step. */
  reward: number;
  /** V of this step. */
  value: number;
  next: GaeNextKind;
  /** V_next and A_next as the recursion used them (0 at the end). */
  nextValue: number;
  nextAdvantage: number;
  /** delta = r + gamma*V_next - V. */
  delta: number;
  gamma: number;
  lambda: number;
  /** A = delta + gamma*lambda*A_next. */
  advantage: number;
  /** The critic's target, A + V. */
  ret: number;
}

export interface GaeResult {
  advantages: Float64Array;
  returns: Float64Array;
  /** One entry per step of the recursion, in order (gae: every step; tokenLevelGae: every generated token). */
  trace: GaeStep[];
}

/**
 * GAE over a flat sequence of K steps. next[k] says where step k takes V_next and A_next from; 'end' = the
 * episode ended after step k (no bootstrap and no advantage carried across it). bootstrapValue: V of the
 * state after the last step, used only when the last step is not 'end' (a truncated rollout).
 */
export function gae(
  rewards: ArrayLike<number>,
  values: ArrayLike<number>,
  next: ArrayLike<GaeNextKind>,
  params: GaeParams & { bootstrapValue?: number },
): GaeResult {
  const K = rewards.length;
  checkLengths('gae', K, { values, next });
  const { gamma, lambda } = params;
  const advantages = new Float64Array(K);
  const returns = new Float64Array(K);
  const trace = new Array<GaeStep>(K);
  let nextValue = params.bootstrapValue ?? 0;
  let nextAdv = 0;
  for (let k = K - 1; k >= 0; k--) {
    const notDone = next[k] === 'end' ? 0 : 1;
    const delta = rewards[k] + gamma * nextValue * notDone - values[k];
    advantages[k] = delta + gamma * lambda * notDone * nextAdv;
    returns[k] = advantages[k] + values[k];
    trace[k] = {
      reward: rewards[k],
      value: values[k],
      next: next[k],
      nextValue: notDone ? nextValue : 0,
      nextAdvantage: notDone ? nextAdv : 0,
      delta,
      gamma,
      lambda,
      advantage: advantages[k],
      ret: returns[k],
    };
    nextValue = values[k];
    nextAdv = advantages[k];
  }
  return { advantages, returns, trace };
}

export interface TokenGaeInput extends GaeParams {
  /** Critic value per token, V_k. (T) */
  values: ArrayLike<number>;
  /** 1 for generated tokens. (T) */
  lossMask: ArrayLike<number>;
  /** Acting agent per token, -1 for prompt/transition/feedback tokens. (T) */
  agentIds: ArrayLike<number>;
  /** Reward per token (non-zero only on actions' last tokens). (T) Give this or actionRewards. */
  rewards?: ArrayLike<number>;
  /** One credited reward per action (actionSpans order), placed on each action's last token. */
  actionRewards?: ArrayLike<number>;
  /** Turn of each action (actionSpans order): names a boundary between turns 'turn' in the trace, else 'agent'. */
  actionTurns?: ArrayLike<number>;
}

/**
 * Token-level GAE over one episode (see the file header): gae() over the generated tokens in order, the
 * tokens in between skipped. Masked-out positions get advantage and return 0.
 */
export function tokenLevelGae(input: TokenGaeInput): GaeResult {
  const { values, lossMask, agentIds, actionTurns, gamma, lambda } = input;
  const T = lossMask.length;
  checkLengths('tokenLevelGae', T, { values, agentIds, rewards: input.rewards });
  const spans = actionSpans(lossMask, agentIds);
  checkLengths('tokenLevelGae', spans.length, { actionTurns });
  let rewards: ArrayLike<number>;
  if (input.rewards && input.actionRewards)
    marftFail('SHAPE', 'tokenLevelGae: give rewards (per token) or actionRewards (per action), not both');
  if (input.actionRewards) rewards = placeOnLastTokens(T, spans, input.actionRewards);
  else if (input.rewards) rewards = input.rewards;
  else return marftFail('SHAPE', 'tokenLevelGae: give rewards (per token) or actionRewards (per action)');
  for (let k = T - 1; k >= 0; k--) {
    if (!lossMask[k] && rewards[k] !== 0)
      marftFail('SHAPE', `tokenLevelGae: token ${k} has reward ${rewards[k]} but lossMask 0; rewards go on generated tokens`);
  }
  const pos: number[] = [];
  const next: GaeNextKind[] = [];
  spans.forEach((s, i) => {
    const boundary: GaeNextKind = i === spans.length - 1 ? 'end' : actionTurns && actionTurns[i + 1] !== actionTurns[i] ? 'turn' : 'agent';
    for (let k = s.start; k < s.end; k++) {
      pos.push(k);
      next.push(k < s.end - 1 ? 'token' : boundary);
    }
  });
  const r = gae(
    pos.map((k) => rewards[k]),
    pos.map((k) => values[k]),
    next,
    { gamma, lambda },
  );
  const advantages = new Float64Array(T);
  const returns = new Float64Array(T);
  pos.forEach((k, j) => {
    advantages[k] = r.advantages[j];
    returns[k] = r.returns[j];
  });
  return { advantages, returns, trace: r.trace };
}

export type GroupStd = 'sample' | 'population' | 'none';

/** AReaL's NormConfig.eps: what the std is offset by before dividing. */
export const GRPO_EPS = 1e-5;

/** One group's statistics for GRPO: A = (r - mean) / denom. */
interface GroupStats {
  mean: number;
  /** std + eps ('sample': n-1; 'population': n), or 1 for 'none' (Dr. GRPO: no std scaling). */
  denom: number;
}

/**
 * The statistics of one group of samples (see groupNormalize). A group of one has sample std 0 (so its
 * advantage is 0, as every constant group's is).
 */
function groupStats(rewards: ArrayLike<number>, options: { std?: GroupStd; eps?: number } = {}): GroupStats {
  const n = rewards.length;
  if (n < 1) marftFail('SHAPE', 'groupStats: an empty group');
  const stdKind = options.std ?? 'sample';
  const eps = options.eps ?? GRPO_EPS;
  let mean = 0;
  for (let i = 0; i < n; i++) mean += rewards[i];
  mean /= n;
  let ss = 0;
  for (let i = 0; i < n; i++) ss += (rewards[i] - mean) ** 2;
  let denom = 1;
  if (stdKind === 'sample') denom = (n > 1 ? Math.sqrt(ss / (n - 1)) : 0) + eps;
  else if (stdKind === 'population') denom = Math.sqrt(ss / n) + eps;
  return { mean, denom };
}

/** (r - mean) / denom for every member of one group; a constant group gets exactly 0 however the mean rounds. */
export function normalizeGroup(group: readonly number[], options: { std?: GroupStd; eps?: number } = {}): number[] {
  const { mean, denom } = groupStats(group, options);
  const constant = group.every((r) => r === group[0]);
  return group.map((r) => (constant ? 0 : (r - mean) / denom));
}

/**
 * AReaL's group normalisation of one group (areal/utils/data.py Normalization, mean_level and std_level
 * 'group'): mean and std pooled over the entries with mask 1 (every generated token of the group's
 * samples); (x - mean) / (std + eps) there, 0 where the mask is 0. Unbiased std over fewer than two entries
 * is 1, as AReaL's; 'none' divides by 1 with no eps. Entries that are all equal give exactly 0, however
 * the mean rounds.
 */
export function normalizePooled(
  x: ArrayLike<number>,
  mask: ArrayLike<number>,
  options: { std?: GroupStd; eps?: number } = {},
): Float64Array {
  const n = x.length;
  checkLengths('normalizePooled', n, { mask });
  const stdKind = options.std ?? 'sample';
  const eps = stdKind === 'none' ? 0 : (options.eps ?? GRPO_EPS);
  const out = new Float64Array(n);
  let count = 0;
  let sum = 0;
  let first: number | null = null;
  let constant = true;
  for (let i = 0; i < n; i++) {
    if (!mask[i]) continue;
    count++;
    sum += x[i];
    if (first === null) first = x[i];
    else if (x[i] !== first) constant = false;
  }
  if (count === 0 || constant) return out;
  const mean = sum / count;
  let ss = 0;
  for (let i = 0; i < n; i++) if (mask[i]) ss += (x[i] - mean) ** 2;
  const std = stdKind === 'none' ? 1 : stdKind === 'sample' ? (count > 1 ? Math.sqrt(ss / (count - 1)) : 1) : Math.sqrt(ss / count);
  for (let i = 0; i < n; i++) if (mask[i]) out[i] = (x[i] - mean) / (std + eps);
  return out;
}

/** Throws SHAPE unless `n` samples split into groups of `groupSize` (an integer >= 1). */
export function checkGroups(op: string, n: number, groupSize: number): void {
  if (!Number.isInteger(groupSize) || groupSize < 1) marftFail('SHAPE', `${op}: groupSize must be an integer >= 1, got ${groupSize}`);
  if (n % groupSize !== 0) marftFail('SHAPE', `${op}: ${n} rewards do not split into groups of ${groupSize}`);
}

/**
 * GRPO advantages: `rewards` holds consecutive groups of `groupSize` samples of one task each;
 * A = (r - mean_group) / (std_group + eps). A group of one (sample std undefined) or of equal rewards gets
 * exactly 0.
 */
export function groupNormalize(
  rewards: ArrayLike<number>,
  groupSize: number,
  options: { std?: GroupStd; eps?: number } = {},
): Float64Array {
  const n = rewards.length;
  checkGroups('groupNormalize', n, groupSize);
  const out = new Float64Array(n);
  for (let g = 0; g < n; g += groupSize)
    out.set(
      normalizeGroup(
        Array.from({ length: groupSize }, (_, i) => rewards[g + i]),
        options,
      ),
      g,
    );
  return out;
}

/**
 * Normalises a minibatch's advantages: statistics over entries with mask 1 (and, with excludeZeros — the
 * default, as the original codebase — a non-zero value); population std; (A - mean)/(std + eps) applied
 * to every masked-in entry. With no entry to take statistics from, the masked-in values are returned as
 * they are.
 */
export function normalizeAdvantages(
  advantages: ArrayLike<number>,
  mask?: ArrayLike<number>,
  options: { excludeZeros?: boolean; eps?: number } = {},
): Float64Array {
  const n = advantages.length;
  checkLengths('normalizeAdvantages', n, { mask });
  const excludeZeros = options.excludeZeros ?? true;
  const eps = options.eps ?? 1e-5;
  const inMask = (i: number) => !mask || mask[i] !== 0;
  let count = 0;
  let sum = 0;
  for (let i = 0; i < n; i++) {
    if (inMask(i) && !(excludeZeros && advantages[i] === 0)) {
      count++;
      sum += advantages[i];
    }
  }
  const out = new Float64Array(n);
  if (count === 0) {
    for (let i = 0; i < n; i++) if (inMask(i)) out[i] = advantages[i];
    return out;
  }
  const mean = sum / count;
  let ss = 0;
  for (let i = 0; i < n; i++) if (inMask(i) && !(excludeZeros && advantages[i] === 0)) ss += (advantages[i] - mean) ** 2;
  const std = Math.sqrt(ss / count);
  for (let i = 0; i < n; i++) if (inMask(i)) out[i] = (advantages[i] - mean) / (std + eps);
  return out;
}
