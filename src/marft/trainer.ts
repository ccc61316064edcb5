// One MARFT iteration, end to end: rollout (batched generation across episodes and agents) -> scoring
// (old and reference log-probs, critic inputs and values, from the critic's own trunk when it has one) -> credit assignment and advantages -> PPO or
// GRPO update -> metrics. Each phase is timed; progress goes to a callback so the CLI and the UI can show it.
// Non-finite logits, critic values or advantages (nonfinite.ts) skip the update and are named in metrics.skipped.

import type { Envs } from '../envs/registry.ts';
import type { Gpu } from '../gpu/gpu.ts';
import type { Decoder } from '../model/decoder.ts';
import type { LoadedTokenizer } from '../model/tokenizer.ts';
import { type CompiledGraph, compileGraph } from '../config/graph.ts';
import { type ActionRecord, type EpisodeRecord, rollout } from './rollout.ts';
import { trainingAgents } from './schedule.ts';
import { criticTrunk, needsCriticTrunk } from './critic.ts';
import { type ActionScores, scoreActions } from './score.ts';
import type { TrainState } from './state.ts';
import type { AgentMetrics, IterationMetrics } from '../config/metrics.ts';
import { type ActionTargets, computeTargets } from './advantage-targets.ts';
import { type UpdateStats, ppoUpdate } from './update.ts';
import { nonFiniteInputs } from './nonfinite.ts';

export type Phase = 'rollout' | 'score' | 'advantages' | 'update';

export interface IterationResult {
  metrics: IterationMetrics;
  /** The iteration's episodes, for the inspector. */
  episodes: EpisodeRecord[];
  /** Per action of `episodes`: old/ref log-probs, entropy and critic values (computeTargets re-runs on them for another credit method). */
  scores: Map<ActionRecord, ActionScores>;
  /** Per action: credited reward, advantages and returns as the update used them, with their GAE trace (what the inspector shows). */
  targets: Map<ActionRecord, ActionTargets>;
}

export interface TrainerDeps {
  gpu: Gpu;
  /** The session's environments (its sandbox for users' modules and code). */
  envs: Envs;
  decoder: Decoder;
  tokenizer: LoadedTokenizer;
  state: TrainState;
  onProgress?: (phase: Phase, detail: string) => void;
  /**
   * Called between decode steps (rollout), scoring chunks and minibatches (update); what it throws abandons
   * the iteration there (state.iteration and the metrics unchanged; the RNG and, in the update, the weights moved).
   */
  interrupt?: () => void;
  /** Upper bound on B*T of one forward pass (memory); default 4096. */
  maxTokens?: number;
  /**
   * Activation checkpointing in the update (Decoder save: 'checkpoint'): 'auto' (default) turns it on when
   * a full micro-batch's saved activations would pass 512 MiB, e.g. for a 135M model, not the tiny one.
   */
  recompute?: boolean | 'auto';
}

/** Bytes of f32 activations a saved forward keeps per token (Decoder.layer's LayerSaved). */
export function savedBytesPerToken(c: Decoder['config']): number {
  return c.numLayers * 4 * (6 * c.hiddenSize + 2 * c.numHeads * c.headDim + 2 * c.numKvHeads * c.headDim + 3 * c.intermediateSize);
}

/**
 * Free GPU memory the buffer pool may hold beyond its in-use peak (BufferPool.headroom) while the trainer
 * runs (poolHeadroom): the phases ask for buffers of different sizes, and a pool held to the in-use peak
 * retires one phase's buffers to make the next one's, every iteration, and their bind groups with them.
 * A model of at most KEEP_MAX_PARAMS parameters keeps KEEP_BYTES: there the dispatches' CPU cost bounds an
 * iteration (the built-in model's duo preset keeps ~650 MiB). A larger one keeps at most KEEP_FRACTION of its
 * in-use peak, and no more than KEEP_BYTES: 135M f32's update, peak 5.6 GiB, made 137 buffers and 1 968 bind
 * groups each iteration with none (0.215-0.229 s on an H200), 2 and 0 with 1 GiB (0.199-0.204 s), for 0.94 GiB
 * more at the peak (bench/results/iteration/update-host-side/4-headroom); with this rule it peaked 0.44 GiB higher (6 168 MiB,
 * iteration/update-host-side/5-confirm). 135M bf16 with 4 agents, peak 1.09 GiB, keeps 0.27 GiB.
 */
export const KEEP_BYTES = 1024 * 2 ** 20;
export const KEEP_MAX_PARAMS = 50e6;
export const KEEP_FRACTION = 0.25;

