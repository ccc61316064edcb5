// The built-in cooperative arithmetic tasks (`coop-arith`): multi-step problems made for a planner ->
// solver team, where the planner decomposes and the solver computes and answers in \boxed{}. A problem is
// a chain of 1..4 operations (the difficulty), shown either as an expression ("Compute 17 + 25 * 3 - 8.")
// or as a short templated word problem ("Ann has 17 shells. Ann finds 25 more. ..."). Each problem keeps
// its steps (x op y = result, in the order they must be done), so the synthetic transcripts of
// src/pretrain/data.ts can write the plan and the computation a good team would produce.
// Some expressions put a new operand on the left ("17 + 25 * 3"), so reading left to right is wrong:
// that is what a plan is for. Left alone the generator makes few of those (~7 % of problems at levels
// 1-3), so by default half of the multi-step expressions are drawn among them (`precedence`): enough
// that a team whose planner reads the structure beats a solver that computes in reading order.
// Train and test never overlap: a problem's split is a hash of its computation (the steps, whatever the
// wording), and reset(seed) draws candidates until one of the requested split (and precedence) comes
// up. All randomness is seeded.

import { envFail } from './errors.ts';
import { MathEnv, type Problem } from './mathEnv.ts';
import { hashSeed, Rng } from '../common/rng.ts';
import type { EnvOptions } from './types.ts';

export type CoopOp = '+' | '-' | '*' | '/';

export type CoopSplit = 'train' | 'test';

export interface CoopProblem extends Problem {
  id: string;
  difficulty: number;
  kind: 'expression' | 'word';
  /** The computation as an expression (what an expression problem shows; word problems have one too). */
  expression: string;
  /** The operations in the order a careful solver does them (evaluateCoop of the expression). */
  steps: CoopLine[];
  /** Reading the expression left to right, ignoring precedence, gives a wrong answer. */
  precedence: boolean;
  split: CoopSplit;
}

export interface CoopOptions extends EnvOptions {
  /** Levels 1..4 (number of operations; operands grow with it), one or a list drawn uniformly. Default [1, 2, 3]. */
  difficulty?: number | readonly number[];
  /** Which split reset() draws from. Default 'train'. */
  split?: CoopSplit;
  /** Fraction of word problems (the rest are expressions). Default 0.35. */
  wordFraction?: number;
  /**
   * Fraction of expression problems of 2+ operations where reading left to right is wrong (null: as the
   * generator makes them, about 1 in 6). Default DEFAULT_PRECEDENCE.
   */
  precedence?: number | null;
}

export const DEFAULT_PRECEDENCE = 0.5;

/** One problem in TEST_MODULUS goes to the test split. */
export const TEST_MODULUS = 10;

const OPERAND_MAX = [0, 20, 30, 50, 99];
const FACTOR_MAX = [0, 9, 9, 12, 12];
const NAMES = ['Ann', 'Ben', 'Cara', 'Dan', 'Eva', 'Finn', 'Gia', 'Hugo', 'Ivy', 'Jon', 'Kim', 'Leo', 'Mia', 'Noah', 'Omar', 'Pia'];
const ITEMS = ['apples', 'marbles', 'stickers', 'coins', 'books', 'cards', 'shells', 'pencils', 'stamps', 'beads'];

/** The split of a computation: a hash of its steps, so rewordings of one computation share a split. */
export function coopSplitOf(steps: readonly CoopLine[]): CoopSplit {
  const sig = steps.map((s) => `${s.x}${s.op}${s.y}`).join(';');
  return hashSeed(`coop-split:${sig}`) % TEST_MODULUS === 0 ? 'test' : 'train';
}

export function checkCoopDifficulty(d: unknown): number[] {
  if (d === undefined) return [1, 2, 3];
  const list = Array.isArray(d) ? d : [d];
  if (list.length === 0 || list.some((x) => !Number.isInteger(x) || x < 1 || x > 4)) {
    envFail('ENV_OPTIONS', `coop-arith: difficulty must be an integer in 1..4 or a list of them, got ${JSON.stringify(d)}`);
  }
  return list as number[];
}

interface Built {
  text: string;
  top: CoopOp | null;
  value: number;
}

const LOW = (op: CoopOp | null): boolean => op === '+' || op === '-';
const paren = (b: Built, need: boolean): string => (need ? `(${b.text})` : b.text);

