// Answer checking for math-style environments (MATH-grade): pull the final answer out of a model's text
// (the last complete \boxed{...}, nested braces allowed), normalise away LaTeX dressing (\left( ... \right),
// \text{}, \dfrac and \tfrac, $, spaces, degrees and percent signs, "x = "), and compare with the label:
//   1. exactly as text (case-insensitive), then as exact numbers: integers, decimals, thousands separators
//      (1,234), scientific notation, a/b and \frac{a}{b} as BigInt rationals (0.75 == 3/4, 0.333 != 1/3);
//   2. unions (A \cup B) part by part; tuples and intervals ((1, 2], [a, b)) element-wise with the same
//      brackets; sets (\{1, 2\}) and bare lists (1, 2) in any order;
//   3. without trailing units ("5 cm", "5\text{ cm}^2", "30 degrees", "12 apples": a word after a number);
//   4. as expressions, evaluated exactly where rational and numerically (1e-9 relative) where not
//      (answer-eval.ts): \sqrt{12} == 2\sqrt{3}, \frac{\pi}{2} == \pi/2, x+1 == 1+x; but a gold that is a
//      number wants a number (or scientific notation): 17+25 is not an answer to "compute 17+25";
//   5. mixed numbers (2\frac{1}{2}, "2 1/2") read as 5/2, and a percentage equal to its number or its
//      hundredth (50\% == 50 == 0.5).
// The references: the legacy MARFT math environment (marft/envs/math/math_env.py) judges with Qwen2.5-Math's
// grader.math_equal (numbers within 1e-4 relative, percentages as x, x/100 or x*100, sympy for the rest);
// AReaL's reward uses math_verify (parse + verify: LaTeX to sympy, then numeric and symbolic equality).
// Here the same cases are decided without a computer-algebra system, with a tighter numeric tolerance.

import { PLAIN_WORDS, type Rational, constant, parseExpression, rational, sameExpression, scaled } from './answer-eval.ts';

export type { Rational };

/** The content of the last complete \boxed{...} (or \fbox{...}, or `\boxed 5`) in `text`; null if none. */
export function extractBoxed(text: string): string | null {
  let found: string | null = null;
  const re = /\\(?:boxed|fbox)\b/g;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    let i = m.index + m[0].length;
    while (i < text.length && (text[i] === ' ' || text[i] === '\t')) i++;
    if (text[i] === '{') {
      let depth = 0;
      for (let j = i; j < text.length; j++) {
        const c = text[j];
        if (c === '\\') {
          j++; // an escaped character (\{ or \}) does not count as a brace
          continue;
        }
        if (c === '{') depth++;
        else if (c === '}' && --depth === 0) {
          found = text.slice(i + 1, j);
          break;
        }
      }
    } else if (i > m.index + m[0].length) {
      // `\boxed 5`: TeX takes one token; we take up to whitespace or $.
      const tok = /^[^\s$]+/.exec(text.slice(i));
      if (tok) found = tok[0];
    }
  }
  return found;
}

/** Replaces `\cmd{...}` (one brace group, nested braces allowed) by its content. */
function unwrapCommand(s: string, cmd: string): string {
  const key = `\\${cmd}{`;
  for (let at = s.indexOf(key); at >= 0; at = s.indexOf(key)) {
    let depth = 0;
    let end = -1;
    for (let j = at + key.length - 1; j < s.length; j++) {
      if (s[j] === '{') depth++;
      else if (s[j] === '}' && --depth === 0) {
        end = j;
        break;
      }
    }
    if (end < 0) break; // unbalanced: leave it
    s = s.slice(0, at) + s.slice(at + key.length, end) + s.slice(end + 1);
  }
  return s;
}

/** Whether the first '{' of s closes at its last character ("{5}" yes, "{1}{2}" no). */
function wrapsWhole(s: string): boolean {
  let depth = 0;
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '{') depth++;
    else if (s[i] === '}' && --depth === 0) return i === s.length - 1;
  }
  return false;
}

