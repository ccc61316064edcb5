// What the page says about the device before a run: what a browser needs for WebGPU, whether the adapter
// is a software one (SwiftShader, llvmpipe: the "GPU" is the CPU), and a rough time per iteration for the
// builder's config from the probe's speed measurement (src/model/device-check.ts) and the model's size.
// The estimate counts dispatches (decoding is dispatch-bound) and matmul FLOPs; it ignores attention's
// quadratic term, LoRA's extra work and scoring details, so it is a scale (seconds or hours), not a timer.

import type { RunConfig } from '../config/run-config.ts';
import type { ProbeResult } from '../worker/api.ts';

/** What to use where WebGPU is missing (shown with the NO_WEBGPU / NO_ADAPTER error). */
export const WEBGPU_BROWSERS: readonly string[] = [
  'Chrome or Edge 113+ on Windows, macOS and ChromeOS (WebGPU is on by default).',
  'Chrome on Linux: start it with --enable-unsafe-webgpu --enable-features=Vulkan, or turn on chrome://flags/#enable-unsafe-webgpu and #enable-vulkan.',
  'Chrome 121+ on Android 12+ with a recent GPU.',
  'Firefox 141+ on Windows; elsewhere Firefox Nightly with dom.webgpu.enabled in about:config.',
  'Safari 26+ on macOS, iOS and iPadOS.',
  'Open the lab over http://localhost or https:// (WebGPU needs a secure context), and check chrome://gpu if the GPU is blocklisted.',
];

const SOFTWARE = /swiftshader|llvmpipe|lavapipe|softpipe|software|basic render/i;

/** Whether the adapter runs on the CPU (a fallback adapter, or a software rasteriser by name). */
export function isSoftwareAdapter(a: ProbeResult['adapter']): boolean {
  return a.isFallback || SOFTWARE.test(`${a.vendor} ${a.architecture} ${a.device} ${a.description}`);
}

export interface ModelDims { numLayers: number; hiddenSize: number; vocabSize: number }

/** Tokens of an agent's prompt (system prompt, task, teammates' messages) assumed per turn. */
export const PROMPT_TOKENS = 160;
/** Dispatches of one pass through a decoder layer (norms, projections with LoRA, rope, attention, MLP, residuals). */
export const DISPATCHES_PER_LAYER = 14;

export interface IterationEstimate { seconds: number; rolloutSeconds: number; updateSeconds: number }

/**
 * A rough time per iteration of `c` on a model of `m`'s size on the probed device. Rollout: one pass per
 * decode step and per agent turn's prompt, each 14 L + 4 dispatches, 2 P FLOPs per token and sequence
 * (P = 12 L C^2 + V C). Scoring and update: 2 passes (old log-probs, values) plus 3 per epoch
 * (forward and backward), a pass per minibatch, over every token of the episode's agent turns.
 */
export function estimateIteration(c: RunConfig, m: ModelDims, speed: ProbeResult['speed']): IterationEstimate {
  const { numLayers: L, hiddenSize: C, vocabSize: V } = m;
  const P = 12 * L * C * C + V * C;
  const D = DISPATCHES_PER_LAYER * L + 4;
  const B = c.rollout.episodes * (c.algo === 'grpo' ? c.rollout.groupSize : 1);
  const turns = c.rollout.horizon * c.graph.agents.length;
  const decodeSteps = c.rollout.horizon * c.graph.agents.reduce((s, a) => s + a.maxNewTokens, 0);
  const flopMs = (flops: number) => flops / (speed.gflops * 1e6);
  const rolloutMs = (decodeSteps + turns) * D * speed.dispatchMs + flopMs(B * 2 * P * (decodeSteps + turns * PROMPT_TOKENS));
  const passes = 2 + 3 * c.ppo.epochs;
  const updateMs = (2 + 3 * c.ppo.epochs * c.ppo.minibatches) * D * speed.dispatchMs + flopMs(B * 2 * P * (decodeSteps + turns * PROMPT_TOKENS) * passes);
  return { seconds: (rolloutMs + updateMs) / 1000, rolloutSeconds: rolloutMs / 1000, updateSeconds: updateMs / 1000 };
}
