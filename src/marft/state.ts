// The training state of a MARFT run: everything a checkpoint must hold to continue exactly where a run
// stopped — the policy adapters (one LoRA slot per agent, or one shared slot), the critic's value heads,
// both optimisers (AdamW moments and their GPU-side step/norm stats), the RNG state and the metric history.
// The base model is not part of it (it is frozen and named by config.model.path).

import { type AdamWGroup, adamwStats } from '../../kernels/adamw/adamw.ts';
import type { Gpu } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';
import type { ModelConfig, LinearModule } from '../model/config.ts';
import { type LoraSet, createLoraSet, loraParams, releaseLoraSet } from '../model/lora-set.ts';
import { Rng } from '../common/rng.ts';
import { type ValueHead, createValueHead, releaseValueHead, valueHeadParams } from '../model/value-head.ts';
import type { IterationMetrics } from '../config/metrics.ts';
import type { RunConfig } from '../config/run-config.ts';

export interface AdamState {
  groups: AdamWGroup[];
  /** (8) f32 on the GPU: global norm, non-finite flag, clip scale, step count (see kernels/adamw). */
  stats: Tensor;
}

export interface TrainState {
  config: RunConfig;
  /** Iterations completed. */
  iteration: number;
  /** The trainer's RNG (episode seeds and sampling seeds derive from it), saved as its u32 state. */
  rng: Rng;
  metrics: IterationMetrics[];
  policy: LoraSet;
  critic: ValueHead;
  policyOptim: AdamState;
  criticOptim: AdamState;
}

export const agentSlots = (config: RunConfig): number => (config.lora.mode === 'per_agent' ? config.graph.agents.length : 1);
export const criticHeads = (config: RunConfig): number => (config.critic.mode === 'per_agent' ? config.graph.agents.length : 1);

function adamState(gpu: Gpu, params: Array<{ param: Tensor; grad: Tensor }>): AdamState {
  return {
    groups: params.map(({ param, grad }) => ({
      params: param, grads: grad,
      m: gpu.zeros(param.shape, 'f32', `${param.label}.adam_m`),
      v: gpu.zeros(param.shape, 'f32', `${param.label}.adam_v`),
    })),
    stats: adamwStats(gpu),
  };
}

/** A fresh state: adapters, heads and optimisers initialised from config.seed. */
export function createTrainState(gpu: Gpu, model: ModelConfig, config: RunConfig): TrainState {
  const rng = new Rng(config.seed);
  const policy = createLoraSet(gpu, model, {
    r: config.lora.r, alpha: config.lora.alpha, targets: config.lora.targets as LinearModule[], slots: agentSlots(config),
  }, rng.fork('lora').state);
  const critic = createValueHead(gpu, model.hiddenSize, config.critic.hidden, criticHeads(config), rng.fork('critic').state);
  return {
    config, iteration: 0, rng: rng.fork('run'), metrics: [], policy, critic,
    policyOptim: adamState(gpu, loraParams(policy)),
    criticOptim: adamState(gpu, valueHeadParams(critic)),
  };
}

export function releaseTrainState(gpu: Gpu, s: TrainState): void {
  for (const o of [s.policyOptim, s.criticOptim]) {
    for (const g of o.groups) gpu.release(g.m, g.v);
    gpu.release(o.stats);
  }
  releaseLoraSet(gpu, s.policy);
  releaseValueHead(gpu, s.critic);
}