/** Normalises an answer string for comparison (see the file header for what is removed). */
export function normalizeAnswer(answer: string): string {
  let s = answer.trim();
  // Math delimiters around the whole answer.
  s = s
    .replace(/^\$+|\$+$/g, '')
    .replace(/^\\\(|\\\)$/g, '')
    .replace(/^\\\[|\\\]$/g, '');
  for (const cmd of ['text', 'textbf', 'textit', 'mathrm', 'mathbf', 'mbox', 'boxed']) s = unwrapCommand(s, cmd);
  s = s
    .replace(/\\left\s*|\\right\s*/g, '')
    .replace(/\\[dt]frac/g, '\\frac')
    .replace(/\\frac\s*(\d)\s*(\d)/g, '\\frac{$1}{$2}') // \frac34
    .replace(/\\frac\s*\{([^{}]*)\}\s*(\d)/g, '\\frac{$1}{$2}') // \frac{3}4
    .replace(/\\frac\s*(\d)\s*\{/g, '\\frac{$1}{') // \frac3{4}
    .replace(/\^\s*\{?\\circ\}?/g, '')
    .replace(/\\?%/g, '')
    .replace(/\\\$|\$/g, '')
    .replace(/\\[!,;:]|\\quad|\\qquad|~/g, '')
    .replace(/\\(?:displaystyle|cdotp)/g, '')
    .replace(/\s+/g, '');
  s = s.replace(/\.$/, '');
  while (s.startsWith('{') && s.endsWith('}') && wrapsWhole(s)) s = s.slice(1, -1);
  // "x=5" -> "5" (a short variable name on the left of the only '=').
  const eq = /^[A-Za-z][A-Za-z0-9_]?=([^=]+)$/.exec(s);
  if (eq) s = eq[1];
  return s;
}

const DECIMAL = /^([+-]?)(\d+|\d{1,3}(?:,\d{3})+)?(?:\.(\d+))?(?:e([+-]?\d+))?$/i;

/** Parses a plain number (integer, decimal, thousands separators, exponent) into a rational; null otherwise. */
function parseDecimal(s: string): Rational | null {
  const m = DECIMAL.exec(s);
  if (!m || (m[2] === undefined && m[3] === undefined)) return null;
  const intPart = (m[2] ?? '0').replace(/,/g, '');
  const frac = m[3] ?? '';
  let n = BigInt(intPart + frac);
  let d = 10n ** BigInt(frac.length);
  const exp = m[4] ? Number(m[4]) : 0;
  if (Math.abs(exp) > 400) return null;
  if (exp > 0) n *= 10n ** BigInt(exp);
  else if (exp < 0) d *= 10n ** BigInt(-exp);
  if (m[1] === '-') n = -n;
  return rational(n, d);
}

const div = (a: Rational, b: Rational): Rational | null => rational(a.n * b.d, a.d * b.n);

/** Parses a normalised answer as an exact number: decimals, a/b, \frac{a}{b} with signs; null if not a number. */
export function parseNumber(answer: string): Rational | null {
  const s = answer.replace(/\s+/g, '');
  const dec = parseDecimal(s);
  if (dec) return dec;
  const slash = /^([+-]?[\d.,]+)\/([+-]?[\d.,]+)$/.exec(s);
  if (slash) {
    const a = parseDecimal(slash[1]);
    const b = parseDecimal(slash[2]);
    return a && b ? div(a, b) : null;
  }
  const frac = /^([+-]?)\\frac\{([^{}]+)\}\{([^{}]+)\}$/.exec(s);
  if (frac) {
    const a = parseDecimal(frac[2]);
    const b = parseDecimal(frac[3]);
    const q = a && b ? div(a, b) : null;
    return q && frac[1] === '-' ? { n: -q.n, d: q.d } : q;
  }
  return null;
}

/** Splits "(a,b,c)" / "[a,b)" into its top-level elements; null if not bracketed. */
function splitTuple(s: string): { open: string; close: string; items: string[] } | null {
  if (s.length < 2 || !'([{'.includes(s[0]) || !')]}'.includes(s[s.length - 1])) return null;
  const items: string[] = [];
  let depth = 0;
  let start = 1;
  for (let i = 1; i < s.length - 1; i++) {
    const c = s[i];
    if ('([{'.includes(c)) depth++;
    else if (')]}'.includes(c)) depth--;
    else if (c === ',' && depth === 0) {
      items.push(s.slice(start, i));
      start = i + 1;
    }
    if (depth < 0) return null;
  }
  items.push(s.slice(start, s.length - 1));
  return { open: s[0], close: s[s.length - 1], items };
}

/** Splits s at top-level occurrences of `sep` (outside brackets and braces). */
function splitTop(s: string, sep: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if ('([{'.includes(c)) depth++;
    else if (')]}'.includes(c)) depth--;
    else if (depth === 0 && s.startsWith(sep, i)) {
      parts.push(s.slice(start, i));
      start = i + sep.length;
      i += sep.length - 1;
    }
  }
  parts.push(s.slice(start));
  return parts;
}

