// The credit-assignment sandbox's pure part: a hand-made (or recorded) episode and its controls become
// the recorded-episodes JSONL and the run config that `marft inspect` reads, so the worker computes the
// numbers through the trainer's own code (inspect-jsonl.ts -> computeTargets) and nothing here re-derives
// them. Also the GAE chain the classroom mode steps through (read off the computed numbers) and the
// one-paragraph explanation of each credit method.

import type { RunConfig } from '../../config/run-config.ts';
import type { StepRewardName } from '../../config/run-config-schema.ts';
import { suggestedStepRewards } from '../../config/run-presets.ts';
import type { CreditMethod, InspectedLine } from '../../worker/api.ts';
import { explainMethod } from './credit-text.ts';

export interface SandboxAction {
  role: string;
  /** Generated tokens (>= 1). */
  tokens: number;
  /** The critic's value of each token (action level reads the first); the hand-made default is 0. */
  values: number[];
  /** The action's text: the per_step helpers read it (planner counts plan steps, solver looks for \boxed{}). */
  text: string;
  /** The environment's score of the role's own answer (SCORE_STEP_REWARDS pay it); null: none, they pay 0. */
  score: number | null;
}

export interface SandboxTurn {
  reward: number;
  /** Whether the team's answer was right (the reviewer's helper reads it); null: reward > 0. */
  correct: boolean | null;
  actions: SandboxAction[];
}

export interface Sandbox {
  turns: SandboxTurn[];
  /** GRPO: the team reward of each turn for the group's other samples (sample 0 is `turns`). */
  samples: number[][];
  level: RunConfig['level'];
  algo: RunConfig['algo'];
  /** GRPO: which values share a normalisation (the run config's ppo.groupNorm). */
  groupNorm: RunConfig['ppo']['groupNorm'];
  gamma: number;
  lambda: number;
  method: CreditMethod;
  discount: number;
  rewardSharing: boolean;
  perStep: Record<string, StepRewardName>;
}

export const newAction = (role: string, tokens = 3): SandboxAction => ({
  role,
  tokens,
  values: new Array<number>(tokens).fill(0),
  text: '',
  score: null,
});

/**
 * A one-turn episode with one action of each role, reward 1, values 0, and the base config's settings. The
 * per_step helpers are the config's when it trains with per_step; otherwise its own where it names any,
 * else the ones the builder suggests (the planner's plan-step reward), so per_step shows something of its own.
 */
export function defaultSandbox(roles: readonly string[], base: RunConfig): Sandbox {
  const own = base.credit.method === 'per_step' || Object.keys(base.credit.perStep).length > 0;
  const helpers: Record<string, string> = own ? base.credit.perStep : suggestedStepRewards(roles, base.env.name);
  return {
    turns: [{ reward: 1, correct: null, actions: roles.map((r) => newAction(r)) }],
    samples: [[0]],
    level: base.level,
    algo: base.algo,
    groupNorm: base.ppo.groupNorm,
    gamma: base.ppo.gamma,
    lambda: base.ppo.lambda,
    method: base.credit.method,
    discount: base.credit.discount,
    rewardSharing: base.credit.rewardSharing,
    perStep: Object.fromEntries(roles.map((r) => [r, (helpers[r] ?? base.credit.fallback ?? 'team') as StepRewardName])),
  };
}

/** An action with `tokens` generated tokens: its values kept where they exist, new ones 0. */
export function resizeAction(a: SandboxAction, tokens: number): SandboxAction {
  const n = Math.max(1, Math.floor(tokens) || 1);
  return { ...a, tokens: n, values: Array.from({ length: n }, (_, k) => a.values[k] ?? 0) };
}

/** The turns changed to `turns` turns: a new turn copies the last one's actions; each sample's rewards follow. */
export function setTurnCount(s: Sandbox, turns: number): Sandbox {
  const n = Math.max(1, Math.floor(turns) || 1);
  const last = s.turns[s.turns.length - 1];
  const t = Array.from(
    { length: n },
    (_, i) => s.turns[i] ?? { reward: 0, correct: null, actions: last.actions.map((a) => ({ ...a, values: [...a.values] })) },
  );
  return { ...s, turns: t, samples: s.samples.map((r) => Array.from({ length: n }, (_, i) => r[i] ?? 0)) };
}

/** The run config the sandbox computes under: `base` with the sandbox's controls (no KL penalty: a hand-made episode has no log-probs). */
export function sandboxConfig(base: RunConfig, s: Sandbox): RunConfig {
  return {
    ...base,
    level: s.level,
    algo: s.algo,
    credit: {
      ...base.credit,
      method: s.method,
      discount: s.discount,
      rewardSharing: s.rewardSharing,
      perStep: { ...s.perStep },
      fallback: 'team',
    },
    ppo: { ...base.ppo, gamma: s.gamma, lambda: s.lambda, klCoef: 0, groupNorm: s.groupNorm ?? base.ppo.groupNorm },
    rollout: { ...base.rollout, groupSize: s.algo === 'grpo' ? s.samples.length + 1 : base.rollout.groupSize },
  };
}

