// Moving a run to a cluster: a lab checkpoint -> a config for the AReaL-based MARFT trainer, with every
// agent's adapter alongside as a PEFT folder (adapters/<role>/, or adapters/shared/ in shared LoRA mode) so
// the cluster run starts from the lab's weights.
// AReaL loads a config by merging the YAML into its PPOConfig dataclasses with OmegaConf's structured merge,
// which refuses any key they do not declare. So config.yaml holds only PPOConfig's fields (their names are
// kept as data in areal-ppo-config.json, from AReaL v0.5.3, and every export is checked against them) plus
// the trainer's `multi_agent:` block (the MARFT trainer's own config class declares it; it holds only that
// class's keys). What neither has a key for travels in files beside it: agents.json (the agents' profiles),
// lab_settings.json (level, schedule, critic head, the lab's extra PPO knobs, the environment) and
// lab_config.json (the run config, verbatim). The export's README lists what the cluster run does
// differently (arealClusterChanges), e.g. a KL penalty in the loss, which AReaL has no place for: kl_ctl is
// written 0 rather than AReaL's default 0.1, so the cluster adds no reward-side penalty the lab run lacked.
// Browser-safe: returns files by relative path; the caller writes them.

import { stringify } from 'yaml';
import { ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE } from '../../model/peft.ts';
import { ConfigError } from '../../config/errors.ts';
import { type RunConfig, targetKlOf } from '../../config/run-config.ts';
import { CODE_STEP_REWARDS, PLAN_STEP_REWARDS, type StepRewardName } from '../../config/run-config-schema.ts';
import { agentDir } from './peft.ts';
import { arealEnvEntry, arealEnvFiles, arealEnvReadme } from './areal-env.ts';
import PPO_CONFIG from './areal-ppo-config.json';

export const AREAL_CONFIG_FILE = 'config.yaml';
export const AREAL_LAB_CONFIG_FILE = 'lab_config.json';
export const AREAL_AGENTS_FILE = 'agents.json';
export const AREAL_LAB_SETTINGS_FILE = 'lab_settings.json';
/** The code roles' step rewards as a Python module (written when a code helper is mapped). */
export const AREAL_REWARDS_FILE = 'marft_lab_rewards.py';
/** AReaL's "no top-k" (GenerationHyperparameters.top_k default int(1e8)). */
export const AREAL_TOP_K_OFF = 100_000_000;
/** AReaL's NormConfig.eps. */
const NORM_EPS = 1e-5;

