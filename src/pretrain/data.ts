// Synthetic multi-agent transcripts for pretraining the built-in tiny model on the coop-arith tasks.
// Each transcript is one agent's turn exactly as the lab's rollout shows it: the preset team's profile
// (solo solver, or duo planner -> solver), the observation as chat messages (buildMessages with its
// defaults: earlier agents as "role: text" user turns, the transition turn last; later turns carry the
// history and "judge: the answer is incorrect"), rendered with the tokenizer's ChatML template and a
// generation prompt, then the target completion closed by <|im_end|>. Loss goes on completion tokens only.
// The tiny model uses chat prompts, not buildPlainPrompt: its tokenizer has a chat template, so the
// rollout's chat path is the one it must know.
//
// Imperfect on purpose, so reinforcement fine-tuning has something to fix:
// 1. A planner plan is unhelpful with probability planErrorRate: a generic plan that names no step, a
//    plan that reads the expression left to right (where precedence matters), or one that swaps a + / -.
//    A solver follows the plan it is given, so the last two lead it to a wrong answer.
// 2. A solver makes an arithmetic slip (a wrong line, carried forward) or boxes a wrong final number with
//    probability errorRate when it follows a correct plan, and noPlanFactor * errorRate without a usable
//    plan (solo, or a generic plan): a good plan makes the team better than one agent, which is what
//    multi-agent training should discover.
// 3. A solo solver, with no plan to follow, reads an expression left to right where precedence matters
//    with probability soloMisreadRate: it computes in reading order, as small models do, and reading the
//    structure is the planner's job. Above 0.5 the untuned solo solver misreads them greedily too.
// 4. Opt-in (teams includes 'orchestrated'): the orchestrated preset's dynamic turn as the rollout runs it:
//    the orchestrator writes <call>planner</call>, the planner plans, <call>solver</call>, the solver
//    solves, <done/>, each agent seeing every output before it. With probability skipPlanRate the
//    orchestrator calls the solver first, which then solves without a plan (as solo): calling the planner
//    is the routing choice reinforcement can learn. Without these transcripts the model never writes a
//    <call> tag, an orchestrator's episode ends unanswered and its reward is always 0. Single-turn only.
// Greedy decoding picks each context's most likely continuation, so these random flaws show mostly in
// sampled rollouts; greedy errors come from the model's limited capacity.
// The coop-plan family's transcripts (plan-data.ts) reuse this episode and team machinery (episodeWith,
// teamTurnWith) with flaws of their own (TeamFlaws), systematic on purpose.

import type { LoadedTokenizer } from '../model/tokenizer.ts';
import { TINY_IDS } from './tiny-tokenizer.ts';
import {
  type CoopExpr,
  type CoopLine,
  type CoopProblem,
  DEFAULT_PRECEDENCE,
  coopProblem,
  evaluateCoop,
  parseCoopExpression,
} from '../envs/coop.ts';
import { Rng } from '../common/rng.ts';
import { feedbackText } from '../envs/mathEnv.ts';
import type { AgentProfile } from '../config/graph.ts';
import { presetGraph } from '../config/presets.ts';
import { type AgentOutput, type ChatMessage, type PastTurn, buildMessages } from '../marft/prompt.ts';

export type PretrainTeam = 'solo' | 'duo' | 'orchestrated';
export const PRETRAIN_TEAMS: readonly PretrainTeam[] = ['solo', 'duo', 'orchestrated'];

export interface TranscriptOptions {
  /** Slip rate of a solver that follows a correct plan. Default 0.25. */
  errorRate?: number;
  /** Solver slip rate without a usable plan = min(0.95, noPlanFactor * errorRate). Default 1.6. */
  noPlanFactor?: number;
  /** Fraction of unhelpful plans. Default 0.3. */
  planErrorRate?: number;
  /** Fraction of precedence problems a solo solver reads left to right. Default planErrorRate. */
  soloMisreadRate?: number;
  /** Fraction of episodes shown at their second turn, after a wrong first turn. Default 0.15. */
  multiTurnFraction?: number;
  /** Teams drawn uniformly per episode. Default ['solo', 'duo'] (the built-in model's recipe). */
  teams?: readonly PretrainTeam[];
  /** Orchestrated team: fraction of episodes whose orchestrator calls the solver without a plan. Default 0.3. */
  skipPlanRate?: number;
  /** coop-arith difficulty levels. Default [1, 2, 3, 4]. */
  difficulty?: number | readonly number[];
  wordFraction?: number;
  /** coop-arith's share of precedence problems (CoopOptions.precedence). Default DEFAULT_PRECEDENCE. */
  precedence?: number | null;
}

