// The memory and time plan of a run before it trains: the GPU memory its iteration is expected to hold at
// its peak, broken down by what holds it, and a rough time per iteration (src/config/estimate.ts); when it
// will not fit (a tensor over the device's buffer or binding limit, or a peak over a memory budget), which
// setting to change, each candidate re-planned with the change applied.
// The formula follows the real allocations, tensor by tensor, each rounded to the buffer pool's bucket
// (src/gpu/pool.ts bucketSize), because every GPU tensor the engine makes comes from that pool:
//   resident: the base weights as stored (16-bit matrices packed, norms and biases f32), the fused decode
//     path's q/k/v and gate/up copies (GPU adapters), the LoRA sets (A, B and their gradients, one slot per
//     agent or one shared), AdamW's m and v for every trained tensor, the critic's value heads (and its own LoRA);
//   rollout: each batched generate call (src/model/generate.ts): the KV cache (f32, B x (prompt + new) per
//     layer), the prefill's forward over B x prompt tokens (one layer's temporaries at a time), the fused
//     path's pinned LoRA groups;
//   scoring: each chunk of src/marft/score.ts (policy and reference stacked in one forward, chunked by the
//     trainer's bounds with the same chunkActions), its logits at the action rows, and the critic's inputs;
//   update: each micro-batch of src/marft/update.ts: the saved forward (every layer's activations, or only
//     the residual stream with recompute), the logits at the action rows, the backward's temporaries, the
//     critic's forward kept beside it.
// Prompt lengths come from the caller (planPrompts measures them with the model's tokenizer); every
// generation is assumed to run to its maxNewTokens, so the plan is the iteration's worst case. The pool also
// keeps free buffers for reuse (BufferPool.headroom, set by the trainer): the plan's peak adds what it may keep.

import type { RunConfig } from '../config/run-config.ts';
import { type IterationEstimate, type SpeedProbe, estimateIteration } from '../config/estimate.ts';
import { compileGraph } from '../config/graph.ts';
import type { Envs } from '../envs/registry.ts';
import type { AsyncEnv } from '../envs/types.ts';
import { bucketSize } from '../gpu/pool.ts';
import { type LinearModule, type ModelConfig, linearDims } from '../model/config.ts';
import { MAX_PREFILL_TOKENS } from '../model/generate.ts';
import { chunkRows } from '../model/row-chunks.ts';
import { type ScratchLimits, attentionBackwardScratch } from '../model/memory.ts';
import type { LoadedTokenizer } from '../model/tokenizer.ts';
import type { Decoder } from '../model/decoder.ts';
import type { Gpu } from '../gpu/gpu.ts';
import { CHUNK_MAX_ROWS, chunkActions } from './batch.ts';
import { needsCriticTrunk } from './critic.ts';
import { encodeObservation } from './rollout.ts';
import type { ActionRecord } from './rollout.ts';
import { agentSlots, criticHeads } from './state.ts';
import { poolHeadroom, trainerBounds } from './trainer.ts';

export interface PlanDevice {
  maxBufferSize: number;
  maxStorageBufferBindingSize: number;
  /** The limits that pick the attention backward's variant (its scratch); WebGPU's defaults when not given. */
  maxComputeWorkgroupStorageSize?: number;
  maxComputeInvocationsPerWorkgroup?: number;
  maxComputeWorkgroupSizeX?: number;
  maxStorageBuffersPerShaderStage?: number;
  /** A CPU adapter (SwiftShader): the decoder's fused path is off there by default (no fused copies), and attention runs without scratch. */
  cpu?: boolean;
}

/** A PlanDevice's limits, WebGPU's defaults for those not given. */
const scratchLimits = (d: PlanDevice): ScratchLimits => ({
  maxBufferSize: d.maxBufferSize,
  maxStorageBufferBindingSize: d.maxStorageBufferBindingSize,
  maxComputeWorkgroupStorageSize: d.maxComputeWorkgroupStorageSize ?? 16384,
  maxComputeInvocationsPerWorkgroup: d.maxComputeInvocationsPerWorkgroup ?? 256,
  maxComputeWorkgroupSizeX: d.maxComputeWorkgroupSizeX ?? 256,
  maxStorageBuffersPerShaderStage: d.maxStorageBuffersPerShaderStage ?? 8,
});

export interface PlanInput {
  config: RunConfig;
  model: ModelConfig;
  /** How the base matrices are stored on the GPU (the checkpoint's 16-bit format, or f32). */
  dtype: 'f32' | 'bf16' | 'f16';
  /** Each agent's prompt tokens on its first turn with nothing visible (planPrompts), and what each visible output or past turn adds besides its tokens. */
  prompts: PromptSizes;
  /** The adapter's limits, when known. */
  device?: PlanDevice;
  /** Bytes the run may use (a GPU's memory); over it the plan says what to change. */
  budget?: number;
  /** The trainer's maxTokens (default 4096) and recompute ('auto'). */
  maxTokens?: number;
  recompute?: boolean | 'auto';
  /** The decoder's fused path (default: on for GPU adapters, as the Decoder). */
  fused?: boolean;
  /** The device's speed probe, for the time per iteration. */
  speed?: SpeedProbe;
}