/** Whether every item of `xs` pairs with a different item of `ys` (a multiset match). */
function sameMultiset(xs: string[], ys: string[]): boolean {
  if (xs.length !== ys.length) return false;
  const left = [...ys];
  return xs.every((x) => {
    const j = left.findIndex((y) => equalNormalized(x, y));
    if (j < 0) return false;
    left.splice(j, 1);
    return true;
  });
}

/** Two-letter units; longer words after a number are taken as units too (except function names). */
const SHORT_UNITS: ReadonlySet<string> = new Set([
  'cm',
  'mm',
  'km',
  'ft',
  'in',
  'yd',
  'mi',
  'kg',
  'mg',
  'ml',
  'oz',
  'lb',
  'hr',
  'am',
  'pm',
]);
const UNIT = /^(.*?[\d})])([A-Za-z][A-Za-z.]+)(?:\^\{?[23]\}?)?$/;

/** The answer without a trailing unit word after a number ("5cm^2" -> "5"), or null when it has none. */
function withoutUnit(s: string): string | null {
  const m = UNIT.exec(s);
  if (!m) return null;
  const word = m[2].replace(/\./g, '').toLowerCase();
  if (PLAIN_WORDS.includes(word) || (word.length < 3 && !SHORT_UNITS.has(word))) return null;
  const value = parseExpression(m[1]);
  return parseNumber(m[1]) || (value && value.vars.length === 0) ? m[1] : null;
}

function equalNormalized(a: string, b: string, units = true): boolean {
  if (a === b || a.toLowerCase() === b.toLowerCase()) return true;
  const ra = parseNumber(a);
  const rb = parseNumber(b);
  if (ra && rb) return ra.n === rb.n && ra.d === rb.d;
  if (units) {
    const sa = withoutUnit(a);
    const sb = withoutUnit(b);
    if (sa !== null || sb !== null) return equalNormalized(sa ?? a, sb ?? b, false);
  }
  const ua = splitTop(a, '\\cup');
  const ub = splitTop(b, '\\cup');
  if (ua.length > 1 || ub.length > 1) return ua.length === ub.length && ua.every((x, i) => equalNormalized(x, ub[i]));
  const ta = splitTuple(a);
  const tb = splitTuple(b);
  if (
    ta &&
    tb &&
    ta.open === tb.open &&
    ta.close === tb.close &&
    ta.items.length === tb.items.length &&
    (ta.items.length > 1 || ta.open === '{')
  ) {
    return ta.open === '{' ? sameMultiset(ta.items, tb.items) : ta.items.every((x, i) => equalNormalized(x, tb.items[i]));
  }
  const la = ra ? [a] : splitTop(a, ','); // 1,234 is a number, not a list
  const lb = rb ? [b] : splitTop(b, ',');
  if (la.length > 1 || lb.length > 1) return sameMultiset(la, lb);
  if (rb && !numberForm(a)) return false;
  const ea = ra ? constant(ra) : parseExpression(a);
  const eb = rb ? constant(rb) : parseExpression(b);
  return ea !== null && eb !== null && sameExpression(ea, eb);
}

/** Scientific notation: 3\times10^{5}, 1.5\cdot10^-2, 10^6. */
const SCIENTIFIC = /^[+-]?(?:\d+(?:\.\d+)?(?:\\times|\\cdot|\*))?10\^(?:\{[+-]?\d+\}|[+-]?\d)$/;

