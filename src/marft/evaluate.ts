// Held-out evaluation: episodes of the test split, greedy (or sampled), with the trained adapters or
// with none (the untuned base model); accuracy of the team and of each answering agent, how often each
// agent acted (a dynamic team's calls), and the share of right verdicts of roles the environment judges
// besides the answerers (coop-plan's planner: its plan's rule check).

import type { Envs } from '../envs/registry.ts';
import type { Decoder } from '../model/decoder.ts';
import { Rng } from '../common/rng.ts';
import type { LoadedTokenizer } from '../model/tokenizer.ts';
import type { RunConfig } from '../config/run-config.ts';
import { compileGraph } from '../config/graph.ts';
import { rollout } from './rollout.ts';
import type { TrainState } from './state.ts';

export interface EvalOptions {
  /** The session's environments (its sandbox for users' modules and code). */
  envs: Envs;
  episodes: number;
  split: 'test' | 'train';
  sampled?: boolean;
  seed?: number;
}

export interface EvalResult {
  episodes: number;
  accuracy: number;
  /** Accuracy of each answering agent's own answers. */
  agents: Record<string, number>;
  /** Actions per episode of each role (a dynamic team: how often the orchestrator called it, its own turns included). */
  calls: Record<string, number>;
  /** Roles the environment judged though they do not answer (coop-plan's planner): the share of right verdicts. */
  judged: Record<string, number>;
  generatedTokens: number;
  seconds: number;
  mode: 'greedy' | 'sampled';
  split: string;
}

/** The adapter slot agent `agent` generates with: its own (per-agent LoRA), the shared one, or -1 (the base model, untrained). */
export const agentSlot = (config: RunConfig, trained: boolean, agent: number): number =>
  trained ? (config.lora.mode === 'per_agent' ? agent : 0) : -1;

/** `state` null evaluates the base model (adapter slot -1 for every agent). */
export async function evaluate(
  decoder: Decoder,
  tokenizer: LoadedTokenizer,
  config: RunConfig,
  state: TrainState | null,
  o: EvalOptions,
): Promise<EvalResult> {
  const graph = compileGraph(config.graph);
  const seed = o.seed ?? 12345;
  const t0 = performance.now();
  const ro = await rollout({
    decoder,
    tokenizer,
    config,
    graph,
    makeEnv: () => o.envs.fromConfig(config.env, { split: o.split, horizon: config.rollout.horizon }),
    seeds: Array.from({ length: o.episodes }, (_, i) => seed * 100003 + i),
    rng: new Rng(seed),
    adapters: state?.policy ?? null,
    slotOf: (agent) => agentSlot(config, state !== null, agent),
    greedy: !o.sampled,
  });
  const agents: Record<string, number> = {};
  for (const role of graph.answerers) {
    const ans = ro.episodes.flatMap((e) => e.turns.map((t) => t.answers[role]).filter((x) => x !== undefined));
    agents[role] = ans.length ? ans.filter((x) => x.correct).length / ans.length : NaN;
  }
  const calls: Record<string, number> = {};
  const judged: Record<string, number> = {};
  for (const role of graph.roles) {
    calls[role] = ro.episodes.reduce((n, e) => n + e.actions.filter((a) => a.role === role).length, 0) / o.episodes;
    if (graph.answerers.includes(role)) continue;
    const verdicts = ro.episodes.flatMap((e) => e.turns.map((t) => t.answers[role]).filter((x) => x !== undefined));
    if (verdicts.length) judged[role] = verdicts.filter((x) => x.correct).length / verdicts.length;
  }
  return {
    episodes: o.episodes,
    accuracy: ro.episodes.filter((e) => e.correct).length / o.episodes,
    agents,
    calls,
    judged,
    generatedTokens: ro.generatedTokens,
    seconds: (performance.now() - t0) / 1000,
    mode: o.sampled ? 'sampled' : 'greedy',
    split: o.split,
  };
}
