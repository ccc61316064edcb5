// The inspector's per-token view of one episode: for every generated token its text, credited reward,
// value, advantage, return, the GAE terms (delta and where the recursion takes V_next / A_next from: the
// next token, the next agent across the boundary, the next turn's first agent, or the episode's end),
// and its log-probs (old, behaviour, reference) as ratio and KL. Advantages come from computeTargets
// re-run under the credit method asked for, so the same episode can be shown under several strategies
// side by side; the deltas are recomputed here from the same values and rewards, so the panel can show
// A = delta + gamma*lambda*A_next with the numbers that produced it.

import type { RunConfig } from '../config/run-config.ts';
import type { ActionRecord, EpisodeRecord } from '../marft/rollout.ts';
import type { ActionScores } from '../marft/score.ts';
import { computeTargets } from '../marft/advantage-targets.ts';
import type { CreditMethod, GaeNext, InspectAction, InspectToken, InspectedEpisode } from './api.ts';

export interface InspectInput {
  iteration: number;
  episodes: readonly EpisodeRecord[];
  scores: Map<ActionRecord, ActionScores>;
  config: RunConfig;
  decode: (ids: number[]) => string;
}

/** The run config with another credit method (its other credit settings kept). */
export function withCredit(config: RunConfig, method: CreditMethod): RunConfig {
  return { ...config, credit: { ...config.credit, method } };
}

export function inspectEpisode(input: InspectInput, episode: number, method: CreditMethod = input.config.credit.method): InspectedEpisode {
  const ep = input.episodes[episode];
  if (!ep) throw Object.assign(new Error(`episode ${episode} is not in the last iteration (0..${input.episodes.length - 1})`), { code: 'INSPECT_RANGE' });
  const cfg = withCredit(input.config, method);
  const targets = computeTargets(input.episodes, input.scores, cfg);
  const { gamma, lambda } = cfg.ppo;
  const grpo = cfg.algo === 'grpo';
  const level = cfg.level;
  const acts = ep.actions;

  const baseToken = (a: ActionRecord, k: number): Omit<InspectToken, 'reward' | 'advantage' | 'value' | 'ret' | 'delta' | 'next'> => {
    const s = input.scores.get(a)!;
    const old = s.oldLogp[k] ?? 0;
    const beh = a.behaviourLogp[k] ?? old;
    return {
      id: a.actionIds[k],
      text: input.decode([a.actionIds[k]]),
      oldLogp: old,
      behaviourLogp: beh,
      ratio: Math.exp(old - beh),
      kl: s.refLogp.length ? old - s.refLogp[k] : null,
      entropy: s.entropy[k] ?? 0,
    };
  };
  const boundary = (from: ActionRecord, to: ActionRecord | undefined): GaeNext['kind'] => (!to ? 'end' : to.turn === from.turn ? 'agent' : 'turn');

  const out: InspectAction[] = acts.map((a) => ({ agent: a.agent, role: a.role, turn: a.turn, text: a.text, reward: targets.get(a)!.reward, tokens: [] }));

  if (grpo) {
    acts.forEach((a, i) => {
      const t = targets.get(a)!;
      out[i].tokens = a.actionIds.map((_, k) => ({
        ...baseToken(a, k), reward: k === a.actionIds.length - 1 ? t.reward : 0, advantage: t.advantages[k], value: null, ret: null, delta: null, next: null,
      }));
    });
  } else if (level === 'action') {
    const V = acts.map((a) => input.scores.get(a)!.values[0]);
    const A = acts.map((a) => targets.get(a)!.advantages[0]);
    acts.forEach((a, i) => {
      const t = targets.get(a)!;
      const nxt = acts[i + 1];
      const next: GaeNext = { kind: boundary(a, nxt), role: nxt?.role, value: nxt ? V[i + 1] : 0, advantage: nxt ? A[i + 1] : 0 };
      const delta = t.reward + gamma * next.value - V[i];
      out[i].tokens = a.actionIds.map((_, k) => ({
        ...baseToken(a, k), reward: t.reward, advantage: A[i], value: V[i], ret: t.returns[0], delta, next,
      }));
    });
  } else {
    // token level: the generated tokens in acting order; the recursion skips everything in between
    const flat: Array<{ a: number; k: number }> = [];
    acts.forEach((a, i) => a.actionIds.forEach((_, k) => flat.push({ a: i, k })));
    const val = (p: { a: number; k: number }) => input.scores.get(acts[p.a])!.values[p.k];
    const adv = (p: { a: number; k: number }) => targets.get(acts[p.a])!.advantages[p.k];
    flat.forEach((p, j) => {
      const a = acts[p.a];
      const t = targets.get(a)!;
      const last = p.k === a.actionIds.length - 1;
      const q = flat[j + 1];
      const kind: GaeNext['kind'] = !q ? 'end' : q.a === p.a ? 'token' : boundary(a, acts[q.a]);
      const next: GaeNext = { kind, role: q && q.a !== p.a ? acts[q.a].role : undefined, value: q ? val(q) : 0, advantage: q ? adv(q) : 0 };
      const reward = last ? t.reward : 0;
      const v = val(p);
      out[p.a].tokens.push({
        ...baseToken(a, p.k), reward, advantage: adv(p), value: v, ret: t.returns[p.k], delta: reward + gamma * next.value - v, next,
      });
    });
  }
  return {
    iteration: input.iteration,
    index: ep.index,
    task: ep.task,
    correct: ep.correct,
    teamRewards: ep.turns.map((t) => t.teamReward),
    feedback: ep.turns.map((t) => t.feedback),
    method,
    level,
    algo: cfg.algo,
    gamma,
    lambda,
    actions: out,
  };
}
