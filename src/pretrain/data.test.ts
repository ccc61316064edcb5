// Synthetic transcripts: the prompts are exactly the rollout's (buildMessages + the chat template), the
// loss covers the completion and its <|im_end|> only, and the error rates are honoured.

import { describe, expect, it } from 'vitest';
import { answersEqual, extractBoxed } from '../envs/answer.ts';
import { makeBatch } from './train.ts';
import { buildTinyTokenizer, TINY_IDS } from './tiny-tokenizer.ts';
import { loadTokenizer } from '../model/tokenizer.ts';
import { ROUTE, corpusTexts, episodeTranscripts, makeTranscripts, planText, renderPrompt, tokenizeTranscript } from './data.ts';
import { parseRoute } from '../config/graph.ts';
import { presetGraph } from '../config/presets.ts';
import { buildMessages } from '../marft/prompt.ts';
import { evaluateCoop, parseCoopExpression } from '../envs/coop.ts';

describe('pretrain transcripts', () => {
  const transcripts = makeTranscripts(400, 0);
  const files = buildTinyTokenizer(corpusTexts(transcripts));
  const tok = loadTokenizer(files.tokenizerJson, files.tokenizerConfig);

  it('shows each agent the preset prompt the rollout builds, and is reproducible', () => {
    expect(makeTranscripts(400, 0)).toEqual(transcripts);
    const duo = presetGraph('duo').agents;
    const ep = episodeTranscripts(3, { teams: ['duo'], multiTurnFraction: 0 });
    expect(ep.map((t) => t.role)).toEqual(['planner', 'solver']);
    expect(ep[0].messages).toEqual(buildMessages({ profile: duo[0], task: ep[0].problem.problem, visible: [] }));
    expect(ep[1].messages).toEqual(
      buildMessages({ profile: duo[1], task: ep[0].problem.problem, visible: [{ role: 'planner', text: ep[0].completion }] }),
    );
    const solo = episodeTranscripts(3, { teams: ['solo'], multiTurnFraction: 0 });
    expect(solo[0].messages[0].content).toBe(presetGraph('solo').agents[0].systemPrompt);
    // a good plan names the steps in order, without results
    const good = makeTranscripts(200, 0, { teams: ['duo'], planErrorRate: 0 }).filter((t) => t.role === 'planner');
    for (const t of good) expect(t.completion).toBe(planText(evaluateCoop(parseCoopExpression(t.problem.expression)).lines));
    // later turns carry the history and the judge's feedback
    const later = transcripts.filter((t) => t.turn === 2);
    expect(later.length).toBeGreaterThan(10);
    for (const t of later) expect(t.messages.some((m) => m.content.includes('judge: the answer is incorrect'))).toBe(true);
  });

  it('tokenises prompt + completion with the loss on completion tokens only', () => {
    for (const t of transcripts.slice(0, 60)) {
      const x = tokenizeTranscript(tok, t);
      const prompt = renderPrompt(tok, t.messages);
      expect(tok.decode(x.ids.slice(0, x.promptLen))).toBe(prompt);
      expect(prompt.endsWith('<|im_start|>assistant\n')).toBe(true);
      expect(tok.decode(x.ids.slice(x.promptLen))).toBe(`${t.completion}<|im_end|>`);
      expect(x.ids.includes(TINY_IDS.unk)).toBe(false);
    }
    const ex = transcripts.slice(0, 3).map((t) => tokenizeTranscript(tok, t));
    const b = makeBatch(ex, TINY_IDS.pad, 1024);
    expect(b.T % 16).toBe(0);
    ex.forEach((e, i) => {
      for (let t = 0; t < b.T; t++) {
        const target = b.targets[i * b.T + t];
        const inCompletion = t + 1 >= e.promptLen && t + 1 < e.ids.length;
        expect(target).toBe(inCompletion ? e.ids[t + 1] : -1);
        expect(b.mask[i * b.T + t]).toBe(t < e.ids.length ? 1 : 0);
      }
    });
    expect(b.count).toBe(ex.reduce((n, e) => n + e.ids.length - e.promptLen, 0));
  });

  it('honours the error rates', () => {
    const solvers = (o: Parameters<typeof makeTranscripts>[2]) =>
      makeTranscripts(3000, 100, { teams: ['duo'], multiTurnFraction: 0, ...o }).filter((t) => t.role === 'solver');
    const check = (t: ReturnType<typeof solvers>[number]) => answersEqual(extractBoxed(t.completion), t.problem.answer);
    // no errors: every solver is right
    const clean = solvers({ errorRate: 0, planErrorRate: 0 });
    expect(clean.every((t) => t.correct && check(t) && t.flaw === 'none')).toBe(true);
    // slips at the rate asked, after good plans
    const noisy = solvers({ errorRate: 0.4, planErrorRate: 0 });
    const rate = noisy.filter((t) => t.flaw !== 'none').length / noisy.length;
    expect(rate).toBeGreaterThan(0.36);
    expect(rate).toBeLessThan(0.44);
    for (const t of noisy) expect(t.correct).toBe(check(t));
    expect(noisy.filter((t) => t.flaw !== 'none').every((t) => !t.correct)).toBe(true);
    // unhelpful plans at the rate asked; following a wrong plan gives a wrong answer
    const plans = solvers({ errorRate: 0, planErrorRate: 0.5 });
    const bad = plans.filter((t) => t.plan !== 'good');
    expect(bad.length / plans.length).toBeGreaterThan(0.45);
    expect(bad.length / plans.length).toBeLessThan(0.55);
    expect(bad.filter((t) => t.plan === 'order' || t.plan === 'swap').every((t) => !t.correct)).toBe(true);
    expect(new Set(bad.map((t) => t.plan))).toEqual(new Set(['order', 'swap', 'generic']));
    // the defaults leave a fair share wrong
    const dflt = makeTranscripts(3000, 7).filter((t) => t.role === 'solver');
    const acc = dflt.filter((t) => t.correct).length / dflt.length;
    expect(acc).toBeGreaterThan(0.5);
    expect(acc).toBeLessThan(0.8);
  });

  it('makes a solo solver read precedence problems left to right at soloMisreadRate', () => {
    const solo = (rate: number) =>
      makeTranscripts(1500, 11, { teams: ['solo'], multiTurnFraction: 0, errorRate: 0, soloMisreadRate: rate, difficulty: [2, 3] }).filter(
        (t) => t.problem.precedence,
      );
    const some = solo(0.8);
    expect(some.length).toBeGreaterThan(200);
    const misread = some.filter((t) => t.plan === 'order').length / some.length;
    expect(misread).toBeGreaterThan(0.74);
    expect(misread).toBeLessThan(0.86);
    // a misreading is wrong (precedence problems are exactly those), a careful reading right (no slips here)
    for (const t of some) expect(t.correct).toBe(t.plan === 'good');
    expect(solo(0).every((t) => t.plan === 'good' && t.correct)).toBe(true);
    // the default follows planErrorRate, as before the option existed
    const dflt = makeTranscripts(1500, 11, { teams: ['solo'], multiTurnFraction: 0, planErrorRate: 0, difficulty: [2, 3] });
    expect(dflt.every((t) => t.plan === 'good')).toBe(true);
    expect(() => makeTranscripts(1, 0, { soloMisreadRate: 2 })).toThrow(/soloMisreadRate/);
  });

  describe('the orchestrated team (opt-in)', () => {
    const orch = presetGraph('orchestrated').agents;
    const callees = orch.slice(1).map((a) => a.role);
    const profile = (role: string) => orch.find((a) => a.role === role)!;

    it('routes through the protocol the rollout parses, each agent seeing every earlier output of the turn', () => {
      const ep = episodeTranscripts(5, { teams: ['orchestrated'], skipPlanRate: 0, errorRate: 0, planErrorRate: 0 });
      expect(ep.map((t) => t.role)).toEqual(['orchestrator', 'planner', 'orchestrator', 'solver', 'orchestrator']);
      expect(ep.filter((t) => t.role === 'orchestrator').map((t) => parseRoute(t.completion, callees))).toEqual([
        { next: 'planner' },
        { next: 'solver' },
        { done: true },
      ]);
      ep.forEach((t, i) => {
        const visible = ep.slice(0, i).map((x) => ({ role: x.role, text: x.completion }));
        expect(t.messages).toEqual(buildMessages({ profile: profile(t.role), task: t.problem.problem, visible }));
      });
      expect(ep[1].completion).toBe(planText(evaluateCoop(parseCoopExpression(ep[1].problem.expression)).lines));
      expect(ep[3].correct).toBe(true);
      expect(ep[4].correct).toBeNull();
    });

    it('skips the planner at skipPlanRate; the solver then works alone, as solo; always one turn', () => {
      const skipped = episodeTranscripts(5, { teams: ['orchestrated'], skipPlanRate: 1, errorRate: 0, soloMisreadRate: 0 });
      expect(skipped.map((t) => [t.role, t.completion.startsWith('<') ? t.completion : '…'])).toEqual([
        ['orchestrator', ROUTE.solver],
        ['solver', '…'],
        ['orchestrator', ROUTE.done],
      ]);
      expect(skipped[1].messages).toEqual(
        buildMessages({
          profile: profile('solver'),
          task: skipped[1].problem.problem,
          visible: [{ role: 'orchestrator', text: ROUTE.solver }],
        }),
      );
      expect(skipped[1].correct).toBe(true);
      // 2000 episodes at 0.3: the share of first calls to the solver, within 3 standard errors (0.0102 each)
      const firsts = makeTranscripts(8000, 0, { teams: ['orchestrated'], skipPlanRate: 0.3, multiTurnFraction: 1 }).filter(
        (t, i, all) => t.role === 'orchestrator' && (i === 0 || all[i - 1].completion === ROUTE.done),
      );
      const share = firsts.filter((t) => t.completion === ROUTE.solver).length / firsts.length;
      expect(Math.abs(share - 0.3)).toBeLessThan(0.031);
      expect(firsts.length).toBeGreaterThan(1500);
      expect(makeTranscripts(400, 0, { teams: ['orchestrated'], multiTurnFraction: 1 }).every((t) => t.turn === 1)).toBe(true);
      expect(() => makeTranscripts(1, 0, { teams: ['trio' as never] })).toThrow(/teams/);
      expect(() => makeTranscripts(1, 0, { teams: ['orchestrated'], skipPlanRate: -1 })).toThrow(/skipPlanRate/);
    });

    it('fits the pretraining sequence (384 tokens) with a tokenizer learned on the mixed corpus', () => {
      const mixed = makeTranscripts(1500, 0, { teams: ['solo', 'duo', 'orchestrated'] });
      const f = buildTinyTokenizer(corpusTexts(mixed));
      const t = loadTokenizer(f.tokenizerJson, f.tokenizerConfig);
      const lengths = mixed.filter((x) => x.team === 'orchestrated').map((x) => tokenizeTranscript(t, x));
      for (const x of lengths) expect(x.ids.includes(TINY_IDS.unk)).toBe(false);
      expect(Math.max(...lengths.map((x) => x.ids.length))).toBeLessThanOrEqual(384);
    });
  });
});