export interface PromptSizes {
  /** Per agent, tokens of its prompt with no teammate output and no history. */
  base: number[];
  /** Tokens a visible teammate output adds besides its own tokens (the role header). */
  perVisible: number;
  /** Tokens a past turn adds besides its outputs' tokens (every output's header, the feedback's framing). */
  perTurn: number;
}

/** One thing that holds memory: its bytes (pool buckets) and how they were counted. */
export interface PlanItem {
  name: string;
  bytes: number;
  detail: string;
}

export interface PhasePlan {
  /** Memory this phase holds at its peak beyond the resident items. */
  items: PlanItem[];
  bytes: number;
}

export type PlanPhase = 'rollout' | 'score' | 'update';

export interface RunPlan {
  resident: PlanItem[];
  residentBytes: number;
  phases: Record<PlanPhase, PhasePlan>;
  /** The phase of the peak, and the most the engine's tensors hold at once. */
  peakPhase: PlanPhase;
  inUseBytes: number;
  /** The free buffers the pool keeps beyond that (other phases' buffers, within the trainer's headroom), and the expected peak of GPU memory. */
  poolCacheBytes: number;
  peakBytes: number;
  /** The peak when sequence lengths vary between iterations: the pool may keep a second set of the peak phase's buffers. */
  varyingPeakBytes: number;
  /** The sizes the trainer picks (src/marft/trainer.ts trainerBounds) and the decoder's path. */
  settings: { maxTokens: number; maxLogitRows: number; trainTokens: number; recompute: boolean; fused: boolean; dtype: PlanInput['dtype'] };
  /** Sequences of the worst turn: per agent, its longest prompt and its new tokens. */
  sequences: Array<{ role: string; prompt: number; generated: number }>;
  /** The largest single tensor, against the device's limit for one buffer binding. */
  largest: PlanItem;
  time: IterationEstimate | null;
  /** Why it will not fit, empty when it will (or nothing is known to check against). */
  problems: string[];
  /** What to change, best first; empty when it fits. */
  advice: Advice[];
}

export interface Advice {
  /** The setting and its new value, in the run config's words. */
  change: string;
  peakBytes: number;
  /** Whether the plan with this change fits the limits and the budget. */
  fits: boolean;
}

const f32 = (n: number): number => bucketSize(4 * n);
const packed16 = (n: number): number => bucketSize(Math.ceil(n / 2) * 4);
const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);
const item = (name: string, bytes: number, detail: string): PlanItem => ({ name, bytes, detail });
const total = (items: PlanItem[]): number => sum(items.map((i) => i.bytes));

/** Modules of a layer, with whether each carries a bias. */
function modules(c: ModelConfig): Array<{ m: LinearModule; IN: number; OUT: number; bias: boolean }> {
  const bias: Record<LinearModule, boolean> = {
    q_proj: c.qkvBias,
    k_proj: c.qkvBias,
    v_proj: c.qkvBias,
    o_proj: c.oBias,
    gate_proj: c.mlpBias,
    up_proj: c.mlpBias,
    down_proj: c.mlpBias,
  };
  return (Object.keys(bias) as LinearModule[]).map((m) => ({ m, IN: linearDims(c, m).in, OUT: linearDims(c, m).out, bias: bias[m] }));
}

/** A LoRA set's tensors (src/model/lora-set.ts): A (S, R, IN), B (S, OUT, R) and their gradients, per layer and target. */
function loraBytes(c: ModelConfig, r: number, targets: readonly string[], slots: number): number {
  const per = modules(c)
    .filter((x) => targets.includes(x.m))
    .map((x) => 2 * f32(slots * r * x.IN) + 2 * f32(slots * x.OUT * r));
  return c.numLayers * sum(per);
}

/** The value heads' parameters (src/model/value-head.ts): W and b per layer of each head (dW, db alike). */
function headTensors(C: number, hidden: number[], S: number): number[] {
  const dims = [C, ...hidden, 1];
  const one = dims.slice(1).flatMap((out, j) => [f32(out * dims[j]), f32(out)]);
  return Array.from({ length: S }, () => one).flat();
}

