// The recorded-episodes format (public; README "Inspecting recorded episodes"): one episode a JSON line,
//   {"id": "e1", "group": "task-7", "turns": [{"reward": 1, "correct": true, "actions": [{"role": "planner",
//    "tokens": 3, "value": 0.2, "values": [0.2, 0.1, 0.3], "text": "...", "score": 1}, ...]}]}
// and the targets `marft inspect` prints for it, one line per episode:
//   {"id": "e1", "actions": [{"turn": 0, "role": "planner", "rewards": [...], "values": [...], "deltas": [...],
//    "advantages": [...], "returns": [...]}, ...]}
// Episodes read from the format become the trainer's own EpisodeRecord and ActionScores, and the numbers come
// from computeTargets as the update calls it (credit, GAE with its trace, GRPO's group normalisation), so
// the headless inspector and the lab's show the same numbers; nothing here re-derives them. The lab's
// Inspect tab writes its iteration in the same format (episodesToJsonl), so a run's episodes replay here.

import type { RunConfig } from '../config/run-config.ts';
import { computeTargets } from './advantage-targets.ts';
import type { CreditMethod } from './credit.ts';
import { MarftError } from './errors.ts';
import type { ActionRecord, EpisodeRecord } from './rollout.ts';
import type { ActionScores } from './score.ts';

/** One action's targets, an entry per generated token (token level) or a single one (action level). */
export interface InspectedAction {
  turn: number;
  role: string;
  rewards: number[];
  /** Critic values, deltas and returns: null with GRPO (no critic). */
  values: number[] | null;
  deltas: number[] | null;
  advantages: number[];
  returns: number[] | null;
}

export interface InspectedLine {
  id: string;
  actions: InspectedAction[];
}

/** Recorded episodes as the trainer holds them, with each episode's id and GRPO group from its line. */
export interface RecordedEpisodes {
  ids: string[];
  groups: Array<string | undefined>;
  episodes: EpisodeRecord[];
  scores: Map<ActionRecord, ActionScores>;
}

const ACTION_KEYS: ReadonlySet<string> = new Set(['role', 'tokens', 'value', 'values', 'logp', 'refLogp', 'text', 'score']);
const TURN_KEYS: ReadonlySet<string> = new Set(['reward', 'correct', 'actions']);
const EPISODE_KEYS: ReadonlySet<string> = new Set(['id', 'group', 'turns']);

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const finite = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/** Which critic value an action must carry under `config`: one per action, one per token, or none (GRPO). */
const needs = (config: RunConfig): 'value' | 'values' | null =>
  config.algo === 'grpo' ? null : config.level === 'action' ? 'value' : 'values';

/**
 * Parses the recorded-episodes JSONL against a run config (its roles, level and algorithm). Blank lines are
 * skipped; anything else that is wrong fails with EPISODES_INVALID naming the file, the line and the field.
 */
