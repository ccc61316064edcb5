// A rough time per iteration of a run config on a model of a given size, from a device's speed probe
// (src/model/device-check.ts: the cost of a small dispatch, a matmul's throughput). It counts dispatches
// (decoding is dispatch-bound) and matmul FLOPs; it ignores attention's quadratic term, LoRA's extra work and
// scoring details, so it is a scale (seconds or hours), not a timer. The lab's Build tab and the run plan
// (src/marft/plan.ts: `marft train --plan`) both show it.

import type { RunConfig } from './run-config.ts';

/** A device's speed probe (src/model/device-check.ts DeviceSpeed). */
export interface SpeedProbe {
  dispatchMs: number;
  gflops: number;
}

export interface ModelDims {
  numLayers: number;
  hiddenSize: number;
  vocabSize: number;
}

/** Tokens of an agent's prompt (system prompt, task, teammates' messages) assumed per turn. */
export const PROMPT_TOKENS = 160;
/** Dispatches of one pass through a decoder layer (norms, projections with LoRA, rope, attention, MLP, residuals). */
export const DISPATCHES_PER_LAYER = 14;

export interface IterationEstimate {
  seconds: number;
  rolloutSeconds: number;
  updateSeconds: number;
}

/**
 * A rough time per iteration of `c` on a model of `m`'s size on the probed device. Rollout: one pass per
 * decode step and per agent turn's prompt, each 14 L + 4 dispatches, 2 P FLOPs per token and sequence
 * (P = 12 L C^2 + V C). Scoring and update: 2 passes (old log-probs, values) plus 3 per epoch
 * (forward and backward), a pass per minibatch, over every token of the episode's agent turns.
 */
export function estimateIteration(c: RunConfig, m: ModelDims, speed: SpeedProbe): IterationEstimate {
  const { numLayers: L, hiddenSize: C, vocabSize: V } = m;
  const P = 12 * L * C * C + V * C;
  const D = DISPATCHES_PER_LAYER * L + 4;
  const B = c.rollout.episodes * (c.algo === 'grpo' ? c.rollout.groupSize : 1);
  const turns = c.rollout.horizon * c.graph.agents.length;
  const decodeSteps = c.rollout.horizon * c.graph.agents.reduce((s, a) => s + a.maxNewTokens, 0);
  const flopMs = (flops: number) => flops / (speed.gflops * 1e6);
  const rolloutMs = (decodeSteps + turns) * D * speed.dispatchMs + flopMs(B * 2 * P * (decodeSteps + turns * PROMPT_TOKENS));
  const passes = 2 + 3 * c.ppo.epochs;
  const updateMs =
    (2 + 3 * c.ppo.epochs * c.ppo.minibatches) * D * speed.dispatchMs + flopMs(B * 2 * P * (decodeSteps + turns * PROMPT_TOKENS) * passes);
  return { seconds: (rolloutMs + updateMs) / 1000, rolloutSeconds: rolloutMs / 1000, updateSeconds: updateMs / 1000 };
}
