// Answer checking for math-style environments: pull the final answer out of a model's text (the last
// complete \boxed{...}, nested braces allowed), normalise away LaTeX dressing (\left( ... \right),
// \text{}, \dfrac, $, spaces, degrees and percent signs, "x = "), and compare with the label exactly,
// then as numbers: integers, decimals, negatives, thousands separators (1,234), scientific notation,
// fractions a/b and \frac{a}{b} (\dfrac, \tfrac, \frac34), all as exact rationals with BigInt, so
// 0.75 == 3/4 == \frac{3}{4} and 0.333 != 1/3. Tuples and intervals ((1, 2), [a, b]) compare element-wise.
// Deliberately small: no symbolic algebra (x+1 vs 1+x are different), in the spirit of the MATH
// normaliser rather than math-verify.

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
  s = s.replace(/^\$+|\$+$/g, '').replace(/^\\\(|\\\)$/g, '').replace(/^\\\[|\\\]$/g, '');
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

/** An exact rational n/d with d > 0, reduced. */
export interface Rational {
  n: bigint;
  d: bigint;
}

const gcd = (a: bigint, b: bigint): bigint => {
  a = a < 0n ? -a : a;
  b = b < 0n ? -b : b;
  while (b) [a, b] = [b, a % b];
  return a;
};

function rational(n: bigint, d: bigint): Rational | null {
  if (d === 0n) return null;
  if (d < 0n) [n, d] = [-n, -d];
  const g = gcd(n, d) || 1n;
  return { n: n / g, d: d / g };
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

function equalNormalized(a: string, b: string): boolean {
  if (a === b || a.toLowerCase() === b.toLowerCase()) return true;
  const ra = parseNumber(a);
  const rb = parseNumber(b);
  if (ra && rb) return ra.n === rb.n && ra.d === rb.d;
  const ta = splitTuple(a);
  const tb = splitTuple(b);
  if (ta && tb && ta.open === tb.open && ta.close === tb.close && ta.items.length === tb.items.length && ta.items.length > 1) {
    return ta.items.every((x, i) => equalNormalized(x, tb.items[i]));
  }
  return false;
}

/** Whether a predicted answer equals the gold one after normalisation (exact text, then exact number, then element-wise). */
export function answersEqual(predicted: string | null | undefined, gold: string | number): boolean {
  if (predicted === null || predicted === undefined) return false;
  const a = normalizeAnswer(predicted);
  const b = normalizeAnswer(String(gold));
  if (a === '' || b === '') return false;
  return equalNormalized(a, b);
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