export function parseRecordedEpisodes(text: string, config: RunConfig, file = 'episodes'): RecordedEpisodes {
  const roles = config.graph.agents.map((a) => a.role);
  const need = needs(config);
  const out: RecordedEpisodes = { ids: [], groups: [], episodes: [], scores: new Map() };
  const seen = new Map<string, number>();
  text.split('\n').forEach((raw, i) => {
    if (!raw.trim()) return;
    const line = i + 1;
    const fail = (field: string, problem: string): never => {
      throw new MarftError('EPISODES_INVALID', `${file} line ${line}${field ? `, ${field}` : ''}: ${problem}`);
    };
    let v: unknown;
    try {
      v = JSON.parse(raw);
    } catch (e) {
      return fail('', `not JSON (${(e as Error).message})`);
    }
    if (!isObj(v)) return fail('', 'an episode must be a JSON object');
    const rejectExtra = (o: Obj, keys: ReadonlySet<string>, at: string) => {
      for (const k of Object.keys(o))
        if (!keys.has(k)) fail(`${at}${at ? '.' : ''}${k}`, `unknown field (an episode has ${[...keys].join(', ')})`);
    };
    rejectExtra(v, EPISODE_KEYS, '');
    if (typeof v.id !== 'string' || !v.id) return fail('id', `must be a non-empty string, got ${JSON.stringify(v.id)}`);
    if (seen.has(v.id)) return fail('id', `"${v.id}" is also the id of line ${seen.get(v.id)}`);
    seen.set(v.id, line);
    if (v.group !== undefined && (typeof v.group !== 'string' || !v.group))
      return fail('group', `must be a non-empty string, got ${JSON.stringify(v.group)}`);
    if (config.algo === 'grpo' && v.group === undefined)
      return fail('group', 'is missing: GRPO normalises advantages within a group (the samples of one task)');
    if (!Array.isArray(v.turns) || !v.turns.length) return fail('turns', 'must be a non-empty array');
    const index = out.episodes.length;
    const actions: ActionRecord[] = [];
    const turns = v.turns.map((t: unknown, ti: number) => {
      const at = `turns[${ti}]`;
      if (!isObj(t)) return fail(at, 'must be an object with reward and actions');
      rejectExtra(t, TURN_KEYS, at);
      if (!finite(t.reward))
        return fail(`${at}.reward`, `must be a finite number (the team's reward for the turn), got ${JSON.stringify(t.reward)}`);
      if (t.correct !== undefined && typeof t.correct !== 'boolean')
        return fail(`${at}.correct`, `must be true or false (whether the team's answer was right), got ${JSON.stringify(t.correct)}`);
      if (!Array.isArray(t.actions) || !t.actions.length) return fail(`${at}.actions`, 'must be a non-empty array, in acting order');
      const correct = t.correct ?? t.reward > 0;
      // the environment's verdict on a role's own answer, which per_step's coder and plan-check helpers pay
      const answers: Record<string, { answer: null; correct: boolean; score: number }> = {};
      t.actions.forEach((a: unknown, ai: number) => {
        const aat = `${at}.actions[${ai}]`;
        if (!isObj(a)) return fail(aat, 'must be an object with role and tokens');
        rejectExtra(a, ACTION_KEYS, aat);
        if (typeof a.role !== 'string' || !roles.includes(a.role))
          return fail(`${aat}.role`, `${JSON.stringify(a.role)} is not a role of the run config (${roles.join(', ')})`);
        if (!Number.isInteger(a.tokens) || (a.tokens as number) < 1)
          return fail(`${aat}.tokens`, `must be the number of generated tokens, an integer >= 1, got ${JSON.stringify(a.tokens)}`);
        const n = a.tokens as number;
        if (a.value !== undefined && !finite(a.value))
          return fail(`${aat}.value`, `must be a finite number, got ${JSON.stringify(a.value)}`);
        if (a.values !== undefined) {
          if (!Array.isArray(a.values) || !a.values.every(finite))
            return fail(`${aat}.values`, 'must be an array of finite numbers, one per generated token');
          if (a.values.length !== n)
            return fail(`${aat}.values`, `has ${a.values.length} entries but tokens is ${n} (one value per generated token)`);
        }
        if (need && a[need] === undefined)
          return fail(
            `${aat}.${need}`,
            `is missing: a ${config.level}-level PPO config needs ${need === 'value' ? "the action's critic value" : 'the critic value of every generated token'}`,
          );
        // ppo.klIn 'reward' puts -klCoef·KL(old, ref) per token into the rewards: it needs both log-probs of every token
        const withKl = config.algo === 'ppo' && config.ppo.klIn === 'reward' && config.ppo.klCoef > 0;
        for (const k of ['logp', 'refLogp'] as const) {
          if (a[k] === undefined) {
            if (withKl)
              return fail(
                `${aat}.${k}`,
                `is missing: with ppo.klIn "reward" the KL penalty joins the rewards, so every action needs logp and refLogp (the policy's and the reference model's log-prob of each generated token)`,
              );
            continue;
          }
          if (!Array.isArray(a[k]) || !(a[k] as unknown[]).every(finite))
            return fail(`${aat}.${k}`, 'must be an array of finite numbers, one per generated token');
          if ((a[k] as number[]).length !== n)
            return fail(`${aat}.${k}`, `has ${(a[k] as number[]).length} entries but tokens is ${n} (one log-prob per generated token)`);
        }
        if (a.text !== undefined && typeof a.text !== 'string')
          return fail(`${aat}.text`, `must be a string, got ${JSON.stringify(a.text)}`);
        if (a.score !== undefined) {
          if (!finite(a.score))
            return fail(
              `${aat}.score`,
              `must be a finite number (the environment's score of the role's own answer), got ${JSON.stringify(a.score)}`,
            );
          const had = answers[a.role]?.score;
          if (had !== undefined && had !== a.score)
            return fail(
              `${aat}.score`,
              `role "${a.role}" has score ${had} on an earlier action of this turn (the environment scores a role once a turn)`,
            );
          answers[a.role] = { answer: null, correct, score: a.score };
        }
        const rec: ActionRecord = {
          episode: index,
          turn: ti,
          agent: roles.indexOf(a.role),
          role: a.role,
          promptIds: [],
          actionIds: new Array<number>(n).fill(0),
          behaviourLogp: [],
          text: a.text ?? '',
          finish: '',
          truncated: 0,
        };
        const values = need === 'value' ? [a.value as number] : need === 'values' ? [...(a.values as number[])] : [];
        out.scores.set(rec, {
          oldLogp: [...((a.logp as number[] | undefined) ?? [])],
          refLogp: [...((a.refLogp as number[] | undefined) ?? [])],
          entropy: [],
          values,
          criticRow: 0,
        });
        actions.push(rec);
      });
      return { teamReward: t.reward, correct, feedback: '', answers };
    });
    out.ids.push(v.id);
    out.groups.push(v.group);
    out.episodes.push({ index, seed: 0, task: v.id, info: {}, actions, turns, done: true, correct: turns[turns.length - 1].correct });
  });
  if (!out.episodes.length) throw new MarftError('EPISODES_INVALID', `${file}: no episodes (one JSON object a line)`);
  return out;
}

