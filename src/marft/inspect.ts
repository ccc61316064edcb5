// The inspector's data: one episode of an iteration, per generated token its text, credited reward, value,
// advantage, return, the GAE terms (delta, and where the recursion took V_next / A_next from: the next
// token, the next agent across the boundary, the next turn's first agent, or the episode's end) and its
// log-probs (old, behaviour, reference) as ratio and KL. It formats the targets and trace the update used;
// only when the user asks for another credit method (the side-by-side view) does it recompute them, through
// computeTargets as the trainer runs it, so both sides show the recursion's own numbers.

import type { RunConfig } from '../config/run-config.ts';
import { type ActionTargets, computeTargets } from './advantage-targets.ts';
import type { GaeNextKind } from './advantages.ts';
import type { CreditMethod } from './credit.ts';
import type { ActionRecord, EpisodeRecord } from './rollout.ts';
import type { ActionScores } from './score.ts';

/** Where the GAE recursion of a token (or action) takes its next value from. */
export interface GaeNext {
  kind: GaeNextKind;
  /** Role of the next step (agent/turn), its value V_next and advantage A_next (0 at the end). */
  role?: string;
  value: number;
  advantage: number;
}

export interface InspectToken {
  id: number;
  text: string;
  /** Credited reward placed on this token (non-zero only on an action's last token at token level). */
  reward: number;
  advantage: number;
  /** V at this step (the action's value at action level), null for GRPO. */
  value: number | null;
  ret: number | null;
  /** delta = r + gamma * V_next - V (null for GRPO). */
  delta: number | null;
  next: GaeNext | null;
  oldLogp: number;
  behaviourLogp: number;
  /** exp(oldLogp - behaviourLogp): the scoring policy over the sampling distribution. */
  ratio: number;
  /** oldLogp - refLogp (k1) when reference log-probs were computed (klCoef > 0), else null. */
  kl: number | null;
  entropy: number;
}

export interface InspectAction {
  agent: number;
  role: string;
  turn: number;
  text: string;
  reward: number;
  tokens: InspectToken[];
}

export interface InspectedEpisode {
  iteration: number;
  index: number;
  task: string;
  correct: boolean;
  teamRewards: number[];
  feedback: string[];
  method: CreditMethod;
  level: 'action' | 'token';
  algo: 'ppo' | 'grpo';
  gamma: number;
  lambda: number;
  actions: InspectAction[];
}

/** An iteration as the trainer returned it (IterationResult), with the config it ran under. */
export interface InspectInput {
  iteration: number;
  config: RunConfig;
  episodes: readonly EpisodeRecord[];
  scores: Map<ActionRecord, ActionScores>;
  /** Per action: the targets the update used, with their GAE trace. */
  targets: Map<ActionRecord, ActionTargets>;
  decode: (ids: number[]) => string;
}

export function inspectEpisode(input: InspectInput, episode: number, method: CreditMethod = input.config.credit.method): InspectedEpisode {
  const ep = input.episodes[episode];
  if (!ep)
    throw Object.assign(new Error(`episode ${episode} is not in the last iteration (0..${input.episodes.length - 1})`), {
      code: 'INSPECT_RANGE',
    });
  const same = method === input.config.credit.method;
  const cfg: RunConfig = same ? input.config : { ...input.config, credit: { ...input.config.credit, method } };
  const targets = same ? input.targets : computeTargets(input.episodes, input.scores, cfg);
  const acts = ep.actions;

  const token = (a: ActionRecord, i: number, k: number): InspectToken => {
    const s = input.scores.get(a)!;
    const t = targets.get(a)!;
    const old = s.oldLogp[k] ?? 0;
    const beh = a.behaviourLogp[k] ?? old;
    const logps = {
      oldLogp: old,
      behaviourLogp: beh,
      ratio: Math.exp(old - beh),
      kl: s.refLogp.length ? old - s.refLogp[k] : null,
      entropy: s.entropy[k] ?? 0,
    };
    const base = { id: a.actionIds[k], text: input.decode([a.actionIds[k]]), ...logps };
    if (cfg.algo === 'grpo') {
      // no critic and no recursion: the action's reward-to-go normalised in its group (ppo.groupNorm),
      // exactly what the update trains on (GRPO is not normalised again)
      return {
        ...base,
        reward: k === a.actionIds.length - 1 ? t.reward : 0,
        advantage: t.advantages[k],
        value: null,
        ret: null,
        delta: null,
        next: null,
      };
    }
    const g = t.trace[cfg.level === 'action' ? 0 : k];
    const crosses = g.next === 'agent' || g.next === 'turn';
    const next: GaeNext = { kind: g.next, role: crosses ? acts[i + 1].role : undefined, value: g.nextValue, advantage: g.nextAdvantage };
    return { ...base, reward: g.reward, advantage: g.advantage, value: g.value, ret: g.ret, delta: g.delta, next };
  };

  return {
    iteration: input.iteration,
    index: ep.index,
    task: ep.task,
    correct: ep.correct,
    teamRewards: ep.turns.map((t) => t.teamReward),
    feedback: ep.turns.map((t) => t.feedback),
    method,
    level: cfg.level,
    algo: cfg.algo,
    gamma: cfg.ppo.gamma,
    lambda: cfg.ppo.lambda,
    actions: acts.map((a, i) => ({
      agent: a.agent,
      role: a.role,
      turn: a.turn,
      text: a.text,
      reward: targets.get(a)!.reward,
      tokens: a.actionIds.map((_, k) => token(a, i, k)),
    })),
  };
}