function resident(p: PlanInput, fused: boolean): PlanItem[] {
  const c = p.model;
  const { config } = p;
  const store = p.dtype === 'f32' ? f32 : packed16;
  const V = c.vocabSize;
  const C = c.hiddenSize;
  const mods = modules(c);
  const layer = sum(mods.map((x) => store(x.OUT * x.IN) + (x.bias ? f32(x.OUT) : 0))) + 2 * f32(C);
  const weights = store(V * C) * (c.tieWordEmbeddings ? 1 : 2) + c.numLayers * layer + f32(C) + (c.ropeScaling ? f32(c.headDim / 2) : 0);
  const out: PlanItem[] = [
    item(
      `base weights (${p.dtype})`,
      weights,
      `${c.numLayers} layers, embedding ${V} x ${C}${c.tieWordEmbeddings ? ' (tied head)' : ' and LM head'}; norms and biases f32`,
    ),
  ];
  if (fused) {
    const qkv = (c.numHeads + 2 * c.numKvHeads) * c.headDim;
    const copies =
      store(qkv * C) + store(2 * c.intermediateSize * C) + (c.qkvBias ? f32(qkv) : 0) + (c.mlpBias ? f32(2 * c.intermediateSize) : 0);
    out.push(
      item('fused decode copies', c.numLayers * copies, `q/k/v and gate/up concatenated per layer (${p.dtype}), for the fused decode path`),
    );
  }
  const S = agentSlots(config);
  const policy = loraBytes(c, config.lora.r, config.lora.targets, S);
  out.push(
    item(
      'policy LoRA',
      policy,
      `r ${config.lora.r} on ${config.lora.targets.join(', ')}, ${S} slot${S > 1 ? 's' : ''} (${config.lora.mode}), with gradients`,
    ),
  );
  // AdamW's m and v are shaped like A and B: as many bytes as the set's parameters and gradients, plus the stats
  out.push(item('policy optimiser', policy + f32(S * 8), 'AdamW m and v (f32)'));
  const heads = headTensors(C, config.critic.hidden, criticHeads(config));
  const criticLora = config.critic.mode === 'lora' ? loraBytes(c, config.lora.r, config.lora.targets, config.graph.agents.length) : 0;
  out.push(
    item(
      'critic',
      2 * sum(heads) + criticLora,
      `${criticHeads(config)} value head${criticHeads(config) > 1 ? 's' : ''} ${[C, ...config.critic.hidden, 1].join('-')}${criticLora ? ', its own LoRA per agent' : ''}, with gradients`,
    ),
  );
  out.push(item('critic optimiser', 2 * sum(heads) + criticLora + f32(8), 'AdamW m and v (f32)'));
  return out;
}

/** Sequences the rollout makes, per turn and agent: its prompt (worst case) and its new tokens. */
function sequences(p: PlanInput): Array<Array<{ agent: number; prompt: number; generated: number }>> {
  const { config, model, prompts } = p;
  const agents = config.graph.agents;
  const graph = compileGraph(config.graph);
  const everyOutput = sum(agents.map((a) => a.maxNewTokens));
  return Array.from({ length: Math.max(1, config.rollout.horizon) }, (_, turn) =>
    agents.map((a, i) => {
      // a dynamic team's orchestrator and the roles it calls see every output of the turn so far
      const seen = graph.dynamic ? agents.filter((_, j) => j !== i) : graph.ancestors(a.role).map((r) => agents[graph.index(r)]);
      const prompt = prompts.base[i] + sum(seen.map((x) => x.maxNewTokens + prompts.perVisible)) + turn * (everyOutput + prompts.perTurn);
      return { agent: i, prompt: Math.min(prompt, model.maxPositionEmbeddings - a.maxNewTokens), generated: a.maxNewTokens };
    }),
  );
}

/** Tensors a forward without save holds at its peak: inputs, the embedding's output and one layer's temporaries. */
function forwardTransient(c: ModelConfig, B: number, T: number, loraTargets: readonly string[], R: number): PlanItem[] {
  const N = B * T;
  const { hiddenSize: C, intermediateSize: I, numHeads: NH, numKvHeads: NKV, headDim: HS } = c;
  const h = (m: LinearModule): number => (loraTargets.includes(m) ? f32(N * R) : 0);
  const inputs = 2 * f32(N) + f32(B) + f32(N); // ids, positions, slots, mask
  const attention =
    f32(N) + f32(N * C) + 2 * f32(N * NH * HS) + 2 * f32(N * NKV * HS) + f32(N * NH) + h('q_proj') + h('k_proj') + h('v_proj');
  const oProj = f32(N * NH * HS) + f32(N * NH) + f32(N * C) + h('o_proj');
  const mlp = f32(N * C) + f32(N) + f32(N * C) + 3 * f32(N * I) + h('gate_proj') + h('up_proj');
  const down = 2 * f32(N * C) + f32(N * I) + h('down_proj');
  return [
    item('inputs', inputs, `ids, positions, mask of ${B} x ${T}`),
    item(
      'residual stream',
      (c.numLayers > 1 ? 2 : 1) * f32(N * C),
      `the embedding's output and the current layer's input (${N} x ${C} f32)`,
    ),
    item(
      "one layer's temporaries",
      Math.max(attention, oProj, mlp, down),
      `attention or MLP activations of ${N} tokens, freed layer by layer`,
    ),
  ];
}

