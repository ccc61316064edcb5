// The learning matrix: one row per MARFT setting, each a run config derived from a preset run
// (src/config/run-presets.ts) by a few overrides, grouped in families with a reference row that the row is
// compared with. configs/matrix/<row>.json is generated from this list (`npx tsx bench/matrix-configs.ts`);
// bench/matrix.ts trains and evaluates the rows, bench/matrix-report.ts turns the logs into docs/MATRIX.md.
// Budget: every row generates about the tokens of 30 duo iterations of 128 episodes (~195 k), so the rows
// compare at comparable generated tokens and cost about the same GPU time (a row's iterations are set from
// the measured tokens per episode of solo and duo, and estimated for the larger teams); the classroom pair
// keeps its preset's size. `note` says what this task can and cannot show for the row.

import { createHash } from 'node:crypto';
import { presetRunConfig } from '../src/config/run-presets.ts';

export interface MatrixRow {
  name: string;
  family: string;
  /** The row this one is compared with (null: the family's reference itself). */
  reference: string | null;
  /** What the row changes, in a few words. */
  what: string;
  /** Preset run it derives from, and an optional preset team swapped in. */
  from: string;
  team?: { preset: 'solo' | 'duo' | 'trio' | 'quartet' | 'orchestrated'; anonymous: boolean };
  /** Top-level fields and sections merged over the preset (each section one level deep). */
  set: Record<string, unknown>;
  /** The dynamic orchestrator's call limit per turn (graph.dynamic.maxSteps). */
  maxSteps?: number;
  note?: string;
}

/** Duo iterations of 128 episodes in every row's token budget. */
export const DUO_ITERATIONS = 30;

const duo = (
  name: string,
  family: string,
  reference: string | null,
  what: string,
  set: Record<string, unknown>,
  note?: string,
): MatrixRow => ({
  name,
  family,
  reference,
  what,
  from: 'duo-action',
  set: { iterations: DUO_ITERATIONS, ...set },
  ...(note ? { note } : {}),
});
const grpo = (g: number, level: 'action' | 'token'): MatrixRow =>
  duo(
    `grpo-g${g}-${level}`,
    'algorithm',
    level === 'action' ? 'ppo-action' : 'ppo-token',
    `GRPO, groups of ${g}, ${level} level`,
    {
      level,
      algo: 'grpo',
      rollout: { episodes: 128 / g, groupSize: g },
      schedule: { criticWarmup: 0 },
    },
    level === 'action'
      ? `runs from grpo-action-level/: before commit 9b43c1f GRPO trained per token at either level (this row was grpo-g${g}-token bit for bit); now its group-normalised advantage enters the action-level loss of whole actions`
      : undefined,
  );

/** Where bench/matrix.sh pretrains the routing row's model (an ignored build folder). */
export const ORCH_MODEL = '.build/models/marft-tiny-orchestrated';

/** marft-tiny-plan: the built-in model's recipe with coop-plan's transcripts too (docs/LEARNING.md); made before these rows. */
export const PLAN_MODEL = 'builtin:marft-tiny-plan';

/**
 * The coop-plan family (src/envs/coop-plan.ts) on marft-tiny-plan (the duo-action preset run there): the planner's plan is
 * judged by a rule, its greedy plan is wrong on trap problems, and the solver slips often, so the rows ask
 * whether RL flips the greedy plan and whether a rule-checked plan reward (plan-check) speeds that up.
 */
const plan = (name: string, reference: string | null, what: string, set: Record<string, unknown>, note?: string): MatrixRow =>
  duo(
    `plan-${name}`,
    'plan',
    reference === null ? null : `plan-${reference}`,
    what,
    {
      model: { path: PLAN_MODEL },
      env: { name: 'coop-plan', options: {} },
      ...set,
    },
    note,
  );

