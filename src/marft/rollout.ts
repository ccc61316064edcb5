// Multi-agent rollouts: E episodes advance together, turn by turn; inside a turn the agents of one
// topological layer generate in one batched call across every active episode (each sequence with its
// agent's adapter slot and sampling settings), seeing only their ancestors' outputs of the turn. A dynamic
// topology instead alternates the orchestrator (which names the next agent or ends the turn) and the
// named agents, up to the step limit. Every action is kept with its prompt and generated token ids and
// its behaviour log-probs, for scoring, credit assignment, training and the inspector.

import type { AsyncEnv, Env } from '../envs/types.ts';
import { type Decoder } from '../model/decoder.ts';
import { generate } from '../model/generate.ts';
import type { LoraSet } from '../model/lora-set.ts';
import type { LoadedTokenizer } from '../model/tokenizer.ts';
import type { Rng } from '../common/rng.ts';
import type { RunConfig } from '../config/run-config.ts';
import { type CompiledGraph, decideRoute } from '../config/graph.ts';
import { type AgentOutput, type ObservationParts, type PastTurn, buildMessages, buildPlainPrompt } from './prompt.ts';

export interface ActionRecord {
  episode: number;
  turn: number;
  /** Index of the agent in config.graph.agents. */
  agent: number;
  role: string;
  promptIds: number[];
  actionIds: number[];
  /** Log-probs of the generated tokens under the sampling distribution used. */
  behaviourLogp: number[];
  text: string;
  finish: string;
  /** Prompt tokens dropped from the left to fit the model's context. */
  truncated: number;
}

export interface EpisodeRecord {
  index: number;
  seed: number;
  task: string;
  info: Record<string, unknown>;
  /** Actions in acting order, all turns. */
  actions: ActionRecord[];
  /** Per turn: team reward, correctness, feedback, per-role answers. */
  turns: Array<{
    teamReward: number;
    correct: boolean;
    feedback: string;
    answers: Record<string, { answer: string | null; correct: boolean; score?: number }>;
  }>;
  done: boolean;
  correct: boolean;
}

export interface RolloutOptions {
  decoder: Decoder;
  tokenizer: LoadedTokenizer;
  config: RunConfig;
  graph: CompiledGraph;
  /** A fresh env per episode; a module env answers asynchronously and is closed when the rollout ends. */
  makeEnv: () => Env | AsyncEnv;
  /** Episode seeds (GRPO repeats a task's seed groupSize times). */
  seeds: number[];
  rng: Rng;
  /** The policy's adapters (null: the base model, every slot -1). */
  adapters: LoraSet | null;
  /** Adapter slot of agent i (per-agent mode: i; shared: 0; evaluation of the base model: -1). */
  slotOf: (agent: number) => number;
  /** Greedy decoding for every agent (evaluation). */
  greedy?: boolean;
  onProgress?: (done: number, total: number, phase: string) => void;
  /** Called before every decode step; what it throws abandons the rollout (generate's interrupt). */
  interrupt?: () => void;
  /**
   * Streams the agents' tokens as they are generated (the lab's Try panel): `calls` names each sequence of
   * one batched generate call (`call` counts the calls of this rollout), `fresh` its new tokens (generate's onTokens).
   */
  onTokens?: (calls: ReadonlyArray<{ call: number; episode: number; turn: number; agent: number }>, fresh: number[][]) => void;
  /** Generate's readback interval (default: generate's); a viewer of onTokens wants it small. */
  syncEvery?: number;
  /** The generator (default: batched GPU generation); tests script the agents' outputs with it. */
  generateFn?: typeof generate;
}

export interface Rollout {
  episodes: EpisodeRecord[];
  generatedTokens: number;
}

/** The prompt ids of one observation: the chat template when the tokenizer has one, plain text otherwise. */
export function encodeObservation(tokenizer: LoadedTokenizer, parts: ObservationParts): number[] {
  if (tokenizer.hasChatTemplate) {
    const text = tokenizer.applyChatTemplate(buildMessages(parts), { addGenerationPrompt: true });
    return tokenizer.encode(text, { addSpecialTokens: false });
  }
  return tokenizer.encode(buildPlainPrompt(parts), { addSpecialTokens: true });
}

interface Request {
  episode: number;
  agent: number;
  visible: AgentOutput[];
}

export async function rollout(o: RolloutOptions): Promise<Rollout> {
  const envs: AsyncEnv[] = o.seeds.map(() => o.makeEnv());
  try {
    return await rolloutWith(envs, o);
  } finally {
    for (const env of envs) env.close?.();
  }
}