/** The rollout's peak: the generate call of the most memory (src/model/generate.ts). */
function rolloutPlan(p: PlanInput, fused: boolean): PhasePlan {
  const c = p.model;
  const { config } = p;
  const E = config.rollout.episodes * (config.algo === 'grpo' ? config.rollout.groupSize : 1);
  const graph = compileGraph(config.graph);
  const layers = graph.dynamic ? config.graph.agents.map((_, i) => [i]) : graph.layers.map((l) => l.map((r) => graph.index(r)));
  const slots = agentSlots(config);
  let best: PhasePlan = { items: [], bytes: 0 };
  for (const turn of sequences(p)) {
    for (const layer of layers) {
      const Tp = Math.max(...layer.map((i) => turn[i].prompt));
      const maxNew = Math.max(...layer.map((i) => turn[i].generated));
      // a call past MAX_PREFILL_TOKENS runs as sub-batches, one after the other
      const B = Math.min(E * layer.length, Math.max(1, Math.floor(MAX_PREFILL_TOKENS / Math.max(1, Tp))));
      const cap = Tp + maxNew;
      const kv = 2 * c.numLayers * f32(B * cap * c.numKvHeads * c.headDim) + f32(B * cap);
      const tokens = 2 * f32(B * maxNew) + 8 * f32(B); // sampled tokens and log-probs, step state, sampling settings
      const pinned = fused ? loraBytes(c, config.lora.r, config.lora.targets, slots) / 2 : 0; // the set's A and B concatenated per group
      const fw = forwardTransient(c, B, Tp, config.lora.targets, config.lora.r);
      // after the layers: the final norm's output and the last position's logits (B, V)
      const head = f32(B * c.hiddenSize) * 3 + f32(B) + f32(B * c.vocabSize);
      const forward = Math.max(total(fw), f32(B * Tp * c.hiddenSize) + head);
      const items = [
        item('KV cache', kv, `${B} sequences x ${cap} positions x ${c.numLayers} layers, keys and values f32`),
        item('prefill forward', forward, `${B} prompts of ${Tp} tokens, one layer at a time`),
        item(
          'sampling state',
          tokens + pinned,
          fused ? 'tokens, log-probs and the pinned LoRA groups of the fused path' : 'tokens and log-probs',
        ),
      ];
      const bytes = total(items);
      if (bytes > best.bytes) best = { items, bytes };
    }
  }
  return best;
}

/** Placeholder action records of the rollout's sizes, for chunkActions (which looks at lengths only). */
function records(p: PlanInput): ActionRecord[] {
  const E = p.config.rollout.episodes * (p.config.algo === 'grpo' ? p.config.rollout.groupSize : 1);
  const out: ActionRecord[] = [];
  sequences(p).forEach((turn, t) => {
    for (let e = 0; e < E; e++) {
      for (const s of turn) {
        out.push({
          episode: e,
          turn: t,
          agent: s.agent,
          role: p.config.graph.agents[s.agent].role,
          promptIds: new Array<number>(s.prompt).fill(0),
          actionIds: new Array<number>(s.generated).fill(0),
          behaviourLogp: [],
          text: '',
          finish: 'length',
          truncated: 0,
        });
      }
    }
  });
  return out;
}

/** Padded tokens, sequences and action rows of a chunk. */
function dims(chunk: readonly ActionRecord[]): { B: number; T: number; M: number } {
  return {
    B: chunk.length,
    T: Math.max(...chunk.map((a) => a.promptIds.length + a.actionIds.length)),
    M: sum(chunk.map((a) => a.actionIds.length)),
  };
}

/** The value heads' forward over R rows (values and each layer's saved input and pre-activation). */
const headForward = (R: number, hidden: number[], S: number): number =>
  f32(S * R) + S * sum(hidden.map((h) => 2 * f32(R * h))) + S * f32(R);

