// "Try the team": one episode of a team on a problem the user typed (judged against the answer they give)
// or on a task of the environment's held-out (test) split, with every agent's tokens streamed as they are
// generated. It is the training rollout (rollout.ts) with one seed, not a second orchestrator: the agents
// act along the graph, turn after turn with the judge's feedback, exactly as in a training episode. A
// typed problem is judged the way the math environments judge (MathEnv: \boxed{} answer against the
// given one); environments that judge otherwise (code, users' modules) are tried on their own tasks only.
// Greedy, or every agent sampling at one temperature (its top-k / top-p kept). What `interrupt` throws
// ends the episode within a decode step (the Stop button); the result then says it stopped.

import { Rng } from '../common/rng.ts';
import { type RunConfig } from '../config/run-config.ts';
import { compileGraph } from '../config/graph.ts';
import { MathEnv } from '../envs/mathEnv.ts';
import type { Envs } from '../envs/registry.ts';
import type { AgentAnswer, AsyncEnv, StepOptions } from '../envs/types.ts';
import type { Decoder } from '../model/decoder.ts';
import type { LoraSet } from '../model/lora-set.ts';
import type { LoadedTokenizer } from '../model/tokenizer.ts';
import { marftFail } from './errors.ts';
import { agentSlot } from './evaluate.ts';
import { type EpisodeRecord, rollout } from './rollout.ts';

/** What to try: a typed problem with its expected answer, or the held-out task the environment draws for a seed. */
export type TryProblem = { text: string; answer: string } | { heldOut: number };

export interface TryRequest {
  problem: TryProblem;
  /** 0: greedy; otherwise every agent samples at this temperature. */
  temperature: number;
  /** The sampling seed (a sampled try is reproducible from it). */
  seed: number;
}

/** What the viewer sees, in order: the task, the agents' text as it grows, each turn's judgement. */
export type TryEvent =
  | { kind: 'task'; task: string; gold: string | null; team: string; order: string[]; horizon: number }
  /** An agent's text so far (`id` names one action: a dynamic graph may call a role twice in a turn). */
  | { kind: 'tokens'; id: string; turn: number; role: string; text: string; tokens: number }
  /** A turn judged: the texts the environment got, the team's answer (the last answering role that gave one) and the reward. */
  | {
      kind: 'turn';
      turn: number;
      texts: Record<string, string>;
      answer: string | null;
      teamReward: number;
      correct: boolean;
      feedback: string;
      answers: Record<string, AgentAnswer>;
    };

export interface TryResult {
  task: string;
  /** Whether the Stop button ended it before the episode did. */
  stopped: boolean;
  correct: boolean;
  /** The team reward summed over the turns judged. */
  teamReward: number;
  turns: number;
  /** The team's last answer, when one was given. */
  answer: string | null;
}

export interface TryOptions {
  /** The session's environments (its sandbox for users' modules and code). */
  envs: Envs;
  decoder: Decoder;
  tokenizer: LoadedTokenizer;
  config: RunConfig;
  /** The trained adapters (null: the base model, before training). */
  policy: LoraSet | null;
  /** Says who answers, for the viewer ("run X at iteration 3", "the base model"). */
  team: string;
  onEvent: (e: TryEvent) => void;
  /** Called before every decode step; what it throws stops the try (the episode so far is kept). */
  interrupt?: () => void;
  /** Readbacks every this many decode steps: small, so the stream looks live. */
  syncEvery?: number;
}

/** The readback interval of a try: every 2 decode steps (training reads back every 8). */
export const TRY_SYNC_EVERY = 2;

/** The environment of a try: the config's test split, or the typed problem judged as a math answer. */
function tryEnv(envs: Envs, config: RunConfig, problem: TryProblem): AsyncEnv {
  const env: AsyncEnv = envs.fromConfig(config.env, { split: 'test', horizon: config.rollout.horizon });
  if ('heldOut' in problem) {
    if (!Number.isInteger(problem.heldOut) || problem.heldOut < 0)
      marftFail('TRY_INPUT', `a held-out task is picked by a whole number >= 0, got ${problem.heldOut}`);
    return env;
  }
  env.close?.();
  if (!(env instanceof MathEnv)) marftFail('TRY_INPUT', `the ${env.name} environment judges its own tasks, not a typed problem`);
  const text = problem.text.trim();
  const answer = problem.answer.trim();
  if (!text) marftFail('TRY_INPUT', 'the problem is empty');
  if (!answer) marftFail('TRY_INPUT', 'a typed problem needs the answer the judge checks the team against');
  return new MathEnv(env.name, () => ({ problem: text, answer }), env.horizon);
}