export const PLAN_ROWS: MatrixRow[] = [
  plan('ppo-action', null, 'coop-plan: PPO, action level, equal credit, shared critic (CTDE)', {}),
  plan('credit-step-discount', 'ppo-action', 'coop-plan: step_discount, d 0.5 (planner R/2, solver R)', {
    credit: { method: 'step_discount', discount: 0.5 },
  }),
  plan(
    'credit-per-step',
    'ppo-action',
    "coop-plan: per_step, the planner paid the environment's check of its plan (plan-check), the solver R",
    { credit: { method: 'per_step', perStep: { planner: 'plan-check' } } },
    "the planner's reward is the rule's verdict on its own plan, free of the solver's slips, where equal credit pays it only through the critic's estimate of a noisy team reward",
  ),
  plan('credit-sharing', 'ppo-action', 'coop-plan: reward sharing, both agents get R', { credit: { rewardSharing: true } }),
  plan(
    'schedule-agent-by-agent',
    'ppo-action',
    'coop-plan: agent-by-agent (interval 1), critic warm-up 2',
    { schedule: { mode: 'agent_by_agent', interval: 1 } },
    'each agent trains every other iteration, so at equal tokens it makes half the policy steps of the reference',
  ),
  plan('critic-lora', 'ppo-action', 'coop-plan: a critic LoRA and a head per agent (the reference: one shared critic, CTDE)', {
    critic: { mode: 'lora' },
  }),
  {
    ...plan(
      'orchestrated-routing',
      'ppo-action',
      'coop-plan: dynamic, an orchestrator calls planner, solver, verifier (at most 4 calls)',
      { iterations: 15 },
      "marft-tiny-plan's corpus has orchestrated transcripts (30 % skip the planner): whether the orchestrator learns to call the planner on traps; the eval logs carry each agent's calls per episode before and after",
    ),
    team: { preset: 'orchestrated', anonymous: false },
    maxSteps: 4,
  },
];

export const MATRIX_ROWS: MatrixRow[] = [
  duo('ppo-action', 'algorithm', null, 'PPO, action level (the duo-action preset)', {}),
  duo('ppo-token', 'algorithm', 'ppo-action', 'PPO, token level', { level: 'token' }),
  grpo(4, 'action'),
  grpo(8, 'action'),
  grpo(4, 'token'),
  grpo(8, 'token'),
  duo('credit-step-discount', 'credit', 'ppo-action', 'step_discount, d 0.5 (planner R/2, solver R)', {
    credit: { method: 'step_discount', discount: 0.5 },
  }),
  duo('credit-per-step', 'credit', 'ppo-action', "per_step: the planner's step reward, the solver R", {
    credit: { method: 'per_step', perStep: { planner: 'planner' } },
  }),
  duo('credit-sharing', 'credit', 'ppo-action', 'reward sharing: both agents get R', { credit: { rewardSharing: true } }),
  duo(
    'lora-shared',
    'lora',
    'ppo-action',
    'one LoRA shared by planner and solver',
    { lora: { mode: 'shared' } },
    'the planner and the solver write different texts from different prompts, so one adapter can serve both; a difference needs more than this budget to appear',
  ),
  duo('critic-per-agent', 'critic', 'ppo-action', 'a value head per agent', { critic: { mode: 'per_agent' } }),
  duo('critic-lora', 'critic', 'ppo-action', 'a critic LoRA and a head per agent', { critic: { mode: 'lora' } }),
  duo(
    'critic-episode',
    'critic',
    'ppo-action',
    'the critic reads the whole episode',
    { critic: { input: 'episode' } },
    "with one turn the solver's own prompt already holds the plan, so the episode adds only the planner's prompt to the critic's input",
  ),
  duo(
    'schedule-agent-by-agent',
    'schedule',
    'ppo-action',
    'agent-by-agent (interval 1), critic warm-up 2',
    { schedule: { mode: 'agent_by_agent', interval: 1 } },
    'each agent trains every other iteration, so at equal tokens it makes half the policy steps of the reference',
  ),
  duo('kl-loss', 'kl', 'ppo-action', 'KL to the base (k3, 0.1) in the loss', { ppo: { klCoef: 0.1, klEstimator: 'k3', klIn: 'loss' } }),
  duo('kl-reward', 'kl', 'kl-loss', 'KL to the base (k3, 0.1) in the reward (AReaL)', {
    ppo: { klCoef: 0.1, klEstimator: 'k3', klIn: 'reward' },
  }),
  // solo: 3921 tokens an iteration against the duo's 6500 (bench/results/learning/), so 50 iterations
  { ...duo('team-solo', 'team', 'ppo-action', 'one agent (solver), PPO', { iterations: 50 }), from: 'solo-ppo' },
  // trio and quartet: the verifier and the reflector estimated at the solver's ~31 tokens an episode
  {
    ...duo(
      'team-trio',
      'team',
      'ppo-action',
      'planner → solver → verifier',
      { iterations: 18 },
      'the verifier answers last, so the team is right only when it restates or corrects the answer; the built-in model was pretrained on planner and solver transcripts only, so the verifier starts from a prompt it never saw',
    ),
    team: { preset: 'trio', anonymous: false },
  },
  {
    ...duo(
      'team-quartet',
      'team',
      'ppo-action',
      'planner → solver → reflector → verifier',
      { iterations: 13 },
      'as the trio, with a reflector the model never saw either',
    ),
    team: { preset: 'quartet', anonymous: false },
  },
  {
    ...duo(
      'team-orchestrated',
      'team',
      'ppo-action',
      'dynamic: an orchestrator calls planner, solver, verifier (at most 4 calls)',
      { iterations: 15 },
      'the built-in model was pretrained on solo and duo transcripts only, so its orchestrator answers the problem itself (`The answer is \\boxed{10}.`) and never writes `<call>role</call>`: in seed 1 it called no agent in 1920 training episodes, every episode ended unanswered, the reward was 0 throughout and PPO had nothing to reinforce. `marft pretrain --teams solo,duo,orchestrated` adds the orchestrated turn to the corpus; the row shows routing only on a model pretrained so',
    ),
    team: { preset: 'orchestrated', anonymous: false },
    maxSteps: 4,
  },
  // The orchestrator on a model that has seen routing: made by the command in bench/matrix.sh (ORCH_MODEL)
  {
    ...duo(
      'team-orchestrated-routing',
      'team',
      'team-orchestrated',
      'the dynamic team on a model pretrained with orchestrated transcripts too',
      { iterations: 15, model: { path: ORCH_MODEL } },
      `\`marft pretrain --seed 0 --bf16 --teams solo,duo,orchestrated\` (30 % of its orchestrated transcripts skip the planner) into ${ORCH_MODEL}; its base is that model, untuned`,
    ),
    team: { preset: 'orchestrated', anonymous: false },
    maxSteps: 4,
  },
  duo(
    'horizon-3',
    'horizon',
    'ppo-action',
    "up to 3 turns with the judge's feedback",
    { iterations: 14, rollout: { horizon: 3 } },
    'a wrong answer gets a second and a third try after "judge: the answer is incorrect"; accuracy counts an episode solved in any turn, so it is higher before training too; the built-in model never saw feedback turns',
  ),
  {
    ...duo('anon-duo', 'anonymous', 'ppo-action', 'the duo with agent_1, agent_2 and generic prompts', { iterations: 25 }),
    from: 'duo-anonymous',
  },
  {
    ...duo('anon-trio', 'anonymous', 'team-trio', 'the trio with agent_1..3 and generic prompts', { iterations: 18 }),
    team: { preset: 'trio', anonymous: true },
    note: "with generic prompts every agent of the built-in model writes a full solution (agent_1 ~33 tokens an episode, a solver's length, not a plan), and agent_3, whose answer is the team's, sees two solutions, a prompt the model never saw, and copies them with drifting numbers (agent_2 alone is right twice as often); the team is rewarded in ~3 % of training episodes, about 4 of 128 an iteration, and the policy barely moves (approximate KL ~1e-5), so 18 iterations change little",
  },
  {
    name: 'class-equal',
    family: 'classroom',
    reference: null,
    what: 'the classroom run, equal credit (64 episodes, lr 5e-4)',
    from: 'class-equal',
    set: {},
  },
  {
    name: 'class-per-step',
    family: 'classroom',
    reference: 'class-equal',
    what: "the classroom run, per_step credit (the planner's step reward)",
    from: 'class-per-step',
    set: {},
    note: "the planner's credited reward is 0 under equal credit by definition (its signal comes through the critic), so the planner's curve separates at once; the team's accuracy decides whether the step reward helps",
  },
  ...PLAN_ROWS,
];