/** A config's key tree: a nested config is an object, a leaf null. */
export interface KeyTree {
  [key: string]: KeyTree | null;
}
/** PPOConfig's key tree at AReaL v0.5.3. */
export const AREAL_PPO_KEYS: KeyTree = PPO_CONFIG.keys;
export const AREAL_PPO_KEYS_SOURCE: string = PPO_CONFIG.source;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The key paths of `config` that PPOConfig does not declare (OmegaConf's structured merge would refuse them);
 * the top-level `multi_agent` block is the MARFT trainer's own and is left to its tests.
 */
export function arealUnknownKeys(config: Record<string, unknown>, tree: KeyTree = AREAL_PPO_KEYS, path = ''): string[] {
  const out: string[] = [];
  for (const [k, v] of Object.entries(config)) {
    if (!path && k === 'multi_agent') continue;
    const p = path ? `${path}.${k}` : k;
    if (!Object.hasOwn(tree, k)) out.push(p);
    else if (tree[k] !== null && isObject(v)) out.push(...arealUnknownKeys(v, tree[k], p));
  }
  return out;
}

export interface ArealOptions {
  /** actor.path: the base model (HF id or folder) on the cluster. */
  baseModel: string;
  /** experiment_name (default marft-lab-<env>-<n>agents). */
  experimentName?: string;
  /** trial_name (default the checkpoint name, or trial0). */
  trialName?: string;
  /** Where the run came from (checkpoint path and iteration), recorded in lab_settings.json. */
  source?: { checkpoint: string; iteration: number };
}

/** Folder (relative to the export root) of a role's adapter. */
export const arealAdapterDir = (config: RunConfig, role: string): string =>
  config.lora.mode === 'shared' ? 'adapters/shared' : `adapters/${role}`;

/**
 * Each step helper's function on the cluster: the math ones are the AReaL-based MARFT's
 * (areal/reward/multi_agent.py; 'team' is its verifier helper, R), the code ones the module the export writes.
 */
const AREAL_STEP_REWARD: Record<StepRewardName, string> = {
  planner: 'areal.reward.multi_agent.planner_step_reward',
  solver: 'areal.reward.multi_agent.solver_step_reward',
  verifier: 'areal.reward.multi_agent.verifier_step_reward',
  team: 'areal.reward.multi_agent.verifier_step_reward',
  coder: 'marft_lab_rewards.coder_step_reward',
  tester: 'marft_lab_rewards.tester_step_reward',
  reviewer: 'marft_lab_rewards.reviewer_step_reward',
  'plan-check': 'marft_lab_rewards.plan_check_step_reward',
};

/** The helpers whose Python the export writes (marft_lab_rewards.py): the code roles' and plan-check. */
const LAB_STEP_REWARDS = [...CODE_STEP_REWARDS, ...PLAN_STEP_REWARDS];

/** The step helpers a per_step run reads (none with reward sharing or another method). */
function stepHelpers(config: RunConfig): StepRewardName[] {
  const c = config.credit;
  if (c.method !== 'per_step' || c.rewardSharing) return [];
  return config.graph.agents
    .map((a) => (c.perStep[a.role] ?? c.fallback) as StepRewardName | null)
    .filter((h): h is StepRewardName => h !== null);
}

/** critic.mode -> the seed's independent_critic: null = one shared critic (CTDE), multi_head = a head per agent, lora = a critic LoRA per agent. */
const INDEPENDENT_CRITIC: Record<string, string | null> = { shared: null, per_agent: 'multi_head', lora: 'lora' };

/** The seed's `multi_agent:` block (its MultiAgentConfig) from the run config. */
export function arealMultiAgent(config: RunConfig): Record<string, unknown> {
  const dyn = config.graph.dynamic ?? null;
  // with a dynamic topology the orchestrator is the seed's orchestrator (its prompt and budget), not a role
  const agents = config.graph.agents.filter((a) => a.role !== dyn?.orchestrator);
  const orchestrator = dyn ? config.graph.agents.find((a) => a.role === dyn.orchestrator) : undefined;
  const roles = agents.map((a) => a.role);
  const edges = dyn ? [] : config.graph.edges;
  const c = config.credit;
  const critic: string = config.critic.mode;
  if (!Object.hasOwn(INDEPENDENT_CRITIC, critic)) {
    throw new ConfigError(
      'CONFIG_INVALID',
      `critic.mode "${critic}" has no AReaL independent_critic mapping (known: ${Object.keys(INDEPENDENT_CRITIC).join(', ')})`,
      'Pick one of the critic modes listed, or extend INDEPENDENT_CRITIC in src/marft/export/areal.ts for the new mode.',
    );
  }
  const perAgent = config.lora.mode === 'per_agent';
  const perStep = c.method === 'per_step' && !c.rewardSharing;
  // a linear chain in the graph's order is the seed's `sequential`; any other DAG is `custom` with graph_config
  const chain = roles.length === edges.length + 1 && edges.every((e) => roles.indexOf(e.to) === roles.indexOf(e.from) + 1);
  return {
    graph_type: chain ? 'sequential' : 'custom',
    ...(chain ? {} : { graph_config: { nodes: roles.map((r) => ({ id: r, role_name: r })), edges: edges.map((e) => [e.from, e.to]) } }),
    orchestration_mode: dyn ? 'dynamic' : 'static',
    ...(dyn && orchestrator
      ? { orchestrator_prompt: orchestrator.systemPrompt, orchestrator_max_new_tokens: orchestrator.maxNewTokens, max_steps: dyn.maxSteps }
      : {}),
    // one base model for every agent; per_agent gives each role its own adapter (lora_name agent_<role>), shared one adapter
    use_multi_lora: true,
    shared_lora: !perAgent,
    lora_name_prefix: 'agent',
    role_names: roles,
    role_configs: Object.fromEntries(
      agents.map((a) => {
        const fn = perStep ? (c.perStep[a.role] ?? null) : null;
        return [
          a.role,
          {
            name: a.role,
            system_prompt: a.systemPrompt,
            description: a.description ?? '',
            max_new_tokens: a.maxNewTokens,
            temperature: a.temperature,
            top_p: a.topP,
            ...(perAgent ? { lora_name: `agent_${a.role}` } : {}),
            ...(fn ? { reward_fn: AREAL_STEP_REWARD[fn as StepRewardName] } : {}),
          },
        ];
      }),
    ),
    credit_strategy: c.method,
    credit_discount: c.discount,
    step_reward_fn: perStep && c.fallback ? AREAL_STEP_REWARD[c.fallback as StepRewardName] : null,
    reward_sharing: c.rewardSharing,
    independent_critic: INDEPENDENT_CRITIC[critic],
    shared_policy: true,
    enable_thinking: false,
    dump_transcripts: false,
  };
}

const sanitize = (s: string): string => s.replace(/[^A-Za-z0-9.-]+/g, '-').replace(/^-+|-+$/g, '') || 'run';

/** AReaL's actor.kl_ctl: the lab's coefficient only where the lab puts the KL where AReaL does (the rewards). */
export const arealKlCtl = (config: RunConfig): number => (config.ppo.klIn === 'reward' ? config.ppo.klCoef : 0);

/** The AReaL config as a plain object (the YAML's content): PPOConfig's fields and `multi_agent:`. */
export function arealConfig(config: RunConfig, opts: ArealOptions): Record<string, unknown> {
  const agents = config.graph.agents;
  const p = config.ppo;
  const first = agents[0];
  const sameSampling = agents.every((a) => a.temperature === first.temperature && a.topK === first.topK && a.topP === first.topP);
  const greedy = agents.every((a) => a.temperature === 0);
  const optimizer = (lr: number) => ({
    type: 'adam',
    lr,
    weight_decay: p.weightDecay,
    beta1: 0.9,
    beta2: 0.999,
    eps: p.adamEps,
    lr_scheduler_type: 'constant',
    gradient_clipping: p.maxGradNorm,
    warmup_steps_proportion: 0,
  });
  // The normalisation the lab does: PPO normalises over the (mini)batch when advantageNorm is on; GRPO
  // normalises within the group only (std per groupStd, none = Dr. GRPO), always, and nothing after it.
  const grpo = config.algo === 'grpo';
  const G = config.rollout.groupSize;
  const advNorm = grpo
    ? {
        mean_level: 'group',
        std_level: p.groupStd === 'none' ? null : 'group',
        std_unbiased: p.groupStd !== 'population',
        eps: NORM_EPS,
        group_size: G,
      }
    : p.advantageNorm
      ? { mean_level: 'batch', std_level: 'batch', std_unbiased: p.groupStd !== 'population', eps: NORM_EPS, group_size: G }
      : null;
  const rewardNorm = p.rewardNorm
    ? { mean_level: p.rewardNorm, std_level: p.rewardNorm, std_unbiased: true, eps: NORM_EPS, group_size: p.rewardNorm === 'group' ? G : 1 }
    : null;
  const experiment = opts.experimentName ?? sanitize(`marft-lab-${config.env.name}-${agents.length}agents`);
  const out: Record<string, unknown> = {
    experiment_name: experiment,
    trial_name: sanitize(opts.trialName ?? 'trial0'),
    seed: config.seed,
    total_train_epochs: 1,
    total_train_steps: config.iterations,
    tokenizer_path: '${actor.path}',
    gconfig: {
      n_samples: grpo ? G : 1,
      min_new_tokens: 0,
      max_new_tokens: Math.max(...agents.map((a) => a.maxNewTokens)),
      greedy,
      temperature: sameSampling ? first.temperature : 1,
      top_k: sameSampling && first.topK !== 0 ? first.topK : AREAL_TOP_K_OFF,
      top_p: sameSampling ? first.topP : 1,
    },
    actor: {
      experiment_name: '${experiment_name}',
      trial_name: '${trial_name}',
      path: opts.baseModel,
      init_from_scratch: false,
      disable_dropout: config.lora.dropout === 0,
      dtype: 'bfloat16',
      optimizer: optimizer(p.lr),
      ppo_n_minibatches: p.minibatches,
      eps_clip: p.clip,
      temperature: '${gconfig.temperature}',
      // AReaL's only KL is the reward-side penalty; a lab KL in the loss is not carried (see arealClusterChanges)
      kl_ctl: arealKlCtl(config),
      kl_estimator: p.klEstimator,
      reward_scaling: p.rewardScaling,
      reward_bias: p.rewardBias,
      reward_clip: p.rewardClip,
      reward_norm: rewardNorm,
      // GRPO: values 0 and gamma = lambda = 1, so a token's advantage is its reward-to-go (the lab's GRPO ignores ppo.gamma/lambda)
      discount: grpo ? 1 : p.gamma,
      gae_lambda: grpo ? 1 : p.lambda,
      adv_norm: advNorm,
      max_new_tokens: '${gconfig.max_new_tokens}',
      use_lora: true,
      peft_type: 'lora',
      lora_rank: config.lora.r,
      lora_alpha: config.lora.alpha,
      target_modules: [...config.lora.targets],
    },
    ...(grpo
      ? {}
      : {
          critic: {
            is_critic: true,
            experiment_name: '${experiment_name}',
            trial_name: '${trial_name}',
            path: '${actor.path}',
            init_from_scratch: false,
            disable_dropout: true,
            dtype: '${actor.dtype}',
            eps_clip: p.valueClip,
            ppo_n_minibatches: '${actor.ppo_n_minibatches}',
            optimizer: optimizer(p.criticLr),
          },
        }),
    ref: {
      experiment_name: '${experiment_name}',
      trial_name: '${trial_name}',
      path: '${actor.path}',
      init_from_scratch: false,
      disable_dropout: true,
      dtype: '${actor.dtype}',
      optimizer: null,
    },
    sglang: {
      model_path: '${actor.path}',
      random_seed: '${seed}',
      dtype: '${actor.dtype}',
      enable_lora: '${actor.use_lora}',
      max_lora_rank: '${actor.lora_rank}',
      lora_target_modules: '${actor.target_modules}',
    },
    multi_agent: arealMultiAgent(config),
  };
  const unknown = arealUnknownKeys(out);
  if (unknown.length) {
    throw new ConfigError(
      'CONFIG_INVALID',
      `the AReaL export would write keys AReaL's PPOConfig does not declare: ${unknown.join(', ')}`,
      'Move them to lab_settings.json in src/marft/export/areal.ts (AReaL refuses unknown keys when it loads config.yaml).',
    );
  }
  return out;
}

/** agents.json: the agents' profiles as the lab ran them (what role_configs has no key for included). */
export function arealAgents(config: RunConfig): Array<Record<string, unknown>> {
  const parents = (role: string): string[] => config.graph.edges.filter((e) => e.to === role).map((e) => e.from);
  return config.graph.agents.map((a, i) => ({
    agent_id: i,
    agent_name: a.role,
    system_prompt: a.systemPrompt,
    with_answer: a.withAnswer,
    ...(a.description !== undefined ? { description: a.description } : {}),
    depends_on: parents(a.role),
    lora_path: arealAdapterDir(config, a.role),
    max_new_tokens: a.maxNewTokens,
    temperature: a.temperature,
    top_k: a.topK === 0 ? AREAL_TOP_K_OFF : a.topK,
    top_p: a.topP,
  }));
}

/** lab_settings.json: the lab's settings PPOConfig has no key for. */
export function arealLabSettings(config: RunConfig, opts: ArealOptions): Record<string, unknown> {
  const p = config.ppo;
  const grpo = config.algo === 'grpo';
  return {
    level: config.level,
    algo: config.algo,
    lora: {
      mode: config.lora.mode,
      dropout: config.lora.dropout,
      init_adapters: Object.fromEntries(config.graph.agents.map((a) => [a.role, arealAdapterDir(config, a.role)])),
    },
    credit_assignment: {
      method: config.credit.method,
      discount: config.credit.discount,
      reward_sharing: config.credit.rewardSharing,
      per_step: { ...config.credit.perStep },
      fallback: config.credit.fallback,
    },
    critic: {
      mode: config.critic.mode,
      input: config.critic.input,
      hidden: [...config.critic.hidden],
      value_loss: p.valueLoss,
      huber_delta: p.huberDelta,
      value_clip: p.valueClip,
    },
    graph: {
      edges: config.graph.edges.map((e) => ({ from: e.from, to: e.to })),
      dynamic: config.graph.dynamic ? { orchestrator: config.graph.dynamic.orchestrator, max_steps: config.graph.dynamic.maxSteps } : null,
    },
    schedule: { mode: config.schedule.mode, interval: config.schedule.interval, critic_warmup: config.schedule.criticWarmup },
    ppo: {
      entropy_coef: p.entropyCoef,
      target_kl: targetKlOf(config),
      kl_coef: p.klCoef,
      kl_in: p.klIn,
      epochs: p.epochs,
      log_prob_norm: p.logProbNorm,
      group_std: p.groupStd,
      group_norm: p.groupNorm,
      // the lab's minibatch normalisation: never with GRPO (its advantages are normalised in the group only)
      advantage_norm: grpo ? false : p.advantageNorm,
    },
    rollout: { episodes: config.rollout.episodes, group_size: config.rollout.groupSize, horizon: config.rollout.horizon },
    env: arealEnvEntry(config),
    model_path: config.model.path,
    ...(opts.source ? { source: { checkpoint: opts.source.checkpoint, iteration: opts.source.iteration } } : {}),
  };
}

/** What the cluster run does differently from the lab run, one line each (the export's README). */
export function arealClusterChanges(config: RunConfig): string[] {
  const p = config.ppo;
  const out: string[] = [];
  if (p.klIn === 'loss' && p.klCoef > 0) {
    out.push(
      `KL: the lab adds ${p.klCoef} * KL(policy || ref) to the loss; AReaL has no KL term in its loss, only a reward-side penalty (-kl_ctl * KL per token). kl_ctl is 0, so the cluster run has no KL penalty; set actor.kl_ctl for AReaL's reward-side one (a different objective).`,
    );
  } else if (p.klIn === 'loss')
    out.push("KL: none in the lab run; kl_ctl is written 0 because AReaL's default (0.1) would add a reward-side penalty.");
  if (config.algo === 'grpo' && p.groupNorm === 'agent_turn') {
    out.push(
      "GRPO grouping: the lab normalised each action against the same agent's call in the other samples (agent_turn); AReaL pools every generated token of the group (adv_norm, group level).",
    );
  }
  if (config.level === 'action') out.push("Level: the lab ran action-level PPO (one ratio per action); AReaL's loss is per token.");
  if (p.entropyCoef > 0) out.push(`Entropy: the lab's entropy bonus (${p.entropyCoef}) has no AReaL key.`);
  const tk = targetKlOf(config);
  if (tk !== null) out.push(`Early stop: the lab skipped a minibatch's policy step above approximate KL ${tk}; AReaL has no such stop.`);
  if (p.epochs > 1) out.push(`Epochs: the lab made ${p.epochs} passes over each batch; AReaL makes one (ppo_n_minibatches steps).`);
  if (config.schedule.mode === 'agent_by_agent')
    out.push(
      `Schedule: the lab trained one agent at a time (every ${config.schedule.interval} iterations); AReaL trains every agent each step.`,
    );
  if (config.algo === 'ppo')
    out.push(
      "Critic: the lab's critic is an MLP head on the frozen trunk; AReaL's is a value model (critic:), trained from the base model.",
    );
  return out;
}

/** The YAML text (a header comment, then the config; `${...}` are OmegaConf interpolations). */
export function arealYaml(config: RunConfig, opts: ArealOptions): string {
  const header = [
    '# AReaL-MARFT config exported by MARFT Lab (marft export --format areal).',
    "# Only PPOConfig's fields (AReaL v0.5.3) and the MARFT trainer's multi_agent: block; the agents' profiles",
    `# and the lab's other settings are in ${AREAL_AGENTS_FILE} and ${AREAL_LAB_SETTINGS_FILE} (see README.md).`,
    '',
  ].join('\n');
  return header + stringify(arealConfig(config, opts), { lineWidth: 0 });
}

// The code roles' step rewards on the cluster: the lab's rules (src/marft/credit.ts), keyword arguments in.
const REWARDS_PY = `# MARFT Lab's step rewards for code roles and coop-plan's plan role, written by marft export --format areal (the lab's rules,
# src/marft/credit.ts). Each takes keyword arguments and returns a float:
#   completion: the role's text; team_reward: the turn's team reward; correct: every test passed;
#   pass_rate: the share of tests the role's own code passed (None without code).
import re

_TEST_CASE = re.compile(r"(?:^|\\n)[^\\n]*?(?:\\bassert(?:\\.\\w+)?\\s*\\(|\\bexpect\\s*\\(|\\)\\s*===?\\s*\\S)")
_VERDICT = re.compile(r"\\b(approve[sd]?|lgtm|accept(?:ed)?|(?:in|not\\s+)correct|correct|reject(?:ed)?|wrong|buggy|fails?)\\b", re.IGNORECASE)


def coder_step_reward(completion="", team_reward=0.0, correct=False, pass_rate=None, **_):
    """The share of tests the role's own code passed; 0 without code."""
    return float(pass_rate or 0.0)


def tester_step_reward(completion="", team_reward=0.0, correct=False, pass_rate=None, **_):
    """0.5 * min(test cases / 2, 1) + 0.5 * team reward; a test case is a line with assert / expect / ===."""
    return 0.5 * min(len(_TEST_CASE.findall(completion)) / 2, 1.0) + 0.5 * float(team_reward)


def reviewer_step_reward(completion="", team_reward=0.0, correct=False, pass_rate=None, **_):
    """1 when the last verdict word (approve / lgtm / correct vs reject / incorrect / wrong) matches the outcome."""
    words = [re.sub(r"\\s+", " ", m.group(1).lower()) for m in _VERDICT.finditer(completion)]
    if not words:
        return 0.0
    approve = re.match(r"(approve|lgtm|accept|correct)", words[-1]) is not None
    return 1.0 if approve == bool(correct) else 0.0


def plan_check_step_reward(completion="", team_reward=0.0, correct=False, plan_score=None, **_):
    """coop-plan's rule check of the role's plan (1 right, else the share of its leading steps right): the
    cluster's environment must pass it as plan_score; 0 without it."""
    return float(plan_score or 0.0)
`;

function readme(config: RunConfig, opts: ArealOptions): string {
  const roles = config.graph.agents.map((a) => a.role);
  const code = stepHelpers(config).some((h) => LAB_STEP_REWARDS.includes(h));
  const changes = arealClusterChanges(config);
  return [
    '# MARFT Lab run, exported for the AReaL-based MARFT trainer',
    '',
    `- ${AREAL_CONFIG_FILE}: the AReaL config (agents ${roles.join(' -> ')}, base model ${opts.baseModel}): only fields of AReaL v0.5.3's`,
    "  PPOConfig, so it loads as it is, plus the `multi_agent:` block the MARFT trainer's config class declares.",
    `- adapters/: PEFT LoRA folders (r ${config.lora.r}, alpha ${config.lora.alpha}, ${config.lora.targets.join(', ')}); ${config.lora.mode === 'shared' ? 'one shared adapter in adapters/shared/' : 'one per agent: ' + roles.map((r) => `adapters/${r}/`).join(', ')}.`,
    `- ${AREAL_AGENTS_FILE}: the agents' profiles (answering role, dependencies, sampling, adapter folder).`,
    `- ${AREAL_LAB_SETTINGS_FILE}: the lab's settings AReaL has no key for (level, credit, critic head, schedule, PPO extras, environment).`,
    `- ${AREAL_LAB_CONFIG_FILE}: the lab's own run config, verbatim.`,
    ...(code
      ? [
          `- ${AREAL_REWARDS_FILE}: the code roles' step rewards (and plan-check's; role_configs.<role>.reward_fn names them); put this folder on PYTHONPATH.`,
        ]
      : []),
    '',
    'Edit `actor.path` (the base model on the cluster), `cluster`, `allocation_mode` and the datasets, then',
    'start the trainer with `--config config.yaml`. Load an adapter as the initial LoRA weights with',
    '`PeftModel.from_pretrained(base, "adapters/<role>", is_trainable=True)`.',
    ...(changes.length ? ['', '## What the cluster run does differently', '', ...changes.map((c) => `- ${c}`)] : []),
    ...arealEnvReadme(config),
    '',
  ].join('\n');
}

/**
 * The export's files: config.yaml, agents.json, lab_settings.json, lab_config.json, README.md, the code
 * step rewards when used, and adapters/<role>/ (or adapters/shared/), from a checkpoint's files (keyed as
 * in the checkpoint folder: config.json, agents/<role>/adapter_*).
 */
export function arealExportFiles(
  config: RunConfig,
  checkpointFiles: Record<string, Uint8Array>,
  opts: ArealOptions,
): Record<string, Uint8Array | string> {
  const out: Record<string, Uint8Array | string> = {
    [AREAL_CONFIG_FILE]: arealYaml(config, opts),
    [AREAL_AGENTS_FILE]: JSON.stringify(arealAgents(config), null, 2) + '\n',
    [AREAL_LAB_SETTINGS_FILE]: JSON.stringify(arealLabSettings(config, opts), null, 2) + '\n',
    [AREAL_LAB_CONFIG_FILE]: JSON.stringify(config, null, 2) + '\n',
    'README.md': readme(config, opts),
    ...(stepHelpers(config).some((h) => LAB_STEP_REWARDS.includes(h)) ? { [AREAL_REWARDS_FILE]: REWARDS_PY } : {}),
    ...arealEnvFiles(config),
  };
  for (const a of config.graph.agents) {
    const dst = arealAdapterDir(config, a.role);
    for (const f of [ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE]) {
      const src = checkpointFiles[`${agentDir(a.role)}/${f}`];
      if (!src) throw new Error(`the checkpoint has no ${agentDir(a.role)}/${f}`);
      out[`${dst}/${f}`] ??= src;
    }
  }
  return out;
}