function scorePlan(p: PlanInput, bounds: ReturnType<typeof trainerBounds>, acts: ActionRecord[]): PhasePlan {
  const c = p.model;
  const { config } = p;
  const level = config.algo === 'grpo' ? 'token' : config.level;
  const rows = level === 'token' ? sum(acts.map((a) => a.actionIds.length)) : acts.length;
  const criticInput = item(
    'critic inputs',
    f32(Math.max(rows, 1) * c.hiddenSize),
    `${rows} rows x ${c.hiddenSize} f32, kept through the update`,
  );
  const ownTrunk = config.algo === 'ppo' && needsCriticTrunk(config);
  const halves = config.ppo.klCoef > 0 || !ownTrunk ? 2 : 1;
  let peak: PlanItem[] = [];
  for (const chunk of chunkActions(
    acts,
    Math.max(1, Math.floor(bounds.maxTokens / halves)),
    CHUNK_MAX_ROWS / halves,
    bounds.maxLogitRows,
  )) {
    const { B, T, M } = dims(chunk);
    const fw = forwardTransient(c, halves * B, T, config.lora.targets, config.lora.r);
    const N = halves * B * T;
    const R = level === 'token' ? M : B;
    // after the layers: the last residual, the final norm, the logits at the action rows and their head
    const logits = f32(N * c.hiddenSize) * 2 + f32(N) + f32(M * c.hiddenSize) + f32(M * c.vocabSize) + 4 * f32(M);
    const critic = f32(R * c.hiddenSize) + headForward(R, config.critic.hidden, criticHeads(config));
    const items = [
      ...fw.slice(0, 1),
      item(
        'forward',
        Math.max(total(fw.slice(1)), logits + critic),
        `policy and reference stacked: ${halves} x ${B} sequences of ${T} tokens, logits at ${M} action rows (${c.vocabSize} wide)`,
      ),
    ];
    if (total(items) > total(peak)) peak = items;
  }
  const items = [criticInput, ...peak];
  return { items, bytes: total(items) };
}

/** Bytes a saved forward keeps for one layer (src/model/decoder.ts LayerSaved), N tokens. */
function savedLayer(c: ModelConfig, B: number, T: number, targets: readonly string[], R: number): number {
  const N = B * T;
  const { hiddenSize: C, intermediateSize: I, numHeads: NH, numKvHeads: NKV, headDim: HS } = c;
  const lora = modules(c).filter((x) => targets.includes(x.m)).length * f32(N * R);
  return 2 * f32(N) + 3 * f32(N * C) + 2 * f32(N * NH * HS) + 2 * f32(N * NKV * HS) + f32(N * NH) + 3 * f32(N * I) + lora;
}

function updatePlan(p: PlanInput, bounds: ReturnType<typeof trainerBounds>, acts: ActionRecord[], criticInput: PlanItem): PhasePlan {
  const c = p.model;
  const { config } = p;
  const { hiddenSize: C, intermediateSize: I, numHeads: NH, numKvHeads: NKV, headDim: HS, numLayers: L } = c;
  const trained = acts.filter((a) => a.actionIds.length > 0);
  // the worst minibatch: the longest actions (a shuffle may put them together)
  const k = Math.max(1, Math.min(config.ppo.minibatches, trained.length));
  const mb = [...trained]
    .sort((x, y) => y.promptIds.length + y.actionIds.length - (x.promptIds.length + x.actionIds.length))
    .slice(0, Math.ceil(trained.length / k));
  const level = config.algo === 'grpo' ? 'token' : config.level;
  let peak: PlanItem[] = [];
  for (const chunk of chunkActions(mb, bounds.trainTokens, undefined, bounds.maxLogitRows)) {
    const { B, T, M } = dims(chunk);
    const N = B * T;
    const inputs = 2 * f32(N) + f32(B) + f32(N);
    const residual = (L + 1) * f32(N * C);
    const layers = bounds.recompute
      ? savedLayer(c, B, T, config.lora.targets, config.lora.r) + f32(N * C)
      : L * savedLayer(c, B, T, config.lora.targets, config.lora.r);
    const head = f32(N * C) + f32(N) + f32(M * C) + f32(M * c.vocabSize) + 8 * f32(M) + f32(4 * M);
    // backward: dx and its scratch, plus the widest of a layer's gradients alive at once (the attention
    // backward's with its kernel's scratch: ld, split partials, dS on a GPU)
    const scratch = p.device
      ? sum(attentionBackwardScratch(c, B, T, { cpu: p.device.cpu ?? false, limits: scratchLimits(p.device) }).map(bucketSize))
      : 0;
    const bw =
      2 * f32(N * C) +
      Math.max(
        3 * f32(N * I),
        2 * f32(N * I) + f32(N * C),
        2 * f32(N * NH * HS) + 2 * f32(N * NKV * HS) + scratch,
        f32(N * NH * HS) + 2 * f32(N * NKV * HS) + f32(N * C),
      );
    // the frozen-head critic's forward over the minibatch's rows stays alive beside the policy's micro-batches
    const Rmb = level === 'token' ? sum(mb.map((a) => a.actionIds.length)) : mb.length;
    const critic =
      config.algo === 'ppo' && config.critic.mode !== 'lora'
        ? f32(Rmb * C) + headForward(Rmb, config.critic.hidden, criticHeads(config))
        : 0;
    const items = [
      item('inputs', inputs, `${B} sequences of ${T} tokens`),
      item(
        bounds.recompute ? 'saved residual stream' : 'saved activations',
        residual + layers,
        bounds.recompute
          ? `${L + 1} x ${N} x ${C} f32, each layer recomputed in the backward`
          : `every layer's activations of ${N} tokens (${L} layers)`,
      ),
      item('logits and loss', head, `${M} action rows x ${c.vocabSize} f32, the final norm`),
      item('backward', bw, 'gradients of one layer at a time'),
      item('critic forward', critic, `${Rmb} rows through the value head${criticHeads(config) > 1 ? 's' : ''}`),
    ];
    if (total(items) > total(peak)) peak = items;
  }
  const items = [criticInput, ...peak.filter((x) => x.bytes > 0)];
  return { items, bytes: total(items) };
}