/** One candidate problem of exactly `difficulty` operations, from a seeded stream (no split filtering). */
function candidate(rng: Rng, difficulty: number, word: boolean): Omit<CoopProblem, 'id' | 'split'> {
  const max = OPERAND_MAX[difficulty];
  const num = (): number => 2 + rng.int(max - 1);
  const factor = (): number => 2 + rng.int(FACTOR_MAX[difficulty] - 1);
  let e: Built = { text: '', top: null, value: num() };
  e.text = String(e.value);
  const start = e.value;
  const sentences: string[] = [];
  const name = NAMES[rng.int(NAMES.length)];
  const item = ITEMS[rng.int(ITEMS.length)];
  for (let k = 0; k < difficulty; k++) {
    const v = e.value;
    let op = (['+', '-', '*', '/'] as const)[rng.int(4)];
    const divisors: number[] = [];
    for (let d = 2; d <= Math.min(v, 12); d++) if (v % d === 0 && v / d > 1) divisors.push(d);
    if (op === '/' && divisors.length === 0) op = '*';
    if (op === '-' && v < 3) op = '+';
    // Left placement (b op E) only in expressions, only for + and - (b > v) and *.
    const left = !word && k > 0 && (op === '+' || op === '*' || op === '-') && rng.next() < 0.4;
    if (op === '+') {
      const b = num();
      if (left) {
        e = { text: `${b} + ${e.text}`, top: '+', value: b + v };
      } else {
        e = { text: `${e.text} + ${b}`, top: '+', value: v + b };
      }
      sentences.push(rng.next() < 0.5 ? `${name} gets ${b} more.` : `${name} finds ${b} more.`);
    } else if (op === '-') {
      if (left) {
        const b = v + 1 + rng.int(max);
        e = { text: `${b} - ${paren(e, LOW(e.top))}`, top: '-', value: b - v };
      } else {
        const b = 1 + rng.int(Math.min(max, v - 1));
        e = { text: `${e.text} - ${b}`, top: '-', value: v - b };
        sentences.push(rng.next() < 0.5 ? `${name} gives away ${b}.` : `${name} loses ${b}.`);
      }
    } else if (op === '*') {
      const m = factor();
      if (left) {
        e = { text: `${m} * ${paren(e, LOW(e.top))}`, top: '*', value: m * v };
      } else {
        e = { text: `${paren(e, LOW(e.top))} * ${m}`, top: '*', value: v * m };
      }
      sentences.push(`Then ${name} ends up with ${m} times as many.`);
    } else {
      const d = divisors[rng.int(divisors.length)];
      e = { text: `${paren(e, LOW(e.top))} / ${d}`, top: '/', value: v / d };
      sentences.push(`${name} splits them into ${d} equal groups and keeps one group.`);
    }
  }
  const { lines: steps, value } = evaluateCoop(parseCoopExpression(e.text));
  if (value !== e.value) throw new Error(`coop-arith: internal error, ${e.text} = ${value}, built as ${e.value}`);
  const precedence = evaluateCoop(parseCoopExpression(e.text, true)).value !== value;
  const problem = word
    ? `${name} has ${start} ${item}. ${sentences.join(' ')} How many ${item} does ${name} have now?`
    : `Compute ${e.text}.`;
  return { problem, answer: String(e.value), difficulty, kind: word ? 'word' : 'expression', expression: e.text, steps, precedence };
}

/**
 * The problem of `seed` for a split. A seed fixes the level, the kind (word or expression) and, for
 * expressions of 2+ operations, whether precedence must matter; candidates `coop:<seed>:<k>` are drawn for
 * k = 0, 1, ... until one fits the split and that wish (~10 tries for test, ~1 for train, up to ~10x more
 * for a precedence wish). Deterministic in (seed, options).
 */
export function coopProblem(
  seed: number,
  options: Pick<CoopOptions, 'difficulty' | 'split' | 'wordFraction' | 'precedence'> = {},
): CoopProblem {
  const levels = checkCoopDifficulty(options.difficulty);
  const split = options.split ?? 'train';
  const wordFraction = options.wordFraction ?? 0.35;
  const precedence = options.precedence === undefined ? DEFAULT_PRECEDENCE : options.precedence;
  const head = Rng.fromSeed(`coop:${seed}`);
  const difficulty = levels[head.int(levels.length)];
  const word = head.next() < wordFraction;
  const wish = precedence === null || word || difficulty < 2 ? null : head.next() < precedence;
  for (let k = 0; ; k++) {
    const c = candidate(Rng.fromSeed(`coop:${seed}:${k}`), difficulty, word);
    if (coopSplitOf(c.steps) === split && (wish === null || c.precedence === wish)) return { ...c, id: `${split}:${seed}`, split };
  }
}