export type PlanKind = 'good' | 'generic' | 'order' | 'swap';
export type SolveFlaw = 'none' | 'slip' | 'final';

export interface Transcript {
  team: PretrainTeam;
  role: string;
  /** 1-based turn of the episode. */
  turn: number;
  messages: ChatMessage[];
  completion: string;
  /** Planner: the kind of plan; solver: the plan it followed (solo: 'good' or 'order' for a misreading). */
  plan: PlanKind;
  /** Solver only: the flaw it made ('none' for planners and orchestrators). */
  flaw: SolveFlaw;
  /** Solver only: whether its boxed answer is right. */
  correct: boolean | null;
  problem: CoopProblem;
}

export const GENERIC_PLANS = [
  '1. Read the problem.\n2. Work out the numbers.\n3. Give the answer.',
  '1. Look at the numbers.\n2. Do the calculation.\n3. Write the result.',
  '1. Understand the question.\n2. Solve it step by step.',
];

const VERB: Record<string, string> = { '+': 'Add', '-': 'Subtract', '*': 'Multiply', '/': 'Divide' };

/** One plan line for one computation line (what it combines, without its result). */
export function planLine(l: CoopLine): string {
  const v = VERB[l.op];
  const x = l.xIsResult ? 'the result' : String(l.x);
  const y = l.yIsResult ? 'the result' : String(l.y);
  if (l.xIsResult && l.yIsResult) {
    return {
      '+': 'Add the two results.',
      '-': 'Subtract the second result from the first.',
      '*': 'Multiply the two results.',
      '/': 'Divide the first result by the second.',
    }[l.op];
  }
  switch (l.op) {
    case '+':
      return l.xIsResult ? `${v} ${y} to the result.` : l.yIsResult ? `${v} ${x} to the result.` : `${v} ${x} and ${y}.`;
    case '-':
      return `${v} ${y} from ${x}.`;
    case '*':
      return `${v} ${x} by ${y}.`;
    case '/':
      return `${v} ${x} by ${y}.`;
  }
}

export const planText = (lines: readonly CoopLine[]): string => lines.map((l, i) => `${i + 1}. ${planLine(l)}`).join('\n');

export const solutionText = (lines: readonly CoopLine[], boxed: number): string =>
  [...lines.map((l) => `${l.x} ${l.op} ${l.y} = ${l.result}`), `The answer is \\boxed{${boxed}}.`].join('\n');

/** The expression with one + turned into - or the reverse (the `k`-th such operator, cyclically); null if none. */
function swapOne(e: CoopExpr, k: number): CoopExpr | null {
  const nodes: Array<{ op: string }> = [];
  const walk = (n: CoopExpr): void => {
    if (!('num' in n)) {
      walk(n.left);
      walk(n.right);
      if (n.op === '+' || n.op === '-') nodes.push(n);
    }
  };
  const copy = structuredClone(e);
  walk(copy);
  if (nodes.length === 0) return null;
  const n = nodes[k % nodes.length];
  n.op = n.op === '+' ? '-' : '+';
  return copy;
}

export interface Solved {
  text: string;
  lines: CoopLine[];
  boxed: number;
  flaw: SolveFlaw;
}

