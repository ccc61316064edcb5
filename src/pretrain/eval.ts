// Held-out accuracy of a team on coop-arith or coop-plan (and there the share of right plans), with the same prompts the transcripts (and the rollout) use:
// the agents of the preset act in order, each generating until <|im_end|> from its chat-template prompt,
// batched over problems; the environment judges the answering agent's \boxed{} answer. One turn only
// (first-turn accuracy), no adapters: this measures the base model the pretraining made.

import { CoopEnv } from '../envs/coop.ts';
import { CoopPlanEnv } from '../envs/coop-plan.ts';
import type { Decoder } from '../model/decoder.ts';
import { generate } from '../model/generate.ts';
import type { LoadedTokenizer } from '../model/tokenizer.ts';
import { type PretrainTeam, renderPrompt, teamProfiles } from './data.ts';
import { type AgentOutput, buildMessages } from '../marft/prompt.ts';

export interface CoopEvalOptions {
  /** A static chain (the orchestrated team's dynamic turn is the rollout's: `marft eval`). */
  team: Exclude<PretrainTeam, 'orchestrated'>;
  /** Number of test problems (seeds seed .. seed + n - 1 of the test split). */
  n: number;
  seed?: number;
  difficulty?: number | readonly number[];
  /** coop-arith's share of precedence problems (default the env's). */
  precedence?: number | null;
  /** The family (default coop-arith); coop-plan takes `difficulty` in 2..4 (default [2, 3]) and `trap`. */
  task?: 'coop-arith' | 'coop-plan';
  /** coop-plan's share of trap problems (default the env's). */
  trap?: number;
  /** 0 = greedy (default). */
  temperature?: number;
  maxNewTokens?: number; // default 96
  /** Problems per generate() call. Default 64. */
  chunk?: number;
}

export interface CoopEvalSample {
  problem: string;
  gold: string;
  outputs: AgentOutput[];
  answer: string | null;
  correct: boolean;
  /** coop-plan: whether the planner's plan passed the plan check (null: no planner, or coop-arith). */
  planOk: boolean | null;
}

export interface CoopEvalResult {
  accuracy: number;
  /** Fraction of episodes whose answering agent gave a \boxed{} answer at all. */
  boxedRate: number;
  /** coop-plan with a planner: the share of plans that pass the plan check (else null). */
  planAccuracy: number | null;
  n: number;
  samples: CoopEvalSample[];
}

export async function evaluateTeam(decoder: Decoder, tok: LoadedTokenizer, o: CoopEvalOptions): Promise<CoopEvalResult> {
  const env =
    o.task === 'coop-plan'
      ? new CoopPlanEnv({ split: 'test', difficulty: o.difficulty, trap: o.trap })
      : new CoopEnv({ split: 'test', difficulty: o.difficulty ?? [1, 2, 3, 4], precedence: o.precedence });
  const agents = teamProfiles(o.team);
  const answerRoles = agents.filter((a) => a.withAnswer).map((a) => a.role);
  const eos = new Set(tok.eosIds);
  const seed0 = o.seed ?? 0;
  const chunk = o.chunk ?? 64;
  const samples: CoopEvalSample[] = [];
  for (let start = 0; start < o.n; start += chunk) {
    const seeds = Array.from({ length: Math.min(chunk, o.n - start) }, (_, i) => seed0 + start + i);
    const tasks = seeds.map((s) => env.problem(s));
    const outputs: AgentOutput[][] = seeds.map(() => []);
    for (const agent of agents) {
      const prompts = tasks.map((p, i) =>
        tok.encode(renderPrompt(tok, buildMessages({ profile: agent, task: p.problem, visible: outputs[i] }))),
      );
      const gen = await generate(decoder, prompts, {
        maxNewTokens: o.maxNewTokens ?? 96,
        sampling: { temperature: o.temperature ?? 0 },
        seed: seed0,
        streams: seeds,
        stopTokens: [...eos],
        padId: tok.padId ?? undefined,
      });
      gen.tokens.forEach((t, i) => {
        const ids = t.length && eos.has(t[t.length - 1]) ? t.slice(0, -1) : t;
        outputs[i].push({ role: agent.role, text: tok.decode(ids, { skipSpecialTokens: true }).trim() });
      });
    }
    seeds.forEach((s, i) => {
      env.reset(s);
      const r = env.step(Object.fromEntries(outputs[i].map((x) => [x.role, x.text])), { answerRoles });
      samples.push({
        problem: tasks[i].problem,
        gold: tasks[i].answer,
        outputs: outputs[i],
        answer: (r.info.answer as string | null) ?? null,
        correct: r.correct,
        planOk: r.info.plan ? (r.info.plan as { ok: boolean }).ok : null,
      });
    });
  }
  const n = samples.length;
  return {
    accuracy: n ? samples.filter((s) => s.correct).length / n : 0,
    boxedRate: n ? samples.filter((s) => s.answer !== null).length / n : 0,
    planAccuracy: n && samples[0].planOk !== null ? samples.filter((s) => s.planOk).length / n : null,
    n,
    samples,
  };
}