/**
 * The plan of `config` on a loaded model and its device (the lab's worker and `marft train --plan`): the
 * stored dtype, the decoder's path, the adapter's limits and the prompts measured with the model's tokenizer.
 */
/** A loaded model as planning needs it (a SessionModel is one): its device, decoder, tokenizer and the session's environments. */
export interface PlanModel {
  gpu: Gpu;
  decoder: Decoder;
  tokenizer: LoadedTokenizer;
  envs: Envs;
}

export async function planOnModel(
  m: PlanModel,
  config: RunConfig,
  o: { budget?: number; speed?: SpeedProbe; maxTokens?: number } = {},
): Promise<RunPlan> {
  const l = m.gpu.limits;
  return planRun({
    config,
    model: m.decoder.config,
    dtype: m.decoder.weights.dtype,
    fused: m.decoder.fused,
    prompts: await planPrompts(config, m.tokenizer, m.envs),
    device: {
      maxBufferSize: l.maxBufferSize,
      maxStorageBufferBindingSize: l.maxStorageBufferBindingSize,
      maxComputeWorkgroupStorageSize: l.maxComputeWorkgroupStorageSize,
      maxComputeInvocationsPerWorkgroup: l.maxComputeInvocationsPerWorkgroup,
      maxComputeWorkgroupSizeX: l.maxComputeWorkgroupSizeX,
      maxStorageBuffersPerShaderStage: l.maxStorageBuffersPerShaderStage,
      cpu: m.gpu.cpu,
    },
    ...o,
  });
}

/** The plan of one iteration of `p.config` on `p.model` (see the file's header). */
export function planRun(p: PlanInput): RunPlan {
  const plan = planOnce(p);
  if (plan.problems.length) plan.advice = advise(p, plan);
  return plan;
}

function planOnce(p: PlanInput): RunPlan {
  const c = p.model;
  const binding = p.device ? Math.min(p.device.maxBufferSize, p.device.maxStorageBufferBindingSize) : Infinity;
  const bounds = trainerBounds(c, p.device?.maxStorageBufferBindingSize ?? 2 ** 31, p.maxTokens, p.recompute);
  // as the Decoder: on for GPU adapters unless asked otherwise; fuseWeights builds nothing for 16-bit matrices of odd size
  const odd = p.dtype !== 'f32' && modules(c).some((x) => (x.IN * x.OUT) % 2 !== 0);
  const fused = (p.fused ?? !p.device?.cpu) && !odd;
  const res = resident(p, fused);
  const acts = records(p);
  const score = scorePlan(p, bounds, acts);
  const phases: Record<PlanPhase, PhasePlan> = {
    rollout: rolloutPlan(p, fused),
    score,
    update: updatePlan(p, bounds, acts, score.items[0]),
  };
  const peakPhase = (Object.keys(phases) as PlanPhase[]).reduce((a, b) => (phases[b].bytes > phases[a].bytes ? b : a));
  const residentBytes = total(res);
  const inUseBytes = residentBytes + phases[peakPhase].bytes;
  // The pool keeps free buffers up to its headroom: at the peak, those the other phases made. When sequence
  // lengths vary between iterations it may keep a second set of the peak phase's besides: a free buffer
  // serves requests up to REUSE_SLACK smaller, never larger, so an iteration of longer sequences than the
  // last one's makes new buffers beside the old ones.
  const headroom = poolHeadroom(c, inUseBytes);
  const others = sum((Object.keys(phases) as PlanPhase[]).filter((k) => k !== peakPhase).map((k) => phases[k].bytes));
  const poolCacheBytes = Math.min(headroom, others);
  const peakBytes = inUseBytes + poolCacheBytes;
  const varyingPeakBytes = inUseBytes + Math.min(headroom, others + phases[peakPhase].bytes);
  const largest = largestTensor(p, bounds, acts, binding);
  const problems: string[] = [];
  if (largest.bytes > binding) {
    problems.push(
      `${largest.name} (${largest.detail}) needs ${formatBytes(largest.bytes)}, over this GPU's largest buffer binding of ${formatBytes(binding)}`,
    );
  }
  if (p.budget !== undefined && peakBytes > p.budget) {
    problems.push(`the expected peak of ${formatBytes(peakBytes)} (${peakPhase}) is over the memory budget of ${formatBytes(p.budget)}`);
  }
  const agents = p.config.graph.agents;
  const worst = sequences(p).at(-1)!;
  return {
    resident: res,
    residentBytes,
    phases,
    peakPhase,
    inUseBytes,
    poolCacheBytes,
    peakBytes,
    varyingPeakBytes,
    settings: { ...bounds, fused, dtype: p.dtype },
    sequences: worst.map((s) => ({ role: agents[s.agent].role, prompt: s.prompt, generated: s.generated })),
    largest,
    time: p.speed ? estimateIteration(p.config, c, p.speed) : null,
    problems,
    advice: [],
  };
}