async function rolloutWith(envs: AsyncEnv[], o: RolloutOptions): Promise<Rollout> {
  const { decoder, tokenizer, config, graph } = o;
  const agents = config.graph.agents;
  // async: a module env answers with a promise, a built-in one at once
  const resets = await Promise.all(o.seeds.map(async (seed, index) => envs[index].reset(seed)));
  const episodes: EpisodeRecord[] = o.seeds.map((seed, index) => {
    const r = resets[index];
    return { index, seed, task: r.observation.task, info: r.info, actions: [], turns: [], done: false, correct: false };
  });
  const history: PastTurn[][] = episodes.map(() => []);
  const horizon = Math.max(1, Math.min(config.rollout.horizon, envs[0]?.horizon ?? config.rollout.horizon));
  const maxPos = decoder.config.maxPositionEmbeddings;
  let generatedTokens = 0;
  let calls = 0;

  /** One batched generate over requests of possibly different agents; returns their outputs in order. */
  const act = async (turn: number, reqs: Request[]): Promise<ActionRecord[]> => {
    if (!reqs.length) return [];
    const prompts: number[][] = [];
    const truncated: number[] = [];
    for (const r of reqs) {
      const p = agents[r.agent];
      let ids = encodeObservation(tokenizer, {
        profile: p,
        task: episodes[r.episode].task,
        visible: r.visible,
        history: history[r.episode],
      });
      const room = maxPos - p.maxNewTokens;
      if (room < 1) throw new Error(`agent ${p.role}: maxNewTokens ${p.maxNewTokens} leaves no room in the model's ${maxPos} positions`);
      const cut = Math.max(0, ids.length - room);
      if (cut) ids = ids.slice(cut); // keep the end: the role header and the latest context
      prompts.push(ids);
      truncated.push(cut);
    }
    const gen = await (o.generateFn ?? generate)(decoder, prompts, {
      maxNewTokens: reqs.map((r) => agents[r.agent].maxNewTokens),
      sampling: reqs.map((r) => {
        const p = agents[r.agent];
        return o.greedy ? { temperature: 0 } : { temperature: p.temperature, topK: p.topK, topP: p.topP };
      }),
      adapters: o.adapters,
      slots: reqs.map((r) => o.slotOf(r.agent)),
      seed: o.rng.int(0x7fffffff),
      streams: reqs.map((r) => r.episode * 1024 + r.agent),
      stopTokens: tokenizer.eosIds,
      decode: (ids) => tokenizer.decode(ids, { skipSpecialTokens: true }),
      padId: tokenizer.padId ?? decoder.config.padTokenId ?? 0,
      interrupt: o.interrupt,
      syncEvery: o.syncEvery,
      onTokens:
        o.onTokens &&
        ((fresh) =>
          o.onTokens!(
            reqs.map((r) => ({ call: calls, episode: r.episode, turn, agent: r.agent })),
            fresh,
          )),
    });
    calls++;
    o.onProgress?.(calls, 0, `turn ${turn + 1}`);
    return reqs.map((r, i) => {
      generatedTokens += gen.tokens[i].length;
      return {
        episode: r.episode,
        turn,
        agent: r.agent,
        role: agents[r.agent].role,
        promptIds: prompts[i],
        actionIds: gen.tokens[i],
        behaviourLogp: gen.logprobs[i],
        text: gen.text![i],
        finish: gen.finish[i],
        truncated: truncated[i],
      };
    });
  };

  for (let turn = 0; turn < horizon; turn++) {
    const active = episodes.filter((e) => !e.done).map((e) => e.index);
    if (!active.length) break;
    const outputs = new Map<number, ActionRecord[]>(active.map((e) => [e, []]));
    const visibleOf = (e: number, roles: readonly string[]): AgentOutput[] =>
      outputs
        .get(e)!
        .filter((a) => roles.includes(a.role))
        .map((a) => ({ role: a.role, text: a.text }));
    if (graph.dynamic) {
      const orch = graph.index(graph.dynamic.orchestrator);
      let open = [...active];
      for (let step = 0; step < graph.dynamic.maxSteps && open.length; step++) {
        const all = (e: number) => outputs.get(e)!.map((a) => ({ role: a.role, text: a.text }));
        const routes = await act(
          turn,
          open.map((e) => ({ episode: e, agent: orch, visible: all(e) })),
        );
        const next: Request[] = [];
        for (const r of routes) {
          outputs.get(r.episode)!.push(r);
          const d = decideRoute(
            r.text,
            graph.roles.filter((x) => x !== graph.dynamic!.orchestrator),
            step,
            graph.dynamic.maxSteps,
          );
          if ('next' in d) next.push({ episode: r.episode, agent: graph.index(d.next), visible: all(r.episode) });
        }
        for (const a of await act(turn, next)) outputs.get(a.episode)!.push(a);
        open = next.map((r) => r.episode);
      }
    } else {
      for (const layer of graph.layers) {
        const reqs = active.flatMap((e) =>
          layer.map((role) => ({ episode: e, agent: graph.index(role), visible: visibleOf(e, graph.ancestors(role)) })),
        );
        for (const a of await act(turn, reqs)) outputs.get(a.episode)!.push(a);
      }
    }
    const results = await Promise.all(
      active.map(async (e) => {
        // a role's last output counts, at the place it was given: re-inserting the key keeps `texts` in the
        // order of each role's last action, so the team answer (the last answering role in that order) is the
        // last answering action even when the dynamic orchestrator called a role twice
        const texts: Record<string, string> = {};
        for (const a of outputs.get(e)!) {
          delete texts[a.role];
          texts[a.role] = a.text;
        }
        return envs[e].step(texts, { answerRoles: graph.answerers, teamReward: config.env.teamReward });
      }),
    );
    for (const [k, e] of active.entries()) {
      const acts = outputs.get(e)!;
      const ep = episodes[e];
      const res = results[k];
      ep.actions.push(...acts);
      ep.turns.push({ teamReward: res.teamReward, correct: res.correct, feedback: res.feedback, answers: res.answers });
      history[e].push({ outputs: acts.map((a) => ({ role: a.role, text: a.text })), feedback: res.feedback });
      ep.correct = res.correct;
      ep.done = res.done || turn === horizon - 1;
    }
  }
  return { episodes, generatedTokens };
}
