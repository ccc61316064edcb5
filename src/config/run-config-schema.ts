// The run config's vocabulary (the names its fields take) and its schema: each field's default, range and
// description, from which validateConfig (run-config.ts) fills and checks a config, the builder's help is
// drawn and configJsonSchema exports JSON Schema.

import { TEAM_REWARDS } from '../envs/types.ts';
import { PROFILE_SCHEMA } from './graph.ts';
import { presetGraph } from './presets.ts';
import { int, num, type Schema } from './schema.ts';

export const LORA_TARGETS = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] as const;
export type LoraTarget = (typeof LORA_TARGETS)[number];

/** The per_step reward helpers a config may name (src/marft/credit.ts implements exactly these). */
export const STEP_REWARD_NAMES = ['planner', 'solver', 'verifier', 'team', 'coder', 'tester', 'reviewer', 'plan-check'] as const;
export type StepRewardName = (typeof STEP_REWARD_NAMES)[number];
/** Helpers that read a math answer (\boxed{}) or stand for the math workflow's checker: refused in the code environment. */
export const MATH_STEP_REWARDS: readonly StepRewardName[] = ['solver', 'verifier'];
/** Helpers that read the code environment's test runs: refused elsewhere. */
export const CODE_STEP_REWARDS: readonly StepRewardName[] = ['coder', 'tester', 'reviewer'];
/** Helpers that read coop-plan's rule check of a role's plan: refused elsewhere, and for any role but the env's plan role. */
export const PLAN_STEP_REWARDS: readonly StepRewardName[] = ['plan-check'];
/** Helpers that pay the environment's score of the role's own answer (the code's pass rate, the plan's check), not a rule on its text. */
export const SCORE_STEP_REWARDS: readonly StepRewardName[] = ['coder', 'plan-check'];

/** How GRPO groups values before normalising: AReaL's pooled tokens of a task's samples, or AT-GRPO's agent-and-turn groups. */
export const GROUP_NORMS = ['pooled', 'agent_turn'] as const;
/** AReaL's reward_norm levels: null = off. */
export const REWARD_NORMS = ['batch', 'group'] as const;

const prob: Omit<Extract<Schema, { type: 'number' }>, 'type' | 'default'> = { min: 0, max: 1 };
const positive: Omit<Extract<Schema, { type: 'number' }>, 'type' | 'default'> = { min: 0, exclusiveMin: true };

