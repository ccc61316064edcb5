// Moving a run to a cluster: a lab checkpoint -> a config for the AReaL-based MARFT trainer, in the layout
// of its examples (examples/*/…_marft_….yaml: experiment_name, n_agents, agent_interaction_mode,
// share_critic, agent_profiles, gconfig, actor / critic / ref with the optimizer and the LoRA settings),
// with every agent's adapter alongside as a PEFT folder (adapters/<role>/, or adapters/shared/ in shared
// LoRA mode) so the cluster run starts from the lab's weights.
// What AReaL's PPOConfig has no key for (shared vs per-agent LoRA, credit assignment, level, schedule,
// dynamic topology, the lab's extra PPO knobs, the environment) goes in a top-level `marft:` block; per-agent
// settings ride in agent_profiles (a list of free-form dicts in AReaL). The lab's run config is also copied
// verbatim (lab_config.json) so nothing is lost. README.md ("Moving a run to a cluster") lists the mapping.
// The `multi_agent:` block is the AReaL-based MARFT's own schema (examples/marft/deepscaler_marft_2agent.yaml,
// read by its deepscaler_marft.py: graph, roles as AgentRole dicts, LoRA and critic modes, credit), so its
// example scripts start from the lab's team as they are. It holds only MultiAgentConfig's keys
// (areal/api/cli_args.py): OmegaConf's structured merge rejects any other.
// Browser-safe: returns files by relative path; the caller writes them.

import { stringify } from 'yaml';
import { ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE } from '../../model/peft.ts';
import { ConfigError } from '../../config/errors.ts';
import { type RunConfig, type StepRewardName, targetKlOf } from '../../config/run-config.ts';
import { agentDir } from './peft.ts';
import { arealEnvEntry, arealEnvFiles, arealEnvReadme } from './areal-env.ts';

export const AREAL_CONFIG_FILE = 'config.yaml';
export const AREAL_LAB_CONFIG_FILE = 'lab_config.json';
/** AReaL's "no top-k" (GenerationHyperparameters.top_k default int(1e8)). */
export const AREAL_TOP_K_OFF = 100_000_000;

export interface ArealOptions {
  /** actor.path: the base model (HF id or folder) on the cluster. */
  baseModel: string;
  /** experiment_name (default marft-lab-<env>-<n>agents). */
  experimentName?: string;
  /** trial_name (default the checkpoint name, or trial0). */
  trialName?: string;
  /** Where the run came from (checkpoint path and iteration), recorded under marft.source. */
  source?: { checkpoint: string; iteration: number };
}

/** Folder (relative to the export root) of a role's adapter. */
export const arealAdapterDir = (config: RunConfig, role: string): string =>
  config.lora.mode === 'shared' ? 'adapters/shared' : `adapters/${role}`;