/**
 * The largest single buffer the run makes: the embedding (a chunk of it where one binding cannot hold it and
 * the base weights are frozen: model/row-chunks.ts), a KV cache layer, the logits or an activation.
 */
function largestTensor(p: PlanInput, bounds: ReturnType<typeof trainerBounds>, acts: ActionRecord[], binding: number): PlanItem {
  const c = p.model;
  const bytes = p.dtype === 'f32' ? 4 : 2;
  const E = p.config.rollout.episodes * (p.config.algo === 'grpo' ? p.config.rollout.groupSize : 1);
  const widest = Math.max(
    ...sequences(p)
      .flat()
      .map((s) => s.prompt + s.generated),
  );
  const agentsAtOnce = Math.max(...compileGraph(p.config.graph).layers.map((l) => l.length), 1);
  const rows = Math.min(bounds.maxLogitRows, sum(acts.map((a) => a.actionIds.length)));
  // the widest activation: a forward of the most tokens, policy and reference stacked
  const tokens = Math.min(bounds.maxTokens, 2 * sum(acts.map((a) => a.promptIds.length + a.actionIds.length)));
  const candidates = [
    embeddingItem(c, bytes, p.dtype, binding),
    item(
      'a KV cache layer',
      E * agentsAtOnce * widest * c.numKvHeads * c.headDim * 4,
      `${E * agentsAtOnce} sequences x ${widest} positions`,
    ),
    item('the logits', rows * c.vocabSize * 4, `${rows} rows x ${c.vocabSize} f32`),
    item('an MLP activation', tokens * c.intermediateSize * 4, `${tokens} tokens x ${c.intermediateSize} f32`),
  ];
  return candidates.reduce((a, b) => (b.bytes > a.bytes ? b : a));
}

/** The embedding, or its largest row chunk where the weights loader splits it (frozen base weights). */
function embeddingItem(c: PlanInput['model'], bytes: number, dtype: string, binding: number): PlanItem {
  const V = c.vocabSize;
  const rows = chunkRows(V, c.hiddenSize, bytes, binding) ?? V;
  if (rows === V) return item('the embedding', V * c.hiddenSize * bytes, `${V} x ${c.hiddenSize} ${dtype}`);
  const chunks = Math.ceil(V / rows);
  return item('an embedding chunk', rows * c.hiddenSize * bytes, `${rows} of ${V} rows x ${c.hiddenSize} ${dtype}, in ${chunks} chunks`);
}

/** Each setting the advice may change, as the change to the input and its words. */
function candidates(p: PlanInput, plan: RunPlan): Array<{ change: string; input: PlanInput }> {
  const cfg = p.config;
  const out: Array<{ change: string; input: PlanInput }> = [];
  const withConfig = (change: string, config: RunConfig) => out.push({ change, input: { ...p, config } });
  if (p.dtype === 'f32')
    out.push({
      change: 'bf16 base weights (a bf16 copy of the model folder; the engine keeps the stored format)',
      input: { ...p, dtype: 'bf16' },
    });
  if (!plan.settings.recompute)
    out.push({ change: 'recompute activations in the update (activation checkpointing)', input: { ...p, recompute: true } });
  if (cfg.rollout.episodes > 1) {
    const e = Math.max(1, Math.floor(cfg.rollout.episodes / 2));
    withConfig(`rollout.episodes ${cfg.rollout.episodes} -> ${e}`, { ...cfg, rollout: { ...cfg.rollout, episodes: e } });
  }
  const longest = Math.max(...cfg.graph.agents.map((a) => a.maxNewTokens));
  if (longest > 8) {
    const agents = cfg.graph.agents.map((a) => ({ ...a, maxNewTokens: Math.max(8, Math.floor(a.maxNewTokens / 2)) }));
    withConfig(
      `maxNewTokens halved for every agent (${cfg.graph.agents.map((a) => `${a.role} ${a.maxNewTokens} -> ${Math.max(8, Math.floor(a.maxNewTokens / 2))}`).join(', ')})`,
      { ...cfg, graph: { ...cfg.graph, agents } },
    );
  }
  if (cfg.lora.mode === 'per_agent' && cfg.graph.agents.length > 1)
    withConfig('lora.mode shared (one adapter for every agent)', { ...cfg, lora: { ...cfg.lora, mode: 'shared' } });
  return out;
}