/** The pool's headroom for this decoder, given the pool's in-use peak so far (see KEEP_BYTES). */
export function poolHeadroom(c: Decoder['config'], peakInUse: number): number {
  return decoderParams(c) <= KEEP_MAX_PARAMS ? KEEP_BYTES : Math.min(KEEP_BYTES, Math.floor(peakInUse * KEEP_FRACTION));
}

/** The decoder's parameters (embedding, layers, final norm and an untied LM head), from its config. */
export function decoderParams(c: Decoder['config']): number {
  const q = c.numHeads * c.headDim;
  const kv = c.numKvHeads * c.headDim;
  const layer = c.hiddenSize * (2 * q + 2 * kv) + 3 * c.hiddenSize * c.intermediateSize + 2 * c.hiddenSize;
  return c.vocabSize * c.hiddenSize * (c.tieWordEmbeddings ? 1 : 2) + c.numLayers * layer + c.hiddenSize;
}

export interface TrainerBounds {
  /** Tokens per scoring forward: the caller's bound (default 4096), at most what one storage binding holds of the widest activation. */
  maxTokens: number;
  /** Rows of logits per forward pass (scoring and the update take them at the action rows only): at most 256 MiB of f32 logits (and one binding), and no more than the tokens. */
  maxLogitRows: number;
  /**
   * Tokens per forward of the update, whose activations (or their checkpoints) live until its backward. With
   * recompute off (all activations kept) the scoring bound; when memory made recompute necessary, the logits
   * rows' bound, as all forwards had before scoring's were freed of it: 8 192-token micro-batches took the
   * 135M model with 4 agents (bf16, recompute on) from 1.3 to 3.9 GB (bench/results/memory/profile-and-picks/22-memory).
   */
  trainTokens: number;
  /** Activation checkpointing in the update; 'auto' turns it on when a full micro-batch's saved activations would pass 512 MiB. */
  recompute: boolean;
}

/** The trainer's forward sizes for a model on a device whose storage bindings hold `maxBinding` bytes. */
export function trainerBounds(
  c: Decoder['config'],
  maxBinding: number,
  maxTokens = 4096,
  recompute: boolean | 'auto' = 'auto',
): TrainerBounds {
  const widest = 4 * Math.max(c.intermediateSize, c.numHeads * c.headDim, c.hiddenSize);
  const tokens = Math.max(64, Math.min(maxTokens, Math.floor(maxBinding / widest)));
  // 256 MiB of logits, or one binding's worth where bindings are smaller (WebGPU's default is 128 MiB)
  const maxLogitRows = Math.max(64, Math.min(tokens, Math.floor(Math.min(2 ** 28, maxBinding) / (4 * c.vocabSize))));
  const on = recompute === 'auto' ? savedBytesPerToken(c) * maxLogitRows > 512 * 2 ** 20 : recompute;
  return { maxTokens: tokens, maxLogitRows, trainTokens: on ? maxLogitRows : tokens, recompute: on };
}

/** The stats of an update that did not run. */
const NO_UPDATE: UpdateStats = {
  policyLoss: 0,
  valueLoss: 0,
  entropy: 0,
  approxKl: 0,
  klToRef: 0,
  clipFraction: 0,
  skipped: [],
  policySteps: 0,
  criticSteps: 0,
};

export class Trainer {
  readonly graph: CompiledGraph;

  constructor(readonly d: TrainerDeps) {
    this.graph = compileGraph(d.state.config.graph);
  }

  slotOf = (agent: number): number => (this.d.state.config.lora.mode === 'per_agent' ? agent : 0);
  headOf = (agent: number): number => (this.d.state.config.critic.mode === 'shared' ? 0 : agent);

  /** The forwards' sizes and activation checkpointing for this decoder and device (trainerBounds). */
  get bounds(): TrainerBounds {
    return trainerBounds(this.d.decoder.config, this.d.gpu.limits.maxStorageBufferBindingSize, this.d.maxTokens, this.d.recompute);
  }

  get maxTokens(): number {
    return this.bounds.maxTokens;
  }
  get maxLogitRows(): number {
    return this.bounds.maxLogitRows;
  }
  get trainTokens(): number {
    return this.bounds.trainTokens;
  }
  get recompute(): boolean {
    return this.bounds.recompute;
  }

  private get padId(): number {
    return this.d.tokenizer.padId ?? this.d.decoder.config.padTokenId ?? 0;
  }

  makeEnv = () => {
    const c = this.d.state.config;
    return this.d.envs.fromConfig(c.env, { horizon: c.rollout.horizon });
  };