/** The row's run config: the preset run (with the row's team) and the row's overrides, one level deep per section. */
export function matrixConfig(row: MatrixRow): Record<string, unknown> {
  const base = presetRunConfig(row.from, row.team);
  if (!base) throw new Error(`matrix row ${row.name}: no preset run "${row.from}"`);
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(row.set)) {
    const cur = out[k];
    out[k] = v && typeof v === 'object' && !Array.isArray(v) && cur && typeof cur === 'object' ? { ...cur, ...v } : v;
  }
  if (row.maxSteps !== undefined) {
    const g = out.graph as { dynamic?: { maxSteps: number } | null };
    if (!g.dynamic) throw new Error(`matrix row ${row.name}: maxSteps needs a dynamic team`);
    out.graph = { ...g, dynamic: { ...g.dynamic, maxSteps: row.maxSteps } };
  }
  return out;
}

export const rowByName = (name: string): MatrixRow | undefined => MATRIX_ROWS.find((r) => r.name === name);

/**
 * What the untuned base's accuracy depends on: the team, the environment, the horizon and the model (not the
 * algorithm or the seed: `marft eval --base` uses its own fixed seed). Rows with one key share one base eval.
 */
export function baseKey(config: Record<string, unknown>): string {
  const c = config as { graph: unknown; env: unknown; model?: unknown; rollout?: { horizon?: number } };
  const text = JSON.stringify([c.graph, c.env, c.model ?? null, c.rollout?.horizon ?? null]);
  return createHash('sha256').update(text).digest('hex').slice(0, 12);
}