/** A solver's work on expression `e`, with a flaw drawn at `rate`. */
export function solve(e: CoopExpr, rate: number, rng: Rng): Solved {
  const clean = evaluateCoop(e);
  const r = rng.next();
  if (r >= rate) return { ...clean, text: solutionText(clean.lines, clean.value), boxed: clean.value, flaw: 'none' };
  const delta = (): number => {
    const d = [1, 2, 3, 10, 1, 2, 5, 9][rng.int(8)];
    return rng.next() < 0.5 ? -d : d;
  };
  if (rng.next() < 0.7) {
    // A slip that a later truncating division hides would not be a flaw: try another.
    for (let k = 0; k < 4; k++) {
      const at = rng.int(clean.lines.length);
      const d = delta();
      const slipped = evaluateCoop(e, (i, exact) => (i === at ? exact + d : exact));
      if (slipped.value !== clean.value)
        return { lines: slipped.lines, text: solutionText(slipped.lines, slipped.value), boxed: slipped.value, flaw: 'slip' };
    }
  }
  // Right lines, wrong box: an earlier line's result, or the answer off by a little.
  const earlier = clean.lines.length > 1 && rng.next() < 0.5 ? clean.lines[rng.int(clean.lines.length - 1)].result : clean.value + delta();
  const boxed = earlier === clean.value ? clean.value + 1 : earlier;
  return { lines: clean.lines, text: solutionText(clean.lines, boxed), boxed, flaw: 'final' };
}

export interface Plan {
  kind: PlanKind;
  text: string;
  expr: CoopExpr;
}

function makePlan(p: CoopProblem, rate: number, rng: Rng): Plan {
  const correct = parseCoopExpression(p.expression);
  if (rng.next() >= rate) return { kind: 'good', text: planText(evaluateCoop(correct).lines), expr: correct };
  const r = rng.next();
  if (p.precedence && r < 0.6) {
    const l2r = parseCoopExpression(p.expression, true);
    return { kind: 'order', text: planText(evaluateCoop(l2r).lines), expr: l2r };
  }
  if (r < 0.8) {
    const swapped = swappedPlan(correct, rng);
    if (swapped) return swapped;
  }
  return { kind: 'generic', text: GENERIC_PLANS[rng.int(GENERIC_PLANS.length)], expr: correct };
}

/**
 * The plan with one + / - swapped, or null when four tries all land on the answer (a swap whose truncating
 * arithmetic gives the right number would not be a wrong plan).
 */
export function swappedPlan(correct: CoopExpr, rng: Rng): Plan | null {
  const k = rng.int(8);
  const value = evaluateCoop(correct).value;
  for (let j = 0; j < 4; j++) {
    const swapped = swapOne(correct, k + j);
    if (swapped && evaluateCoop(swapped).value !== value)
      return { kind: 'swap', text: planText(evaluateCoop(swapped).lines), expr: swapped };
  }
  return null;
}

function checkRate(name: string, v: number, max = 1): void {
  if (typeof v !== 'number' || !(v >= 0 && v <= max))
    throw new Error(`pretrain data: ${name} must be a number in [0, ${max}], got ${JSON.stringify(v)}`);
}

export interface TeamTurn {
  outputs: AgentOutput[];
  transcripts: Array<Omit<Transcript, 'messages' | 'turn'> & { visible: AgentOutput[] }>;
}

/**
 * How a family's agents go wrong: the planner's plan, the solver's slip rate after it, and a solver alone
 * (solo, or called without a plan). Each draws from the episode's stream when called.
 */
export interface TeamFlaws {
  plan: () => Plan;
  slipRate: (plan: Plan) => number;
  alone: () => { s: Solved; plan: PlanKind };
}

/** One turn of a coop-arith team: every agent's completion, in acting order. */
function teamTurn(team: PretrainTeam, p: CoopProblem, o: Required<TranscriptOptions>, rng: Rng): TeamTurn {
  const noPlan = Math.min(0.95, o.noPlanFactor * o.errorRate);
  return teamTurnWith(team, p, o.skipPlanRate, rng, {
    plan: () => makePlan(p, o.planErrorRate, rng),
    slipRate: (plan) => (plan.kind === 'generic' ? noPlan : o.errorRate),
    alone: () => {
      const misread = p.precedence && rng.next() < o.soloMisreadRate;
      return { s: solve(parseCoopExpression(p.expression, misread), noPlan, rng), plan: misread ? 'order' : 'good' };
    },
  });
}