/** The seed's per-step helpers (areal/reward/multi_agent.py) for the lab's: 'team' is its verifier helper (R). */
const AREAL_STEP_REWARD: Record<StepRewardName, string> = {
  planner: 'areal.reward.multi_agent.planner_step_reward',
  solver: 'areal.reward.multi_agent.solver_step_reward',
  verifier: 'areal.reward.multi_agent.verifier_step_reward',
  team: 'areal.reward.multi_agent.verifier_step_reward',
};

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
    throw new ConfigError('CONFIG_INVALID', `critic.mode "${critic}" has no AReaL independent_critic mapping (known: ${Object.keys(INDEPENDENT_CRITIC).join(', ')})`, 'Pick one of the critic modes listed, or extend INDEPENDENT_CRITIC in src/marft/export/areal.ts for the new mode.');
  }
  const perAgent = config.lora.mode === 'per_agent';
  const perStep = c.method === 'per_step' && !c.rewardSharing;
  // a linear chain in the graph's order is the seed's `sequential`; any other DAG is `custom` with graph_config
  const chain = roles.length === edges.length + 1 && edges.every((e) => roles.indexOf(e.to) === roles.indexOf(e.from) + 1);
  return {
    graph_type: chain ? 'sequential' : 'custom',
    ...(chain ? {} : { graph_config: { nodes: roles.map((r) => ({ id: r, role_name: r })), edges: edges.map((e) => [e.from, e.to]) } }),
    orchestration_mode: dyn ? 'dynamic' : 'static',
    ...(dyn && orchestrator ? { orchestrator_prompt: orchestrator.systemPrompt, orchestrator_max_new_tokens: orchestrator.maxNewTokens, max_steps: dyn.maxSteps } : {}),
    // one base model for every agent; per_agent gives each role its own adapter (lora_name agent_<role>), shared one adapter
    use_multi_lora: true,
    shared_lora: !perAgent,
    lora_name_prefix: 'agent',
    role_names: roles,
    role_configs: Object.fromEntries(agents.map((a) => {
      const fn = perStep ? (c.perStep[a.role] ?? null) : null;
      return [a.role, {
        name: a.role, system_prompt: a.systemPrompt, description: a.description ?? '',
        max_new_tokens: a.maxNewTokens, temperature: a.temperature, top_p: a.topP,
        ...(perAgent ? { lora_name: `agent_${a.role}` } : {}),
        ...(fn ? { reward_fn: AREAL_STEP_REWARD[fn as StepRewardName] } : {}),
      }];
    })),
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

/** The AReaL config as a plain object (the YAML's content). */
export function arealConfig(config: RunConfig, opts: ArealOptions): Record<string, unknown> {
  const agents = config.graph.agents;
  const p = config.ppo;
  const first = agents[0];
  const sameSampling = agents.every((a) => a.temperature === first.temperature && a.topK === first.topK && a.topP === first.topP);
  const greedy = agents.every((a) => a.temperature === 0);
  const parents = (role: string): string[] => config.graph.edges.filter((e) => e.to === role).map((e) => e.from);
  const optimizer = (lr: number) => ({
    type: 'adam', lr, weight_decay: p.weightDecay, beta1: 0.9, beta2: 0.999, eps: p.adamEps,
    lr_scheduler_type: 'constant', gradient_clipping: p.maxGradNorm, warmup_steps_proportion: 0,
  });
  // The normalisation the lab does: PPO normalises over the (mini)batch when advantageNorm is on; GRPO
  // normalises within the group only (std per groupStd, none = Dr. GRPO), always, and nothing after it.
  const grpo = config.algo === 'grpo';
  const advNorm = grpo
    ? { mean_level: 'group', std_level: p.groupStd === 'none' ? null : 'group', std_unbiased: p.groupStd !== 'population', group_size: config.rollout.groupSize }
    : p.advantageNorm
      ? { mean_level: 'batch', std_level: 'batch', std_unbiased: p.groupStd !== 'population', group_size: config.rollout.groupSize }
      : null;
  const experiment = opts.experimentName ?? sanitize(`marft-lab-${config.env.name}-${agents.length}agents`);
  const out: Record<string, unknown> = {
    experiment_name: experiment,
    trial_name: sanitize(opts.trialName ?? 'trial0'),
    n_agents: agents.length,
    // the lab's agents see their ancestors' outputs (sequential); a graph without edges acts in parallel
    agent_interaction_mode: agents.length > 1 && config.graph.edges.length === 0 && !config.graph.dynamic ? 'parallel' : 'sequential',
    share_critic: config.critic.mode === 'shared',
    multi_agent: arealMultiAgent(config),
    agent_profiles: agents.map((a, i) => ({
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
    })),
    seed: config.seed,
    total_train_epochs: 1,
    total_train_steps: config.iterations,
    tokenizer_path: '${actor.path}',
    gconfig: {
      n_samples: config.algo === 'grpo' ? config.rollout.groupSize : 1,
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
      group_size: '${gconfig.n_samples}',
      ppo_n_minibatches: p.minibatches,
      eps_clip: p.clip,
      temperature: '${gconfig.temperature}',
      kl_ctl: p.klCoef,
      kl_estimator: p.klEstimator,
      reward_sharing: '${multi_agent.reward_sharing}',
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
    ...(config.algo === 'ppo' ? {
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
    } : {}),
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
    // Settings AReaL's PPOConfig has no key for: read by the MARFT trainer script (pop this block before
    // OmegaConf's structured merge, or declare `marft: dict` on a PPOConfig subclass).
    marft: {
      level: config.level,
      algo: config.algo,
      lora: {
        mode: config.lora.mode,
        share_lora: config.lora.mode === 'shared',
        dropout: config.lora.dropout,
        init_adapters: Object.fromEntries(agents.map((a) => [a.role, arealAdapterDir(config, a.role)])),
      },
      credit_assignment: {
        method: config.credit.method,
        discount: config.credit.discount,
        reward_sharing: config.credit.rewardSharing,
        per_step: { ...config.credit.perStep },
        fallback: config.credit.fallback,
      },
      critic: { mode: config.critic.mode, input: config.critic.input, hidden: [...config.critic.hidden], value_loss: p.valueLoss, huber_delta: p.huberDelta, value_clip: p.valueClip },
      graph: {
        edges: config.graph.edges.map((e) => ({ from: e.from, to: e.to })),
        dynamic: config.graph.dynamic ? { orchestrator: config.graph.dynamic.orchestrator, max_steps: config.graph.dynamic.maxSteps } : null,
      },
      schedule: { mode: config.schedule.mode, interval: config.schedule.interval, critic_warmup: config.schedule.criticWarmup },
      ppo: {
        entropy_coef: p.entropyCoef,
        target_kl: targetKlOf(config),
        kl_in: p.klIn,
        epochs: p.epochs,
        log_prob_norm: p.logProbNorm,
        group_std: p.groupStd,
        // the lab's minibatch normalisation: never with GRPO (its advantages are normalised in the group only)
        advantage_norm: grpo ? false : p.advantageNorm,
      },
      rollout: { episodes: config.rollout.episodes, group_size: config.rollout.groupSize, horizon: config.rollout.horizon },
      env: arealEnvEntry(config),
      model_path: config.model.path,
      ...(opts.source ? { source: { checkpoint: opts.source.checkpoint, iteration: opts.source.iteration } } : {}),
    },
  };
  return out;
}

/** The YAML text (a header comment, then the config; `${...}` are OmegaConf interpolations). */
export function arealYaml(config: RunConfig, opts: ArealOptions): string {
  const header = [
    '# AReaL-MARFT config exported by MARFT Lab (marft export --format areal).',
    '# Top-level keys follow AReaL\'s PPOConfig and the MARFT examples; `marft:` holds the lab settings',
    '# AReaL has no key for (see README.md of the export). Adapters: the lora_path of each agent profile.',
    '',
  ].join('\n');
  return header + stringify(arealConfig(config, opts), { lineWidth: 0 });
}

function readme(config: RunConfig, opts: ArealOptions): string {
  const roles = config.graph.agents.map((a) => a.role);
  return [
    '# MARFT Lab run, exported for the AReaL-based MARFT trainer',
    '',
    `- ${AREAL_CONFIG_FILE}: the AReaL config (agents ${roles.join(' -> ')}, base model ${opts.baseModel}).`,
    `- adapters/: PEFT LoRA folders (r ${config.lora.r}, alpha ${config.lora.alpha}, ${config.lora.targets.join(', ')}); ${config.lora.mode === 'shared' ? 'one shared adapter in adapters/shared/' : 'one per agent: ' + roles.map((r) => `adapters/${r}/`).join(', ')}.`,
    `- ${AREAL_LAB_CONFIG_FILE}: the lab's own run config, verbatim.`,
    '',
    'Edit `actor.path` (the base model on the cluster), `cluster`, `allocation_mode` and the datasets, then',
    'start the trainer with `--config config.yaml`. Load an adapter as the initial LoRA weights with',
    '`PeftModel.from_pretrained(base, "adapters/<role>", is_trainable=True)`.',
    ...arealEnvReadme(config),
    '',
  ].join('\n');
}

/**
 * The export's files: config.yaml, lab_config.json, README.md and adapters/<role>/ (or adapters/shared/),
 * from a checkpoint's files (keyed as in the checkpoint folder: config.json, agents/<role>/adapter_*).
 */
export function arealExportFiles(config: RunConfig, checkpointFiles: Record<string, Uint8Array>, opts: ArealOptions): Record<string, Uint8Array | string> {
  const out: Record<string, Uint8Array | string> = {
    [AREAL_CONFIG_FILE]: arealYaml(config, opts),
    [AREAL_LAB_CONFIG_FILE]: JSON.stringify(config, null, 2) + '\n',
    'README.md': readme(config, opts),
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