/**
 * GRPO's groups as computeTargets takes them: the episode order with each group's episodes consecutive
 * (groups in order of first appearance). A group must hold exactly rollout.groupSize episodes.
 */
function groupOrder(rec: RecordedEpisodes, config: RunConfig, file: string): number[] {
  if (config.algo !== 'grpo') return rec.episodes.map((_, e) => e);
  const byGroup = new Map<string, number[]>();
  rec.groups.forEach((g, e) => byGroup.set(g!, [...(byGroup.get(g!) ?? []), e]));
  const G = config.rollout.groupSize;
  for (const [g, members] of byGroup) {
    if (members.length !== G) {
      throw new MarftError(
        'EPISODES_GROUP',
        `${file}: group "${g}" has ${members.length} episodes (${members.map((e) => rec.ids[e]).join(', ')}); rollout.groupSize is ${G}`,
      );
    }
  }
  return [...byGroup.values()].flat();
}

/** The targets of recorded episodes, exactly as the update uses them, one line per episode in input order. */
export function inspectRecorded(
  rec: RecordedEpisodes,
  config: RunConfig,
  method: CreditMethod = config.credit.method,
  file = 'episodes',
): InspectedLine[] {
  const cfg: RunConfig = method === config.credit.method ? config : { ...config, credit: { ...config.credit, method } };
  const order = groupOrder(rec, cfg, file);
  const targets = computeTargets(
    order.map((e) => rec.episodes[e]),
    rec.scores,
    cfg,
  );
  const grpo = cfg.algo === 'grpo';
  const perToken = cfg.level === 'token';
  return rec.episodes.map((ep, e) => ({
    id: rec.ids[e],
    actions: ep.actions.map((a) => {
      const t = targets.get(a)!;
      const n = a.actionIds.length;
      if (grpo) {
        return {
          turn: a.turn,
          role: a.role,
          values: null,
          deltas: null,
          returns: null,
          rewards: perToken ? a.actionIds.map((_, k) => (k === n - 1 ? t.reward : 0)) : [t.reward],
          advantages: perToken ? [...t.advantages] : [t.advantages[0]],
        };
      }
      return {
        turn: a.turn,
        role: a.role,
        rewards: t.trace.map((g) => g.reward),
        values: t.trace.map((g) => g.value),
        deltas: t.trace.map((g) => g.delta),
        advantages: [...t.advantages],
        returns: [...t.returns],
      };
    }),
  }));
}

/** An iteration's episodes in the recorded-episodes format (GRPO groups: consecutive runs of groupSize episodes). */
export function episodesToJsonl(config: RunConfig, episodes: readonly EpisodeRecord[], scores: Map<ActionRecord, ActionScores>): string {
  const need = needs(config);
  const G = config.rollout.groupSize;
  return (
    episodes
      .map((ep, e) =>
        JSON.stringify({
          id: `e${ep.index}`,
          ...(config.algo === 'grpo' ? { group: `g${Math.floor(e / G)}` } : {}),
          turns: ep.turns.map((turn, t) => ({
            reward: turn.teamReward,
            // written where it differs from the default (reward > 0): the code environment's partial rewards
            ...(turn.correct !== turn.teamReward > 0 ? { correct: turn.correct } : {}),
            actions: ep.actions
              .filter((a) => a.turn === t)
              .map((a) => {
                const s = scores.get(a)!;
                const v = s.values;
                const score = turn.answers[a.role]?.score;
                const kl =
                  config.algo === 'ppo' && config.ppo.klIn === 'reward' && config.ppo.klCoef > 0
                    ? { logp: s.oldLogp, refLogp: s.refLogp }
                    : {};
                return {
                  role: a.role,
                  tokens: a.actionIds.length,
                  ...(need === 'value' ? { value: v[0] } : need === 'values' ? { values: v } : {}),
                  ...kl,
                  text: a.text,
                  ...(typeof score === 'number' ? { score } : {}),
                };
              }),
          })),
        }),
      )
      .join('\n') + '\n'
  );
}