  async iteration(): Promise<IterationResult> {
    const { gpu, decoder, state } = this.d;
    const cfg = state.config;
    gpu.pool.headroom = poolHeadroom(decoder.config, gpu.pool.stats.peakInUse);
    const it = state.iteration;
    const t0 = performance.now();
    const G = cfg.algo === 'grpo' ? cfg.rollout.groupSize : 1;
    const seeds: number[] = [];
    for (let e = 0; e < cfg.rollout.episodes; e++) {
      const s = state.rng.int(0x7fffffff);
      for (let g = 0; g < G; g++) seeds.push(s);
    }
    this.d.onProgress?.('rollout', `${seeds.length} episodes`);
    const ro = await rollout({
      decoder,
      tokenizer: this.d.tokenizer,
      config: cfg,
      graph: this.graph,
      makeEnv: this.makeEnv,
      seeds,
      rng: state.rng,
      adapters: state.policy,
      slotOf: this.slotOf,
      interrupt: this.d.interrupt,
      onProgress: (n, _t, phase) => this.d.onProgress?.('rollout', `${phase}, batch ${n}`),
    });
    const t1 = performance.now();
    const actions = ro.episodes.flatMap((e) => e.actions);
    this.d.onProgress?.('score', `${actions.length} actions`);
    const score = await scoreActions(gpu, decoder, state.critic, actions, {
      level: cfg.algo === 'grpo' ? 'token' : cfg.level,
      adapters: state.policy,
      slotOf: this.slotOf,
      headOf: this.headOf,
      padId: this.padId,
      maxTokens: this.maxTokens,
      maxLogitRows: this.maxLogitRows,
      needRef: cfg.ppo.klCoef > 0,
      interrupt: this.d.interrupt,
      critic: cfg.algo === 'ppo' && needsCriticTrunk(cfg) ? criticTrunk(state, actions, decoder.config.maxPositionEmbeddings) : undefined,
    });
    const t2 = performance.now();
    this.d.onProgress?.('advantages', `${actions.length} actions`); // CPU only; a seam for fault injection and the lab's progress
    const targets = computeTargets(ro.episodes, score.scores, cfg);
    const t3 = performance.now();
    const trainAgents = trainingAgents(it, cfg.graph.agents.length, cfg.schedule);
    this.d.onProgress?.(
      'update',
      trainAgents.length ? `training ${trainAgents.map((a) => cfg.graph.agents[a].role).join(', ')}` : 'critic warm-up',
    );
    const bad = nonFiniteInputs(
      score,
      targets,
      cfg.graph.agents.map((a) => a.role),
    );
    let upd: UpdateStats;
    try {
      upd = bad.length
        ? { ...NO_UPDATE, skipped: bad }
        : await ppoUpdate(gpu, decoder, state, actions, score, targets, {
            trainPolicy: trainAgents.length > 0,
            trainAgents,
            slotOf: this.slotOf,
            padId: this.padId,
            rng: state.rng,
            maxTokens: this.trainTokens,
            maxLogitRows: this.maxLogitRows,
            recompute: this.recompute,
            interrupt: this.d.interrupt,
          });
    } finally {
      gpu.release(score.criticInput);
    }
    const t4 = performance.now();

    const agents: Record<string, AgentMetrics> = {};
    cfg.graph.agents.forEach((p, i) => {
      const acts = actions.filter((a) => a.agent === i);
      const answers = ro.episodes.flatMap((e) => e.turns.map((t) => t.answers[p.role]).filter((x) => x !== undefined));
      agents[p.role] = {
        reward: acts.length ? acts.reduce((s, a) => s + targets.get(a)!.reward, 0) / acts.length : 0,
        accuracy: answers.length ? answers.filter((x) => x.correct).length / answers.length : NaN,
        actions: acts.length,
        tokens: acts.reduce((s, a) => s + a.actionIds.length, 0),
      };
    });
    const E = ro.episodes.length;
    const metrics: IterationMetrics = {
      iteration: it,
      accuracy: ro.episodes.filter((e) => e.correct).length / E,
      teamReward: ro.episodes.reduce((s, e) => s + e.turns.reduce((x, t) => x + t.teamReward, 0), 0) / E,
      agents,
      policyLoss: upd.policyLoss,
      valueLoss: upd.valueLoss,
      entropy: upd.entropy,
      approxKl: upd.approxKl,
      klToRef: upd.klToRef,
      clipFraction: upd.clipFraction,
      tokensPerSecond: ro.generatedTokens / ((t1 - t0) / 1000),
      seconds: {
        rollout: (t1 - t0) / 1000,
        score: (t2 - t1) / 1000,
        advantages: (t3 - t2) / 1000,
        update: (t4 - t3) / 1000,
        total: (t4 - t0) / 1000,
      },
      skipped: upd.skipped,
      trained: trainAgents.map((a) => cfg.graph.agents[a].role),
    };
    state.iteration++;
    state.metrics.push(metrics);
    return { metrics, episodes: ro.episodes, scores: score.scores, targets };
  }
}
