// The training state of a MARFT run: everything a checkpoint must hold to continue exactly where a run
// stopped — the policy adapters (one LoRA slot per agent, or one shared slot), the critic's value heads
// (and, with critic.mode 'lora', the critic's own LoRA set, one slot per agent, on the same base model),
// both optimisers (AdamW moments and their GPU-side step/norm stats, per adapter slot for the policy), the
// RNG state and the metric history.
// The base model is not part of it (it is frozen and named by config.model.path).

import type { Gpu } from '../gpu/gpu.ts';
import type { ModelConfig } from '../model/config.ts';
import { type LoraSet, createLoraSet, loraParams, releaseLoraSet } from '../model/lora-set.ts';
import { type Optimizer, createOptimizer, releaseOptimizer } from '../model/optimizer.ts';
import { Rng } from '../common/rng.ts';
import { type ValueHead, createValueHead, releaseValueHead, valueHeadParams } from '../model/value-head.ts';
import type { IterationMetrics } from '../config/metrics.ts';
import type { RunConfig } from '../config/run-config.ts';

export interface TrainState {
  config: RunConfig;
  /** Iterations completed. */
  iteration: number;
  /** The trainer's RNG (episode seeds and sampling seeds derive from it), saved as its u32 state. */
  rng: Rng;
  metrics: IterationMetrics[];
  policy: LoraSet;
  critic: ValueHead;
  /** critic.mode 'lora': the critic's adapters on the trunk, slot = agent; null otherwise (the trunk is frozen). */
  criticLora: LoraSet | null;
  policyOptim: Optimizer;
  criticOptim: Optimizer;
}

export const agentSlots = (config: RunConfig): number => (config.lora.mode === 'per_agent' ? config.graph.agents.length : 1);
// AReaL's critic LoRA keeps the value head in modules_to_save, so each agent's adapter has its own head.
export const criticHeads = (config: RunConfig): number => (config.critic.mode === 'shared' ? 1 : config.graph.agents.length);

/** The critic optimiser's parameters, in checkpoint order: the value heads, then the critic LoRA. */
export const criticParams = (head: ValueHead, lora: LoraSet | null) => [...valueHeadParams(head), ...(lora ? loraParams(lora) : [])];

/** A fresh state: adapters, heads and optimisers initialised from config.seed. */
export function createTrainState(gpu: Gpu, model: ModelConfig, config: RunConfig): TrainState {
  const rng = new Rng(config.seed);
  const policy = createLoraSet(
    gpu,
    model,
    {
      r: config.lora.r,
      alpha: config.lora.alpha,
      targets: config.lora.targets,
      slots: agentSlots(config),
    },
    rng.fork('lora').state,
  );
  const critic = createValueHead(gpu, model.hiddenSize, config.critic.hidden, criticHeads(config), rng.fork('critic').state);
  // PEFT's initialisation (B = 0) as AReaL's add_adapter: a fresh critic LoRA leaves the trunk unchanged.
  const criticLora =
    config.critic.mode === 'lora'
      ? createLoraSet(
          gpu,
          model,
          { r: config.lora.r, alpha: config.lora.alpha, targets: config.lora.targets, slots: config.graph.agents.length },
          rng.fork('critic.lora').state,
        )
      : null;
  return {
    config,
    iteration: 0,
    rng: rng.fork('run'),
    metrics: [],
    policy,
    critic,
    criticLora,
    policyOptim: createOptimizer(gpu, loraParams(policy), policy.spec.slots), // a state per adapter slot: per-agent clipping and counts
    criticOptim: createOptimizer(gpu, criticParams(critic, criticLora)),
  };
}

export function releaseTrainState(gpu: Gpu, s: TrainState): void {
  for (const o of [s.policyOptim, s.criticOptim]) releaseOptimizer(gpu, o);
  releaseLoraSet(gpu, s.policy);
  releaseValueHead(gpu, s.critic);
  if (s.criticLora) releaseLoraSet(gpu, s.criticLora);
}