export class CoopEnv extends MathEnv {
  readonly options: Required<Pick<CoopOptions, 'split' | 'wordFraction' | 'precedence'>> & { difficulty: number[] };

  constructor(options: CoopOptions = {}) {
    const split = options.split ?? 'train';
    if (split !== 'train' && split !== 'test')
      envFail('ENV_OPTIONS', `coop-arith: split must be "train" or "test", got ${JSON.stringify(split)}`);
    const wordFraction = options.wordFraction ?? 0.35;
    if (typeof wordFraction !== 'number' || !(wordFraction >= 0 && wordFraction <= 1)) {
      envFail('ENV_OPTIONS', `coop-arith: wordFraction must be a number in [0, 1], got ${JSON.stringify(options.wordFraction)}`);
    }
    const precedence = options.precedence === undefined ? DEFAULT_PRECEDENCE : options.precedence;
    if (precedence !== null && (typeof precedence !== 'number' || !(precedence >= 0 && precedence <= 1))) {
      envFail('ENV_OPTIONS', `coop-arith: precedence must be a number in [0, 1] or null, got ${JSON.stringify(options.precedence)}`);
    }
    const o = { difficulty: checkCoopDifficulty(options.difficulty), split, wordFraction, precedence };
    super('coop-arith', (seed) => coopProblem(seed, o), options.horizon);
    this.options = o;
  }

  /** The full problem (steps included) that reset(seed) draws. */
  problem(seed: number): CoopProblem {
    return coopProblem(seed, this.options);
  }
}

export function createCoopEnv(options: CoopOptions = {}): CoopEnv {
  return new CoopEnv(options);
}

// ---- expressions: parse, evaluate step by step (the way a solver writes its work) ----

export type CoopExpr = { num: number } | { op: CoopOp; left: CoopExpr; right: CoopExpr };

/**
 * Parses an expression of integers, + - * / and parentheses. `leftToRight` ignores operator precedence
 * (every operator binds alike, left to right; parentheses still count): the classic misreading of
 * "17 + 25 * 3" as (17 + 25) * 3.
 */
export function parseCoopExpression(text: string, leftToRight = false): CoopExpr {
  const toks = text.match(/\d+|[-+*/()]/g) ?? [];
  let i = 0;
  const bad = (why: string): never => {
    throw new Error(`parseCoopExpression: ${why} in "${text}"`);
  };
  const atom = (): CoopExpr => {
    const t = toks[i++];
    if (t === '(') {
      const e = expr(0);
      if (toks[i++] !== ')') bad('missing )');
      return e;
    }
    if (t === undefined || !/^\d+$/.test(t)) bad(`unexpected ${t ?? 'end'}`);
    return { num: Number(t) };
  };
  const prec = (op: string): number => (leftToRight ? 1 : op === '*' || op === '/' ? 2 : 1);
  const expr = (min: number): CoopExpr => {
    let left = atom();
    while (i < toks.length && '+-*/'.includes(toks[i]) && prec(toks[i]) >= min) {
      const op = toks[i++] as CoopOp;
      const right = expr(prec(op) + 1);
      left = { op, left, right };
    }
    return left;
  };
  const e = expr(0);
  if (i !== toks.length) bad(`trailing ${toks[i]}`);
  return e;
}

/** One line of worked computation: x op y = result, with where x and y came from. */
export interface CoopLine {
  op: CoopOp;
  x: number;
  y: number;
  result: number;
  /** Whether x / y are results of earlier lines (else numbers from the problem). */
  xIsResult: boolean;
  yIsResult: boolean;
}

/**
 * Evaluates an expression bottom-up, left operand first, one line per operator, in the order a solver
 * writes them. `alter(i, exact)` may change line i's result (an arithmetic slip); later lines use the
 * altered value. Division truncates when it is not exact (only after a slip or a misreading).
 */
export function evaluateCoop(e: CoopExpr, alter?: (line: number, exact: number) => number): { lines: CoopLine[]; value: number } {
  const lines: CoopLine[] = [];
  const go = (n: CoopExpr): number => {
    if ('num' in n) return n.num;
    const x = go(n.left);
    const y = go(n.right);
    const exact = n.op === '+' ? x + y : n.op === '-' ? x - y : n.op === '*' ? x * y : y === 0 ? 0 : Math.trunc(x / y);
    const result = alter ? alter(lines.length, exact) : exact;
    lines.push({ op: n.op, x, y, result, xIsResult: !('num' in n.left), yIsResult: !('num' in n.right) });
    return result;
  };
  const value = go(e);
  return { lines, value };
}