/**
 * Whether an answer is written as a number: a plain one, a fraction, or scientific notation, possibly in
 * parentheses. A gold that is a number wants one: "17+25" or "\sqrt{16}" is the question, not its answer
 * (a model copying "Compute 17+25" into its box must not be paid), while "\sqrt{16}" as the gold takes 4.
 */
function numberForm(s: string): boolean {
  while (s.startsWith('(') && s.endsWith(')') && splitTuple(s)?.items.length === 1) s = s.slice(1, -1);
  return parseNumber(s) !== null || SCIENTIFIC.test(s);
}

/** A trailing \text{unit} after a value ("4\pi \text{ cm}^2"), removed before normalisation as MATH's _remove_right_units does. */
const TEXT_UNIT = /^(.*\S)\s*\\(?:text|mbox|mathrm)\{\s*[A-Za-z][A-Za-z .]*\}(?:\^\{?[23]\}?)?\s*$/;

const PERCENT = /\\?%\s*(?:\$|\\\)|\\\])?\s*$/;

/** A mixed number "2 1/2" (written with a space, which normalisation removes) as \frac{5}{2}. */
const MIXED_SPACED = /(^|[^\d.\/])(\d+)\s+(\d+)\s*\/\s*(\d+)(?![\d.])/g;
/** A mixed number 2\frac{1}{2} (a proper fraction right after an integer) as \frac{5}{2}. */
const MIXED_FRAC = /(^|[^\d.}^_])(\d+)\\frac\{(\d+)\}\{(\d+)\}/g;

const mixed = (whole: string, pre: string, w: string, n: string, d: string): string => {
  const [W, Nn, Dd] = [BigInt(w), BigInt(n), BigInt(d)];
  return Nn < Dd && Dd > 0n ? `${pre}\\frac{${W * Dd + Nn}}{${Dd}}` : whole;
};

/** The answer as equalNormalized compares it, and whether it ended in a percent sign. */
function prepare(raw: string): { text: string; percent: boolean } {
  const percent = PERCENT.test(raw.trim());
  const unitless = raw.replace(TEXT_UNIT, (whole, value: string) => (/[\d}]|\\pi/.test(value) ? value : whole));
  let s = normalizeAnswer(unitless.replace(MIXED_SPACED, mixed).replace(/\{,\}/g, ','));
  s = s.replace(MIXED_FRAC, mixed).replace(/°/g, '').replace(/\\\{/g, '{').replace(/\\\}/g, '}');
  return { text: s, percent };
}

/** Longer answers compare as text only: it bounds the work of the list and set matching on a model's rambling. */
const MAX_ANSWER = 1000;

/** Whether a predicted answer equals the gold one (see the file header for the steps). */
export function answersEqual(predicted: string | null | undefined, gold: string | number): boolean {
  if (predicted === null || predicted === undefined) return false;
  const a = prepare(predicted);
  const b = prepare(String(gold));
  if (a.text === '' || b.text === '') return false;
  if (a.text.length > MAX_ANSWER || b.text.length > MAX_ANSWER) return a.text === b.text;
  if (equalNormalized(a.text, b.text)) return true;
  if (a.percent === b.percent) return false;
  // One side is a percentage: 50% also equals 0.5.
  if (!numberForm(a.text) || !numberForm(b.text)) return false; // a percentage is a number
  const ea = parseExpression(a.text);
  const eb = parseExpression(b.text);
  if (!ea || !eb) return false;
  const hundredth = rational(1n, 100n)!;
  return a.percent ? sameExpression(scaled(ea, hundredth), eb) : sameExpression(ea, scaled(eb, hundredth));
}

export interface AnswerCheck {
  /** The extracted \boxed{} content, or null when the text has no boxed answer. */
  answer: string | null;
  correct: boolean;
}

/** Extracts the last boxed answer of `text` and compares it with `gold`. */
export function checkAnswer(text: string, gold: string | number): AnswerCheck {
  const answer = extractBoxed(text);
  return { answer, correct: answersEqual(answer, gold) };
}