/** The held-out task `seed` draws, and its gold answer where the environment says (the panel previews it). */
export async function heldOutTask(envs: Envs, config: RunConfig, seed: number): Promise<{ task: string; gold: string | null }> {
  const env = tryEnv(envs, config, { heldOut: seed });
  try {
    const r = await env.reset(seed);
    return { task: r.observation.task, gold: goldOf(r.info) };
  } finally {
    env.close?.();
  }
}

/** The team's answer of a turn: the last answering role, in acting order, that gave one. */
function teamAnswer(answers: Record<string, AgentAnswer>): string | null {
  const given = Object.values(answers).filter((a) => a.answer !== null);
  return given.length ? given[given.length - 1].answer : null;
}

const goldOf = (info: Record<string, unknown>): string | null => (typeof info.answer === 'string' ? info.answer : null);

/** Thrown by a try's own interrupt: the user stopped it. */
class Stopped extends Error {}

export async function tryTeam(o: TryOptions, req: TryRequest): Promise<TryResult> {
  const t = req.temperature;
  if (!(t >= 0 && t <= 10)) marftFail('TRY_INPUT', `the temperature must be between 0 (greedy) and 10, got ${t}`);
  const env = tryEnv(o.envs, o.config, req.problem);
  const config: RunConfig =
    t === 0
      ? o.config
      : { ...o.config, graph: { ...o.config.graph, agents: o.config.graph.agents.map((a) => ({ ...a, temperature: t })) } };
  const graph = compileGraph(config.graph);
  const seed = 'heldOut' in req.problem ? req.problem.heldOut : 0;
  const emit = (e: TryEvent) => {
    try {
      o.onEvent(e);
    } catch {
      /* the viewer went away; the episode goes on */
    }
  };
  let episode: EpisodeRecord | null = null;
  let turns = 0;
  let task = '';
  const judged: EpisodeRecord['turns'] = [];
  // the env announces the task and each turn's judgement as the rollout drives it
  const watched: AsyncEnv = {
    name: env.name,
    horizon: env.horizon,
    close: () => env.close?.(),
    async reset(s) {
      const r = await env.reset(s);
      task = r.observation.task;
      emit({
        kind: 'task',
        task,
        gold: goldOf(r.info),
        team: o.team,
        order: [...graph.order],
        horizon: Math.min(env.horizon, config.rollout.horizon),
      });
      return r;
    },
    async step(actions: Record<string, string>, so?: StepOptions) {
      const r = await env.step(actions, so);
      judged.push({ teamReward: r.teamReward, correct: r.correct, feedback: r.feedback, answers: r.answers });
      emit({
        kind: 'turn',
        turn: turns++,
        texts: { ...actions },
        answer: teamAnswer(r.answers),
        teamReward: r.teamReward,
        correct: r.correct,
        feedback: r.feedback,
        answers: r.answers,
      });
      return r;
    },
  };
  const streamed = new Map<string, number[]>();
  let stopped = false;
  try {
    const ro = await rollout({
      decoder: o.decoder,
      tokenizer: o.tokenizer,
      config,
      graph,
      makeEnv: () => watched,
      seeds: [seed],
      rng: new Rng(req.seed),
      adapters: o.policy,
      slotOf: (agent) => agentSlot(config, o.policy !== null, agent),
      greedy: t === 0,
      syncEvery: o.syncEvery ?? TRY_SYNC_EVERY,
      interrupt: () => {
        try {
          o.interrupt?.();
        } catch {
          throw new Stopped('stopped');
        }
      },
      onTokens: (calls, fresh) =>
        calls.forEach((c, i) => {
          if (!fresh[i].length) return;
          const id = `${c.call}.${i}`;
          const ids = [...(streamed.get(id) ?? []), ...fresh[i]];
          streamed.set(id, ids);
          const role = config.graph.agents[c.agent].role;
          emit({ kind: 'tokens', id, turn: c.turn, role, text: o.tokenizer.decode(ids, { skipSpecialTokens: true }), tokens: ids.length });
        }),
    });
    episode = ro.episodes[0];
  } catch (e) {
    if (!(e instanceof Stopped)) throw e;
    stopped = true;
  }
  const last = judged[judged.length - 1];
  return {
    task,
    stopped,
    correct: episode?.correct ?? false,
    teamReward: judged.reduce((s, x) => s + x.teamReward, 0),
    turns: judged.length,
    answer: last ? teamAnswer(last.answers) : null,
  };
}