export const CONFIG_SCHEMA: Schema = {
  type: 'object',
  description: 'MARFT Lab run config',
  fields: {
    seed: int(0, 0, 'Seeds env sampling, initialisation and generation.'),
    iterations: int(100, 1, 'Training iterations (each: rollout, credit and advantages, update).'),
    model: {
      type: 'object',
      fields: {
        path: {
          type: 'string',
          default: '',
          description: 'Hugging Face model folder; empty = the built-in tiny model; builtin:<name> = another model of public/models/.',
        },
      },
    },
    graph: {
      type: 'object',
      default: presetGraph('duo') as unknown as Record<string, unknown>,
      fields: {
        agents: {
          type: 'array',
          items: PROFILE_SCHEMA,
          minItems: 1,
          description: 'The agents (roles) of the team; they share one base model.',
        },
        edges: {
          type: 'array',
          default: [],
          description: 'Dependencies: "to" acts after "from" and sees its output (the dependency function D).',
          items: {
            type: 'object',
            fields: {
              from: { type: 'string', description: 'The role that acts first.' },
              to: { type: 'string', description: 'The role that acts after it and sees its output.' },
            },
          },
        },
        dynamic: {
          type: 'object',
          nullable: true,
          default: null,
          description: 'A dynamic graph: an orchestrator routes each turn among the other agents (null = the static edges).',
          fields: {
            orchestrator: { type: 'string', description: 'The role that routes the task with <call>role</call> or <done/>.' },
            maxSteps: int(10, 1, 'Calls the orchestrator may make per turn at most.'),
          },
        },
      },
    },
    env: {
      type: 'object',
      fields: {
        name: {
          type: 'string',
          default: 'coop-arith',
          description: 'The environment: a registered name (coop-arith, dataset, ...) or a module.',
        },
        options: {
          type: 'record',
          values: { type: 'any' },
          default: {},
          description: "The environment's own options (task difficulty, a dataset's records).",
        },
        module: {
          type: 'string',
          minLength: 1,
          optional: true,
          description: 'A user environment module (ES module file); the CLI reads it into moduleSource when a run starts.',
        },
        moduleSource: {
          type: 'string',
          minLength: 1,
          optional: true,
          description: "The module's source, kept with the run so a checkpoint resumes with the same environment.",
        },
        teamReward: {
          type: 'enum',
          values: TEAM_REWARDS,
          default: 'last',
          description:
            "Built-in math envs with several answering agents: last = the team's answer is the last answering action's (1 if right); fraction = the fraction of answering agents that are right, as the legacy MARFT math_env.py (the episode ends when any is right).",
        },
      },
    },
    level: {
      type: 'enum',
      values: ['action', 'token'],
      default: 'action',
      paper: 'action-level and token-level MARFT (MARFT-A, MARFT-T)',
      description: "action: an agent's whole output is one action (MARFT-A); token: every token is one (MARFT-T).",
    },
    algo: {
      type: 'enum',
      values: ['ppo', 'grpo'],
      default: 'ppo',
      description: 'ppo: a critic and GAE; grpo: no critic, advantages from a group of samples of one task.',
    },
    credit: {
      type: 'object',
      paper: 'credit assignment',
      fields: {
        method: {
          type: 'enum',
          values: ['equal', 'step_discount', 'per_step'],
          default: 'equal',
          description:
            'How the team reward becomes per-agent rewards: equal (last agent, GAE spreads it), step_discount (R·d^(N-1-i) to agent i), per_step (a reward per role).',
        },
        discount: num(1, { ...prob, description: 'step_discount: agent i of N gets R·d^(N-1-i).' }),
        rewardSharing: { type: 'boolean', default: false, description: 'Every agent gets the whole team reward on its last token.' },
        perStep: {
          type: 'record',
          values: { type: 'enum', values: STEP_REWARD_NAMES },
          default: {},
          description:
            'per_step: role -> reward helper (planner, solver, verifier, team; code: coder, tester, reviewer; coop-plan: plan-check, the environment check of the plan).',
        },
        fallback: {
          type: 'enum',
          values: STEP_REWARD_NAMES,
          nullable: true,
          default: 'team',
          description: 'per_step: the helper of roles not in perStep; null = every role must be listed.',
        },
      },
    },
    lora: {
      type: 'object',
      paper: 'LoRA fine-tuning of each agent',
      fields: {
        r: int(8, 1, 'LoRA rank: the size of the low-rank update of each targeted weight.'),
        alpha: num(16, { ...positive, description: 'LoRA scale: the update is multiplied by alpha / r.' }),
        targets: {
          type: 'array',
          items: { type: 'enum', values: LORA_TARGETS },
          minItems: 1,
          default: ['q_proj', 'v_proj'],
          description: 'The linear layers that get a LoRA adapter.',
        },
        mode: {
          type: 'enum',
          values: ['shared', 'per_agent'],
          default: 'per_agent',
          description: 'per_agent: an adapter per role; shared: one adapter for all roles.',
        },
        dropout: num(0, { min: 0, max: 1, exclusiveMax: true, description: 'Dropout on the LoRA input while training.' }),
      },
    },
    critic: {
      type: 'object',
      paper: 'the critic (centralised value function, CTDE)',
      fields: {
        mode: {
          type: 'enum',
          values: ['shared', 'per_agent', 'lora'],
          default: 'shared',
          description:
            'shared: one value head on the frozen trunk (CTDE); per_agent: a head per agent (AReaL multi_head); lora: a critic LoRA and a head per agent on a trainable trunk (independent_critic=lora).',
        },
        input: {
          type: 'enum',
          values: ['own', 'episode'],
          default: 'own',
          description:
            "own: the critic reads the acting agent's prompt; episode: the whole episode so far (every earlier agent's prompt and output, then the acting agent's prompt): AReaL's CTDE critic reads the episode too, but as one sequence, where the task and each output appear once.",
        },
        hidden: {
          type: 'array',
          items: { type: 'number', integer: true, min: 1 },
          default: [1024, 512],
          description: "Hidden sizes of the critic's MLP head(s) on the trunk's last hidden state.",
        },
      },
    },
    schedule: {
      type: 'object',
      paper: 'agent-by-agent training and critic warm-up',
      fields: {
        mode: {
          type: 'enum',
          values: ['all', 'agent_by_agent'],
          default: 'all',
          description: 'all: every agent trains each iteration; agent_by_agent: one agent at a time, the others frozen.',
        },
        interval: int(1, 1, 'agent_by_agent: agent (iteration // interval) mod N trains.'),
        criticWarmup: int(0, 0, 'Iterations at the start that train only the critic.'),
      },
    },
    ppo: {
      type: 'object',
      fields: {
        clip: num(0.2, {
          min: 0,
          max: 1,
          exclusiveMin: true,
          exclusiveMax: true,
          description: 'PPO clip ε: the policy ratio is clipped to [1-ε, 1+ε].',
        }),
        valueClip: num(0.2, {
          min: 0,
          description:
            'Value clipping as MAPPO/MARFT: the value loss takes the worse of the new value and the new value clipped to ±valueClip around the old one; 0 = no value clipping.',
        }),
        entropyCoef: num(0.01, { min: 0, description: 'Weight of the entropy bonus (keeps sampling diverse).' }),
        klCoef: num(0, {
          min: 0,
          description: 'Weight of the KL penalty against the reference policy (the base model without adapters); 0 = none.',
        }),
        klEstimator: {
          type: 'enum',
          values: ['k1', 'k3'],
          default: 'k3',
          description: 'KL estimator of the penalty: k1 (log-ratio) or k3 (unbiased, non-negative).',
        },
        klIn: {
          type: 'enum',
          values: ['loss', 'reward'],
          default: 'loss',
          description:
            "loss: klCoef * KL(current || ref) in the policy loss. reward: AReaL's placement, -klCoef * KL(old || ref) per generated token added to the rewards before GAE (clamped to ±10), no KL in the loss.",
        },
        targetKl: {
          type: 'number',
          min: 0,
          exclusiveMin: true,
          nullable: true,
          optional: true,
          description:
            "Skip a minibatch's policy step (the critic still trains) when its approximate KL exceeds it; null = never; absent = the level's default: 1e-3 at action level, 1.7e-6 at token level (a per-token mean), as the legacy MARFT trainers.",
        },
        epochs: int(1, 1, "Passes over the iteration's samples per update."),
        minibatches: int(1, 1, 'Minibatches per epoch (an optimiser step each).'),
        gamma: num(0.99, { ...prob, paper: 'GAE over agents and turns', description: 'Discount γ of GAE, across agents and turns.' }),
        lambda: num(0.95, { ...prob, paper: 'GAE over agents and turns', description: 'GAE λ: 0 = one-step TD, 1 = Monte Carlo returns.' }),
        maxGradNorm: num(0.5, {
          ...positive,
          description:
            "Gradient clipping: each agent's adapter by its own gradient norm (one shared adapter: by its norm), the critic by its norm.",
        }),
        lr: num(1e-6, { ...positive, description: 'Learning rate of the LoRA adapters (AdamW).' }),
        criticLr: num(5e-4, { ...positive, description: 'Learning rate of the critic head (AdamW).' }),
        adamEps: num(1e-5, { ...positive, description: "AdamW's ε." }),
        weightDecay: num(0, { min: 0, description: "AdamW's decoupled weight decay." }),
        advantageNorm: {
          type: 'boolean',
          default: true,
          description:
            'PPO: normalise advantages over each minibatch. GRPO ignores it (its advantages are normalised within the group only).',
        },
        valueLoss: {
          type: 'enum',
          values: ['huber', 'mse'],
          default: 'huber',
          description: "The critic's loss: Huber (robust to outliers) or squared error.",
        },
        huberDelta: num(10, { ...positive, description: 'Huber loss δ: quadratic below it, linear above.' }),
        logProbNorm: {
          type: 'enum',
          values: ['sum', 'token', 'word'],
          default: 'sum',
          description: "Action level: an action's log-prob is the sum of its tokens', or that divided by its token or word count.",
        },
        groupStd: {
          type: 'enum',
          values: ['sample', 'population', 'none'],
          default: 'sample',
          description:
            'GRPO: the std of the group normalisation: sample (n-1, as AReaL), population (n) or none (Dr. GRPO, no std scaling).',
        },
        groupNorm: {
          type: 'enum',
          values: GROUP_NORMS,
          default: 'pooled',
          description:
            "GRPO: pooled = AReaL's: every generated token's advantage is its reward-to-go, normalised over all generated tokens of the task's samples (mean, std, eps 1e-5); " +
            "agent_turn = AT-GRPO: each action against the same agent's action of the same call count in the other samples (suits per_step rewards; it normalises step_discount's scale away).",
        },
        rewardScaling: num(1, {
          ...positive,
          description: "Team reward shaping (AReaL's reward_scaling): R becomes (R + bias) * scaling before credit assignment.",
        }),
        rewardBias: num(0, { description: "Team reward shaping (AReaL's reward_bias), added before scaling." }),
        rewardClip: num(20, {
          ...positive,
          description: "The shaped team reward is clipped to ±rewardClip (AReaL's reward_clip; 20 leaves 0/1 rewards alone).",
        }),
        rewardNorm: {
          type: 'enum',
          values: REWARD_NORMS,
          nullable: true,
          default: null,
          description:
            "Team reward normalisation after shaping (AReaL's reward_norm): batch = over every turn's reward of the iteration, group = over the task's groupSize samples; null = off.",
        },
      },
    },
    rollout: {
      type: 'object',
      fields: {
        episodes: int(4, 1, 'Episodes (tasks) per iteration.'),
        groupSize: int(1, 1, 'GRPO: samples per task (>= 2).'),
        horizon: int(3, 1, 'Turns per episode at most.'),
      },
    },
    runLoop: {
      type: 'object',
      fields: {
        keepCheckpoints: int(20, 0, 'Checkpoints kept per run folder, newest first (0 = all).'),
        checkpointEvery: int(
          10,
          0,
          'A checkpoint is written after this many iterations since the last one (0 = never by count). Pause, stop, the end of the run and a rollback or device recovery always write one; a crash loses at most the iterations since the last.',
        ),
        checkpointSeconds: num(60, {
          min: 0,
          description: 'A checkpoint is also written when this many seconds have passed since the last one (0 = never by time).',
        }),
        rollbackAfter: int(3, 1, 'Iterations in a row with non-finite steps before the run goes back to its last checkpoint.'),
        maxRecoveries: int(3, 0, 'GPU device losses in a row recovered (new device, last checkpoint) before the run stops.'),
      },
    },
  },
};