/** One turn of a team whose agents go wrong as `flaws` say, in acting order. */
export function teamTurnWith(team: PretrainTeam, p: CoopProblem, skipPlanRate: number, rng: Rng, flaws: TeamFlaws): TeamTurn {
  const answer = Number(p.answer);
  if (team === 'solo') {
    const { s, plan } = flaws.alone();
    return {
      outputs: [{ role: 'solver', text: s.text }],
      transcripts: [{ team, role: 'solver', completion: s.text, plan, flaw: s.flaw, correct: s.boxed === answer, problem: p, visible: [] }],
    };
  }
  if (team === 'orchestrated') return orchestratedTurn(p, skipPlanRate, rng, flaws);
  const plan = flaws.plan();
  const s = solve(plan.expr, flaws.slipRate(plan), rng);
  return {
    outputs: [
      { role: 'planner', text: plan.text },
      { role: 'solver', text: s.text },
    ],
    transcripts: [
      { team, role: 'planner', completion: plan.text, plan: plan.kind, flaw: 'none', correct: null, problem: p, visible: [] },
      {
        team,
        role: 'solver',
        completion: s.text,
        plan: plan.kind,
        flaw: s.flaw,
        correct: s.boxed === answer,
        problem: p,
        visible: [{ role: 'planner', text: plan.text }],
      },
    ],
  };
}

/** The orchestrated turn (header, point 4): every agent sees every earlier output of the turn. */
function orchestratedTurn(p: CoopProblem, skipPlanRate: number, rng: Rng, flaws: TeamFlaws): TeamTurn {
  const outputs: AgentOutput[] = [];
  const transcripts: TeamTurn['transcripts'] = [];
  const say = (role: string, text: string, plan: PlanKind, s?: Solved) => {
    transcripts.push({
      team: 'orchestrated',
      role,
      completion: text,
      plan,
      flaw: s?.flaw ?? 'none',
      correct: s ? s.boxed === Number(p.answer) : null,
      problem: p,
      visible: [...outputs],
    });
    outputs.push({ role, text });
  };
  if (rng.next() < skipPlanRate) {
    const { s, plan } = flaws.alone();
    say('orchestrator', ROUTE.solver, plan);
    say('solver', s.text, plan, s);
    say('orchestrator', ROUTE.done, plan);
  } else {
    const plan = flaws.plan();
    const s = solve(plan.expr, flaws.slipRate(plan), rng);
    say('orchestrator', ROUTE.planner, plan.kind);
    say('planner', plan.text, plan.kind);
    say('orchestrator', ROUTE.solver, plan.kind);
    say('solver', s.text, plan.kind, s);
    say('orchestrator', ROUTE.done, plan.kind);
  }
  return { outputs, transcripts };
}

/** The orchestrator's completions: the route protocol of src/config/graph.ts (parseRoute). */
export const ROUTE = { planner: '<call>planner</call>', solver: '<call>solver</call>', done: '<done/>' } as const;

const profiles = (team: PretrainTeam): Map<string, AgentProfile> => new Map(presetGraph(team).agents.map((a) => [a.role, a]));

/** The profiles the transcripts (and the lab's presets) use for a team, in acting order. */
export function teamProfiles(team: PretrainTeam): AgentProfile[] {
  return presetGraph(team).agents;
}

export function withDefaults(opts: TranscriptOptions): Required<TranscriptOptions> {
  const o: Required<TranscriptOptions> = {
    errorRate: opts.errorRate ?? 0.25,
    noPlanFactor: opts.noPlanFactor ?? 1.6,
    planErrorRate: opts.planErrorRate ?? 0.3,
    soloMisreadRate: opts.soloMisreadRate ?? opts.planErrorRate ?? 0.3,
    multiTurnFraction: opts.multiTurnFraction ?? 0.15,
    teams: opts.teams ?? ['solo', 'duo'],
    skipPlanRate: opts.skipPlanRate ?? 0.3,
    difficulty: opts.difficulty ?? [1, 2, 3, 4],
    wordFraction: opts.wordFraction ?? 0.35,
    precedence: opts.precedence === undefined ? DEFAULT_PRECEDENCE : opts.precedence,
  };
  checkRate('errorRate', o.errorRate);
  checkRate('planErrorRate', o.planErrorRate);
  checkRate('soloMisreadRate', o.soloMisreadRate);
  if (o.precedence !== null) checkRate('precedence', o.precedence);
  checkRate('multiTurnFraction', o.multiTurnFraction);
  checkRate('skipPlanRate', o.skipPlanRate);
  checkRate('noPlanFactor', o.noPlanFactor, 10);
  if (o.teams.length === 0 || o.teams.some((t) => !PRETRAIN_TEAMS.includes(t)))
    throw new Error(
      `pretrain data: teams must be a non-empty list of ${PRETRAIN_TEAMS.map((t) => `"${t}"`).join(' / ')}, got ${JSON.stringify(o.teams)}`,
    );
  return o;
}

