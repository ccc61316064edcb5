// Rollout control flow with scripted agents (no GPU): layers see only their ancestors' outputs, episodes
// stop when solved or at the horizon with the judge's feedback in the next turn's prompt, and a dynamic
// topology follows the orchestrator's <call>/<done/> decisions up to its step limit.

import { describe, expect, it } from 'vitest';
import type { Decoder } from '../model/decoder.ts';
import type { GenerateOptions, Generation } from '../model/generate.ts';
import { Rng } from '../common/rng.ts';
import type { LoadedTokenizer } from '../model/tokenizer.ts';
import { createEnv } from '../envs/registry.ts';
import type { Env } from '../envs/types.ts';
import { parseRunConfig } from '../config/run-config.ts';
import { compileGraph } from '../config/graph.ts';
import { rollout } from './rollout.ts';

// A "tokenizer" whose ids are char codes, so scripted texts survive encode/decode.
const tokenizer = {
  hasChatTemplate: false,
  eosIds: [0],
  bosId: null,
  padId: 0,
  vocabSize: 65536,
  encode: (t: string) => Array.from(t, (c) => c.charCodeAt(0)),
  decode: (ids: readonly number[]) => String.fromCharCode(...ids),
} as unknown as LoadedTokenizer;
const decoder = { config: { maxPositionEmbeddings: 100000, padTokenId: 0 } } as unknown as Decoder;

/** Answers from a script keyed by the last line of the prompt (the role header), recording each prompt. */
function scripted(answer: (prompt: string, call: number) => string, seen: string[]) {
  let calls = 0;
  return async (_d: Decoder, prompts: readonly number[][], _o: GenerateOptions): Promise<Generation> => {
    const texts = prompts.map((p) => {
      const s = String.fromCharCode(...p);
      seen.push(s);
      return answer(s, calls);
    });
    calls++;
    const tokens = texts.map((t) => Array.from(t, (c) => c.charCodeAt(0)));
    return { tokens, logprobs: tokens.map((t) => t.map(() => -1)), text: texts, finish: texts.map(() => 'length' as const) };
  };
}

