// Try the team through comlink, as the lab's page calls it: the worker's TeamTrial exposed on one end of a
// MessageChannel and called from the other with a comlink.proxy callback, on the tiny model (SwiftShader).
// One streamed episode: the task first, each agent's text growing at most 2 tokens per readback and ending
// as the text the judge got, one judgement per turn; the texts are the training rollout's own for the same
// problem and adapters (base model before training, the run's adapters after one iteration). Held-out tasks,
// Stop within a decode step, makeWay, and the refusals (bad input, a run training, a second try).

import * as Comlink from 'comlink';
import { afterAll, describe, expect, it } from 'vitest';
import type { Gpu } from '../gpu/gpu.ts';
import { Rng } from '../common/rng.ts';
import { compileGraph } from '../config/graph.ts';
import type { RunConfig } from '../config/run-config.ts';
import { tinyRunConfig } from '../config/testing.ts';
import { arithmeticProblem } from '../envs/arithmetic.ts';
import { MathEnv } from '../envs/mathEnv.ts';
import { agentSlot } from '../marft/evaluate.ts';
import { rollout } from '../marft/rollout.ts';
import { Run } from '../marft/run.ts';
import { lossTestSession } from '../marft/testing.ts';
import type { TryEvent, TryRequest, TryResult } from '../marft/try-team.ts';
import { memoryStore } from '../platform/storage/store.ts';
import { TeamTrial } from './try.ts';

const devices: Gpu[] = [];
const session = lossTestSession(devices);
const run = new Run(session, memoryStore(), {}, { maxTokens: 512 });
const trial = new TeamTrial(session, run);
const channel = new MessageChannel();
Comlink.expose(trial, channel.port1);
const remote = Comlink.wrap<TeamTrial>(channel.port2);
afterAll(() => {
  remote[Comlink.releaseProxy]();
  channel.port1.close();
  channel.port2.close();
});

const config = (): RunConfig => tinyRunConfig({ rollout: { episodes: 1, horizon: 2, groupSize: 2 } });
const typed: TryRequest = { problem: { text: 'Compute 2 + 3.', answer: '5' }, temperature: 0, seed: 1 };

/** A try through comlink, its events collected once every message has crossed. */
async function tryRemote(
  c: RunConfig,
  req: TryRequest,
  onEvent?: (e: TryEvent) => void,
): Promise<{ result: TryResult; events: TryEvent[] }> {
  const events: TryEvent[] = [];
  const result = await remote.try(
    c,
    req,
    Comlink.proxy((e: TryEvent) => {
      events.push(e);
      onEvent?.(e);
    }),
  );
  await new Promise((r) => setTimeout(r, 50)); // the last event's message
  return { result, events };
}

/** The streamed episode's shape: task first; each action's text grows by at most 2 tokens a readback and ends as the judge's text. */
function checkStream(events: TryEvent[], result: TryResult): Array<Extract<TryEvent, { kind: 'turn' }>> {
  expect(events[0].kind).toBe('task');
  const turns = events.filter((e): e is Extract<TryEvent, { kind: 'turn' }> => e.kind === 'turn');
  expect(turns.map((t) => t.turn)).toEqual(turns.map((_, i) => i));
  expect(turns).toHaveLength(result.turns);
  expect(result.teamReward).toBe(turns.reduce((s, t) => s + t.teamReward, 0));
  const last = new Map<string, Extract<TryEvent, { kind: 'tokens' }>>();
  for (const e of events) {
    if (e.kind !== 'tokens') continue;
    const before = last.get(e.id);
    expect(e.tokens - (before?.tokens ?? 0), `readback of ${e.id}`).toBeGreaterThan(0);
    expect(e.tokens - (before?.tokens ?? 0), `readback of ${e.id}`).toBeLessThanOrEqual(2);
    last.set(e.id, e);
  }
  for (const t of turns) {
    const acted = [...last.values()].filter((e) => e.turn === t.turn);
    expect(acted.map((e) => e.role)).toEqual(Object.keys(t.texts)); // one streamed action per agent, in acting order
    for (const e of acted) expect(e.text, `${e.role}, turn ${t.turn}`).toBe(t.texts[e.role]);
    const given = Object.values(t.answers).filter((x) => x.answer !== null);
    expect(t.answer).toBe(given.length ? given[given.length - 1].answer : null);
  }
  return turns;
}

/** The same episode through the training rollout itself (greedy), for the texts the try must show. */
async function reference(c: RunConfig, trained: boolean, task: { problem: string; answer: string }): Promise<string[]> {
  const t = run.team;
  const m = t?.model ?? (await session.load(c.model.path));
  const ro = await rollout({
    decoder: m.decoder,
    tokenizer: m.tokenizer,
    config: c,
    graph: compileGraph(c.graph),
    makeEnv: () => new MathEnv('arithmetic', () => task, c.rollout.horizon),
    seeds: [0],
    rng: new Rng(1),
    adapters: trained ? t!.policy : null,
    slotOf: (a) => agentSlot(c, trained, a),
    greedy: true,
  });
  return ro.episodes[0].actions.map((a) => `${a.turn}:${a.role}:${a.text}`);
}