/** The sandbox's episode (and, with GRPO, its group's other samples) in the recorded-episodes format. */
export function sandboxJsonl(s: Sandbox): string {
  const grpo = s.algo === 'grpo';
  const line = (id: string, rewards: number[]) =>
    JSON.stringify({
      id,
      ...(grpo ? { group: 'g0' } : {}),
      turns: s.turns.map((t, i) => ({
        reward: rewards[i],
        ...(t.correct !== null ? { correct: t.correct } : {}),
        actions: t.actions.map((a) => ({
          role: a.role,
          tokens: a.tokens,
          ...(grpo ? {} : s.level === 'action' ? { value: a.values[0] } : { values: a.values }),
          text: a.text,
          ...(a.score !== null ? { score: a.score } : {}),
        })),
      })),
    });
  const rows = [
    line(
      'e0',
      s.turns.map((t) => t.reward),
    ),
  ];
  if (grpo) s.samples.forEach((r, k) => rows.push(line(`e${k + 1}`, r)));
  return rows.join('\n') + '\n';
}

type Obj = Record<string, unknown>;

/**
 * One recorded episode (a line of the JSONL the Inspect tab exports) as a sandbox episode, keeping the
 * controls of `s`: roles, token counts, critic values (one per action spreads to its tokens), texts and the
 * environment's verdicts (scores, whether the team was right).
 */
export function sandboxFromRecorded(line: string, s: Sandbox): Sandbox {
  const v = JSON.parse(line) as { turns: Array<{ reward: number; correct?: boolean; actions: Obj[] }> };
  const turns = v.turns.map((t) => ({
    reward: t.reward,
    correct: t.correct ?? null,
    actions: t.actions.map((a) => {
      const n = a.tokens as number;
      const values = Array.isArray(a.values)
        ? [...(a.values as number[])]
        : new Array<number>(n).fill(typeof a.value === 'number' ? a.value : 0);
      const score = typeof a.score === 'number' ? a.score : null;
      return { role: a.role as string, tokens: n, values, text: (a.text as string | undefined) ?? '', score };
    }),
  }));
  return { ...s, turns, samples: s.samples.map(() => turns.map(() => 0)) };
}

/** One step of the GAE recursion as the classroom mode shows it: δ = r + γ·V_next − V, A = δ + γλ·A_next. */
export interface ChainStep {
  /** Index of the action in acting order (over the turns) and of the token within it (0 at action level). */
  action: number;
  token: number;
  role: string;
  turn: number;
  r: number;
  v: number;
  vNext: number;
  aNext: number;
  delta: number;
  a: number;
}

/**
 * The chain of an episode's computed targets in the order GAE walks it (from the end back to the start):
 * V_next and A_next are the next step's numbers in acting order (the next token, the next agent, the next
 * turn), 0 after the last step. Null with GRPO (no critic, no chain).
 */
export function gaeChain(line: InspectedLine): ChainStep[] | null {
  if (line.actions.some((a) => a.values === null || a.deltas === null)) return null;
  const flat: ChainStep[] = [];
  line.actions.forEach((a, ai) =>
    a.advantages.forEach((adv, k) =>
      flat.push({
        action: ai,
        token: k,
        role: a.role,
        turn: a.turn,
        r: a.rewards[k],
        v: a.values![k],
        vNext: 0,
        aNext: 0,
        delta: a.deltas![k],
        a: adv,
      }),
    ),
  );
  for (let i = 0; i < flat.length - 1; i++) {
    flat[i].vNext = flat[i + 1].v;
    flat[i].aNext = flat[i + 1].a;
  }
  return flat.reverse();
}

/** Where each agent's advantage comes from under the sandbox's settings: one paragraph. */
export function explainCredit(s: Sandbox): string {
  const roles = [...new Set(s.turns.flatMap((t) => t.actions.map((a) => a.role)))];
  const last = s.turns[0].actions[s.turns[0].actions.length - 1]?.role ?? 'the last agent';
  const credit = explainMethod({ method: s.method, discount: s.discount, rewardSharing: s.rewardSharing, perStep: s.perStep, roles, last });
  const where =
    s.algo === 'grpo'
      ? ` GRPO has no critic: each token's advantage is its reward-to-go (its action's credited reward and every later one), normalised ${
          s.groupNorm === 'agent_turn'
            ? "against the same agent's call of the same count in the group's other samples (agent-and-turn groups, AT-GRPO)"
            : "over every generated token of the group's samples together (mean and standard deviation, as AReaL)"
        }.`
      : ` Then GAE walks back from the end of the episode${s.level === 'token' ? ', token by token and across the agent boundaries (a Bellman backup)' : ', one step per action'}: δ = r + γ·V_next − V, A = δ + γλ·A_next with γ = ${s.gamma}, λ = ${s.lambda}; so an agent's advantage is its own δ plus the discounted δ of every agent after it — the later agents' rewards and the critic's values V (here as typed, 0 by default) decide how much of R reaches it.`;
  return `${credit}.${where}`;
}