describe('rollout', () => {
  it('static graph: layers, visibility, judge feedback and horizon', async () => {
    const config = parseRunConfig({ rollout: { episodes: 2, horizon: 2 }, env: { name: 'arithmetic', options: { difficulty: 1 } } });
    const seen: string[] = [];
    const gen = scripted((p) => (p.trimEnd().endsWith('planner:') ? 'PLAN' : 'I think \\boxed{-99999}'), seen);
    const ro = await rollout({
      decoder,
      tokenizer,
      config,
      graph: compileGraph(config.graph),
      makeEnv: () => createEnv('arithmetic', { difficulty: 1, horizon: 2 }),
      seeds: [1, 2],
      rng: new Rng(1),
      adapters: null,
      slotOf: (a) => a,
      generateFn: gen,
    });
    for (const ep of ro.episodes) {
      expect(ep.actions.map((a) => `${a.turn}:${a.role}`)).toEqual(['0:planner', '0:solver', '1:planner', '1:solver']);
      expect(ep.correct).toBe(false);
      expect(ep.turns.map((t) => t.feedback)).toEqual(['judge: the answer is incorrect', 'judge: the answer is incorrect']);
    }
    const solverPrompts = seen.filter((p) => p.trimEnd().endsWith('solver:'));
    expect(solverPrompts.every((p) => p.includes('planner: PLAN'))).toBe(true); // the solver sees its ancestor
    const plannerTurn1 = seen.filter((p) => p.trimEnd().endsWith('planner:')).slice(2);
    expect(plannerTurn1.every((p) => p.includes('judge: the answer is incorrect'))).toBe(true); // feedback next turn
    expect(
      seen
        .filter((p) => p.trimEnd().endsWith('planner:'))
        .slice(0, 2)
        .every((p) => !p.includes('solver:')),
    ).toBe(true);
  });

  it('dynamic topology follows <call> and <done/> up to the step limit', async () => {
    const config = parseRunConfig({ rollout: { episodes: 1, horizon: 1 } });
    const graph = {
      agents: [
        { role: 'orchestrator', systemPrompt: 'Route.', withAnswer: false, maxNewTokens: 8, temperature: 1, topK: 0, topP: 1 },
        { role: 'planner', systemPrompt: 'Plan.', withAnswer: false, maxNewTokens: 8, temperature: 1, topK: 0, topP: 1 },
        { role: 'solver', systemPrompt: 'Solve.', withAnswer: true, maxNewTokens: 8, temperature: 1, topK: 0, topP: 1 },
      ],
      edges: [],
      dynamic: { orchestrator: 'orchestrator', maxSteps: 3 },
    };
    const cfg = { ...config, graph };
    const routes = ['<call>planner</call>', '<call>solver</call>', '<done/>'];
    let r = 0;
    const seen: string[] = [];
    const gen = scripted(
      (p) => (p.trimEnd().endsWith('orchestrator:') ? routes[r++] : p.trimEnd().endsWith('planner:') ? 'PLAN' : '\\boxed{1}'),
      seen,
    );
    const ro = await rollout({
      decoder,
      tokenizer,
      config: cfg,
      graph: compileGraph(graph),
      makeEnv: () => createEnv('arithmetic', { difficulty: 1, horizon: 1 }),
      seeds: [5],
      rng: new Rng(2),
      adapters: null,
      slotOf: (a) => a,
      generateFn: gen,
    });
    expect(ro.episodes[0].actions.map((a) => a.role)).toEqual(['orchestrator', 'planner', 'orchestrator', 'solver', 'orchestrator']);
    // step limit: an orchestrator that never says done is cut after maxSteps calls
    r = 0;
    routes.splice(0, 3, '<call>planner</call>', '<call>planner</call>', '<call>planner</call>');
    routes.push('<call>planner</call>');
    const ro2 = await rollout({
      decoder,
      tokenizer,
      config: cfg,
      graph: compileGraph(graph),
      makeEnv: () => createEnv('arithmetic', { difficulty: 1, horizon: 1 }),
      seeds: [5],
      rng: new Rng(2),
      adapters: null,
      slotOf: (a) => a,
      generateFn: gen,
    });
    expect(ro2.episodes[0].actions.filter((a) => a.role === 'planner')).toHaveLength(3);
  });

  it('team answer: the last answering action in acting order, or the fraction of answering agents right', async () => {
    // Legacy MARFT marft/envs/math/math_env.py step(): score = (correct answering agents) / (answering agents),
    // done when score > 0. The dynamic orchestrator calls solver, verifier, then solver again: the team's
    // answer is the solver's second one (the last answering action), not the verifier's (the last role to speak first).
    const agent = (role: string, withAnswer: boolean) => ({
      role,
      systemPrompt: role,
      withAnswer,
      maxNewTokens: 8,
      temperature: 1,
      topK: 0,
      topP: 1,
    });
    const graph = {
      agents: [agent('orchestrator', false), agent('solver', true), agent('verifier', true)],
      edges: [],
      dynamic: { orchestrator: 'orchestrator', maxSteps: 4 },
    };
    const gold = String((createEnv('arithmetic', { difficulty: 1 }) as Env).reset(5).info.answer);
    const run = async (teamReward: 'last' | 'fraction') => {
      const config = parseRunConfig({
        graph,
        rollout: { episodes: 1, horizon: 1 },
        env: { name: 'arithmetic', options: { difficulty: 1 }, teamReward },
      });
      const routes = ['<call>solver</call>', '<call>verifier</call>', '<call>solver</call>', '<done/>'];
      let r = 0;
      let solverCalls = 0;
      const gen = scripted((p) => {
        if (p.trimEnd().endsWith('orchestrator:')) return routes[r++];
        if (p.trimEnd().endsWith('verifier:')) return '\\boxed{-99999}';
        return solverCalls++ === 0 ? '\\boxed{-88888}' : `\\boxed{${gold}}`;
      }, []);
      const ro = await rollout({
        decoder,
        tokenizer,
        config,
        graph: compileGraph(config.graph),
        makeEnv: () => createEnv('arithmetic', { difficulty: 1, horizon: 1 }),
        seeds: [5],
        rng: new Rng(3),
        adapters: null,
        slotOf: (a) => a,
        generateFn: gen,
      });
      expect(ro.episodes[0].actions.map((a) => a.role)).toEqual([
        'orchestrator',
        'solver',
        'orchestrator',
        'verifier',
        'orchestrator',
        'solver',
        'orchestrator',
      ]);
      return ro.episodes[0];
    };
    const last = await run('last');
    expect(last.turns[0]).toMatchObject({ teamReward: 1, correct: true });
    // fraction: solver right, verifier wrong -> 1/2; the turn counts as correct (any right) and the episode ends
    const fraction = await run('fraction');
    expect(fraction.turns[0]).toMatchObject({ teamReward: 0.5, correct: true });
    expect(fraction.done).toBe(true);
  });
});