/**
 * The transcripts of the episode `seed` (train split only): one per agent turn shown. A multi-turn
 * episode shows its second turn only, after a first turn whose answer was wrong.
 */
export function episodeTranscripts(seed: number, options: TranscriptOptions = {}): Transcript[] {
  const o = withDefaults(options);
  const rng = Rng.fromSeed(`pretrain:${seed}`);
  const p = coopProblem(seed, { difficulty: o.difficulty, wordFraction: o.wordFraction, precedence: o.precedence, split: 'train' });
  return episodeWith(p, o, rng, (team) => teamTurn(team, p, o, rng));
}

/**
 * The transcripts of one episode of problem `p`: a team drawn from o.teams, maybe a failed first turn
 * (o.multiTurnFraction), then the turn shown; `turn` makes a team's turn from the episode's stream.
 */
export function episodeWith(
  p: CoopProblem,
  o: Pick<Required<TranscriptOptions>, 'teams' | 'multiTurnFraction'>,
  rng: Rng,
  turnOf: (team: PretrainTeam) => TeamTurn,
): Transcript[] {
  const team = o.teams[rng.int(o.teams.length)];
  const byRole = profiles(team);
  const history: PastTurn[] = [];
  // (the orchestrated team is shown single-turn: its last output is the orchestrator's <done/>, not an answer)
  if (team !== 'orchestrated' && rng.next() < o.multiTurnFraction) {
    // A first turn that failed: redraw (bounded) until its answer is wrong, else force a wrong box.
    let first = turnOf(team);
    for (let k = 0; k < 8 && first.transcripts[first.transcripts.length - 1].correct; k++) first = turnOf(team);
    const last = first.outputs[first.outputs.length - 1];
    if (first.transcripts[first.transcripts.length - 1].correct)
      last.text = last.text.replace(/\\boxed\{(-?\d+)\}/, (_, n) => `\\boxed{${Number(n) + 1}}`);
    history.push({ outputs: first.outputs, feedback: feedbackText(false) });
  }
  const turn = turnOf(team);
  return turn.transcripts.map(({ visible, ...t }) => ({
    ...t,
    turn: history.length + 1,
    messages: buildMessages({ profile: byRole.get(t.role)!, task: p.problem, visible, history }),
  }));
}

/** Transcripts of episodes seed0, seed0 + 1, ... until `count` transcripts are made. */
export function makeTranscripts(count: number, seed0: number, options: TranscriptOptions = {}): Transcript[] {
  const out: Transcript[] = [];
  for (let s = seed0; out.length < count; s++) for (const t of episodeTranscripts(s, options)) if (out.length < count) out.push(t);
  return out;
}

/** The texts a tokenizer must cover: every message content and completion (special tokens excluded). */
export function corpusTexts(transcripts: readonly Transcript[]): string[] {
  const out: string[] = [];
  for (const t of transcripts) {
    for (const m of t.messages) out.push(m.role, m.content);
    out.push('assistant', t.completion);
  }
  return out;
}

export interface TokenizedTranscript {
  /** Prompt then completion (ending in <|im_end|>). */
  ids: number[];
  /** Number of prompt tokens: ids[promptLen..] are the completion, the only positions with a loss. */
  promptLen: number;
}

/** The rollout's prompt (chat template with a generation prompt) tokenised, then the completion and eos. */
export function renderPrompt(tok: LoadedTokenizer, messages: readonly ChatMessage[]): string {
  return tok.applyChatTemplate(messages, { addGenerationPrompt: true });
}

export function tokenizeTranscript(tok: LoadedTokenizer, t: Pick<Transcript, 'messages' | 'completion'>): TokenizedTranscript {
  const prompt = tok.encode(renderPrompt(tok, t.messages));
  const eos = tok.eosIds[0] ?? TINY_IDS.imEnd;
  return { ids: [...prompt, ...tok.encode(t.completion), eos], promptLen: prompt.length };
}