/** Every candidate change re-planned: those that fit first, then by the peak they leave. */
function advise(p: PlanInput, plan: RunPlan): Advice[] {
  return candidates(p, plan)
    .map(({ change, input }) => {
      const q = planOnce(input);
      return { change, peakBytes: q.peakBytes, fits: q.problems.length === 0 };
    })
    .filter((a) => a.fits || a.peakBytes < plan.peakBytes)
    .sort((a, b) => Number(b.fits) - Number(a.fits) || a.peakBytes - b.peakBytes);
}

export function formatBytes(n: number): string {
  if (!Number.isFinite(n)) return 'unlimited';
  return n >= 2 ** 30
    ? `${(n / 2 ** 30).toFixed(2)} GiB`
    : n >= 2 ** 20
      ? `${(n / 2 ** 20).toFixed(1)} MiB`
      : `${(n / 1024).toFixed(1)} KiB`;
}

/** The plan as lines of text (the CLI's `train --plan`). */
export function formatPlan(plan: RunPlan): string[] {
  const row = (x: PlanItem, indent: string) => `${indent}${x.name.padEnd(24)} ${formatBytes(x.bytes).padStart(10)}  ${x.detail}`;
  const s = plan.settings;
  const lines = [
    `memory plan (every generation at its maxNewTokens): expected peak ${formatBytes(plan.peakBytes)} in ${plan.peakPhase}`,
    `  sequences of the last turn: ${plan.sequences.map((q) => `${q.role} ${q.prompt} + ${q.generated}`).join(', ')} tokens`,
    `  trainer: ${s.maxTokens} tokens a scoring forward, ${s.trainTokens} an update forward, ${s.maxLogitRows} logits rows; recompute ${s.recompute ? 'on' : 'off'}; fused decode ${s.fused ? 'on' : 'off'}; base ${s.dtype}`,
    `  resident ${formatBytes(plan.residentBytes)}:`,
    ...plan.resident.map((x) => row(x, '    ')),
  ];
  for (const ph of ['rollout', 'score', 'update'] as PlanPhase[]) {
    lines.push(`  ${ph} ${formatBytes(plan.phases[ph].bytes)} beyond resident${ph === plan.peakPhase ? ' (the peak)' : ''}:`);
    lines.push(...plan.phases[ph].items.map((x) => row(x, '    ')));
  }
  lines.push(
    `  tensors at once ${formatBytes(plan.inUseBytes)}, free buffers the pool keeps ${formatBytes(plan.poolCacheBytes)}; up to ${formatBytes(plan.varyingPeakBytes)} in all when sequence lengths vary between iterations`,
  );
  lines.push(`  largest buffer: ${plan.largest.name} ${formatBytes(plan.largest.bytes)} (${plan.largest.detail})`);
  if (plan.time)
    lines.push(
      `time per iteration: about ${plan.time.seconds.toPrecision(2)} s (rollout ${plan.time.rolloutSeconds.toPrecision(2)} s, scoring and update ${plan.time.updateSeconds.toPrecision(2)} s; a rough scale from the device's speed probe)`,
    );
  if (!plan.problems.length) return [...lines, 'fits'];
  lines.push(...plan.problems.map((x) => `does not fit: ${x}`));
  if (plan.advice.length)
    lines.push('change one of:', ...plan.advice.map((a) => `  ${a.change}: peak ${formatBytes(a.peakBytes)}${a.fits ? ' (fits)' : ''}`));
  return lines;
}

/**
 * Each agent's prompt size on this model's tokenizer: the longest of its first observations of `seeds`
 * episodes with nothing visible, and what a visible output and a past turn add besides their own tokens
 * (measured with empty outputs).
 */
export async function planPrompts(config: RunConfig, tokenizer: LoadedTokenizer, envs: Envs, seeds = 64): Promise<PromptSizes> {
  const env: AsyncEnv = envs.fromConfig(config.env, { horizon: config.rollout.horizon });
  const agents = config.graph.agents;
  const out: PromptSizes = { base: agents.map(() => 0), perVisible: 0, perTurn: 0 };
  try {
    // tasks differ in length: the longest of a few episodes' first observations
    for (let seed = 1; seed <= seeds; seed++) {
      const { task } = (await env.reset(seed)).observation;
      const len = (i: number, visible: number, turns: number): number =>
        encodeObservation(tokenizer, {
          profile: agents[i],
          task,
          visible: Array.from({ length: visible }, () => ({ role: agents[(i + 1) % agents.length].role, text: '' })),
          history: Array.from({ length: turns }, () => ({ outputs: agents.map((a) => ({ role: a.role, text: '' })), feedback: '' })),
        }).length;
      const base = agents.map((_, i) => len(i, 0, 0));
      out.base = out.base.map((b, i) => Math.max(b, base[i]));
      out.perVisible = Math.max(out.perVisible, len(0, 1, 0) - base[0]);
      out.perTurn = Math.max(out.perTurn, len(0, 0, 1) - base[0]);
    }
    return out;
  } finally {
    env.close?.();
  }
}