const texts = (turns: Array<Extract<TryEvent, { kind: 'turn' }>>) =>
  turns.flatMap((t) => Object.entries(t.texts).map(([r, x]) => `${t.turn}:${r}:${x}`));

describe('Try the team through the worker API', () => {
  it("streams one episode of the base model on a typed problem, the training rollout's texts, judged per turn", async () => {
    const { result, events } = await tryRemote(config(), typed);
    const task = events[0] as Extract<TryEvent, { kind: 'task' }>;
    expect(task).toMatchObject({ task: 'Compute 2 + 3.', gold: '5', order: ['planner', 'solver'], horizon: 2 });
    expect(task.team).toMatch(/base model .*untrained/);
    const turns = checkStream(events, result);
    expect(turns.length).toBeGreaterThanOrEqual(1);
    for (const t of turns) {
      expect(Object.keys(t.answers)).toEqual(['solver']); // only the answering role is judged
      expect(t.teamReward).toBe(t.correct ? 1 : 0);
      expect(t.feedback).toBe(`judge: the answer is ${t.correct ? 'correct' : 'incorrect'}`);
    }
    expect(result).toMatchObject({ task: 'Compute 2 + 3.', stopped: false });
    expect(texts(turns)).toEqual(await reference(config(), false, { problem: 'Compute 2 + 3.', answer: '5' }));
  });

  it('tries a held-out task, stops within a decode step, refuses bad input and a second try', async () => {
    const preview = await remote.task(config(), 4);
    const gold = arithmeticProblem(4, 1);
    expect(preview).toEqual({ task: gold.problem, gold: gold.answer });
    const { result, events } = await tryRemote(config(), { problem: { heldOut: 4 }, temperature: 0.8, seed: 9 });
    expect(events[0]).toMatchObject({ kind: 'task', task: gold.problem, gold: gold.answer });
    checkStream(events, result);

    // Stop: long answers, stopped at the first streamed tokens
    const long = tinyRunConfig({ rollout: { episodes: 1, horizon: 1, groupSize: 2 } });
    for (const a of long.graph.agents) a.maxNewTokens = 60;
    let asked = false;
    const pending = tryRemote(long, typed, (e) => {
      if (e.kind === 'tokens' && !asked) {
        asked = true;
        void remote.stop();
      }
    });
    await expect(
      remote.try(
        long,
        typed,
        Comlink.proxy(() => {}),
      ),
    ).rejects.toThrow(/already answering/);
    const stopped = await pending;
    expect(stopped.result.stopped).toBe(true);
    expect(stopped.result.turns).toBe(0);
    const streamed = stopped.events.filter((e) => e.kind === 'tokens').map((e) => (e as { tokens: number }).tokens);
    expect(Math.max(...streamed)).toBeLessThan(60);

    // makeWay: what needs the model stops the try and waits for it
    const again = trial.try(long, typed, () => {});
    await new Promise((r) => setTimeout(r, 20));
    await trial.makeWay();
    expect((await again).stopped).toBe(true);

    await expect(trial.try(config(), { ...typed, problem: { text: 'Compute 2 + 3.', answer: ' ' } }, () => {})).rejects.toMatchObject({
      code: 'TRY_INPUT',
    });
    await expect(trial.try(config(), { ...typed, problem: { text: '', answer: '5' } }, () => {})).rejects.toMatchObject({
      code: 'TRY_INPUT',
    });
    await expect(trial.try(config(), { ...typed, temperature: -1 }, () => {})).rejects.toMatchObject({ code: 'TRY_INPUT' });
    await expect(trial.try(config(), { ...typed, problem: { heldOut: 1.5 } }, () => {})).rejects.toMatchObject({ code: 'TRY_INPUT' });
    const code = tinyRunConfig({ env: { name: 'code', options: {} } });
    await expect(trial.try(code, typed, () => {})).rejects.toMatchObject({
      code: 'TRY_INPUT',
      message: expect.stringMatching(/code environment judges its own tasks/),
    });
  });

  it("refuses while a run trains; afterwards tries the run's trained adapters", async () => {
    await run.start(config(), { id: 'r', paused: true });
    await expect(trial.try(config(), typed, () => {})).rejects.toMatchObject({
      code: 'BUSY',
      message: expect.stringMatching(/pause or stop it to try the team/),
    });
    expect(await run.wait()).toBe('paused');
    const { result, events } = await tryRemote(config(), typed);
    expect((events[0] as { team: string }).team).toBe('run r at iteration 1');
    const turns = checkStream(events, result);
    expect(texts(turns)).toEqual(await reference(run.team!.config, true, { problem: 'Compute 2 + 3.', answer: '5' }));
  });
});
