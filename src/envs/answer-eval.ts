// Exact evaluation of a normalised math answer (answer.ts's normalizeAnswer output), for the equivalence
// step of the answer checker: a small parser of LaTeX and plain expressions (+ - * / ^, \cdot, \times,
// \div, implicit products, braces and parentheses, \frac, \sqrt, \sqrt[n], \pi, \infty, \sin \cos \tan
// \ln \exp, single-letter variables) into a tree, evaluated as exact rationals (BigInt) wherever the
// value is rational (so 0.5 == 1/2 and 0.333 != 1/3 exactly) and as floats where it is not (sqrt, pi),
// compared then within a tight relative tolerance (1e-9). Expressions with variables are compared at
// three fixed rational points (exact for polynomials and rational functions: x+1 == 1+x, 2(x+1) == 2x+2).
// Deliberately small: no equation solving, no simplification beyond evaluation.

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

export function rational(n: bigint, d: bigint): Rational | null {
  if (d === 0n) return null;
  if (d < 0n) [n, d] = [-n, -d];
  const g = gcd(n, d) || 1n;
  return { n: n / g, d: d / g };
}

/** A value: exact when rational (q), always approximated as a float (x). */
interface Value {
  q: Rational | null;
  x: number;
}

type Node =
  | { k: 'num'; q: Rational }
  | { k: 'const'; x: number }
  | { k: 'var'; name: string }
  | { k: 'neg'; a: Node }
  | { k: 'bin'; op: '+' | '-' | '*' | '/' | '^'; a: Node; b: Node }
  | { k: 'fn'; name: string; a: Node }
  | { k: 'root'; n: Node; a: Node };

const toFloat = (q: Rational): number => {
  // Scale big rationals down before dividing so 10^400 / 10^399 stays finite.
  const n = Number(q.n);
  const d = Number(q.d);
  if (Number.isFinite(n) && Number.isFinite(d)) return n / d;
  const shift = BigInt(Math.max(q.n.toString().length, q.d.toString().length) - 300);
  return Number(q.n / 10n ** shift) / Number(q.d / 10n ** shift);
};

const exact = (q: Rational | null): Value | null => (q ? { q, x: toFloat(q) } : null);
const approx = (x: number): Value => ({ q: null, x });

/** The exact k-th root of a non-negative bigint, or null when it is not a perfect power. */
function intRoot(v: bigint, k: number): bigint | null {
  if (v < 0n) return null;
  if (v < 2n) return v;
  let r = BigInt(Math.round(Math.pow(Number(v), 1 / k)));
  for (const c of [r - 1n, r, r + 1n]) if (c >= 0n && c ** BigInt(k) === v) return c;
  // Newton for values past float precision.
  r = 1n << BigInt(Math.ceil(v.toString(2).length / k));
  for (;;) {
    const next = ((BigInt(k) - 1n) * r + v / r ** (BigInt(k) - 1n)) / BigInt(k);
    if (next >= r) break;
    r = next;
  }
  return r ** BigInt(k) === v ? r : null;
}

function power(a: Value, b: Value): Value | null {
  if (a.q && b.q && b.q.d === 1n && b.q.n >= -64n && b.q.n <= 64n) {
    const e = b.q.n;
    if (e >= 0n) return exact(rational(a.q.n ** e, a.q.d ** e));
    return a.q.n === 0n ? null : exact(rational(a.q.d ** -e, a.q.n ** -e));
  }
  if (a.q && b.q && b.q.d <= 16n && b.q.n >= -64n && b.q.n <= 64n) {
    const k = Number(b.q.d);
    const sign = a.q.n < 0n && k % 2 === 1 ? -1n : 1n;
    const rn = intRoot(sign * a.q.n, k);
    const rd = intRoot(a.q.d, k);
    if (rn !== null && rd !== null) return power(exact({ n: sign * rn, d: rd })!, exact({ n: b.q.n, d: 1n })!);
  }
  const x = Math.pow(a.x, b.x);
  return Number.isNaN(x) ? null : approx(x);
}

const FUNCS: Record<string, (x: number) => number> = { sin: Math.sin, cos: Math.cos, tan: Math.tan, ln: Math.log, exp: Math.exp };

function evaluate(n: Node, vars: ReadonlyMap<string, Rational>): Value | null {
  switch (n.k) {
    case 'num':
      return exact(n.q);
    case 'const':
      return approx(n.x);
    case 'var':
      return exact(vars.get(n.name) ?? null);
    case 'neg': {
      const a = evaluate(n.a, vars);
      return a && { q: a.q && { n: -a.q.n, d: a.q.d }, x: -a.x };
    }
    case 'fn': {
      const a = evaluate(n.a, vars);
      if (!a) return null;
      if (n.name === 'sqrt') return power(a, exact({ n: 1n, d: 2n })!);
      if (a.q && a.q.n === 0n && (n.name === 'sin' || n.name === 'tan')) return exact({ n: 0n, d: 1n });
      if (a.q && a.q.n === 0n && (n.name === 'cos' || n.name === 'exp')) return exact({ n: 1n, d: 1n });
      if (a.q && a.q.n === a.q.d && n.name === 'ln') return exact({ n: 0n, d: 1n });
      const x = FUNCS[n.name](a.x);
      return Number.isNaN(x) ? null : approx(x);
    }
    case 'root': {
      const k = evaluate(n.n, vars);
      const a = evaluate(n.a, vars);
      if (!k || !a || !k.q || k.q.n === 0n) return null;
      return power(a, exact(rational(k.q.d, k.q.n))!);
    }
    case 'bin': {
      const a = evaluate(n.a, vars);
      const b = evaluate(n.b, vars);
      if (!a || !b) return null;
      if (n.op === '^') return power(a, b);
      if (a.q && b.q) {
        const { n: an, d: ad } = a.q;
        const { n: bn, d: bd } = b.q;
        if (n.op === '+') return exact(rational(an * bd + bn * ad, ad * bd));
        if (n.op === '-') return exact(rational(an * bd - bn * ad, ad * bd));
        if (n.op === '*') return exact(rational(an * bn, ad * bd));
        return exact(rational(an * bd, ad * bn));
      }
      const x = n.op === '+' ? a.x + b.x : n.op === '-' ? a.x - b.x : n.op === '*' ? a.x * b.x : a.x / b.x;
      return Number.isNaN(x) ? null : approx(x);
    }
  }
}

// ---- parsing ----

const COMMANDS = ['frac', 'sqrt', 'pi', 'infty', 'cdot', 'times', 'div', 'sin', 'cos', 'tan', 'ln', 'exp'];
/** Words read as their command in plain answers ("sqrt(2)", "2pi"). */
export const PLAIN_WORDS = ['sqrt', 'infty', 'inf', 'sin', 'cos', 'tan', 'exp', 'pi', 'ln'];
const PLAIN_WORD = new RegExp(PLAIN_WORDS.join('|'), 'g');

const NUMBER = /\d+\.?\d*|\.\d+/y;

class Parser {
  private i = 0;
  readonly vars = new Set<string>();
  constructor(private readonly s: string) {}

  parse(): Node | null {
    const n = this.expr();
    return n && this.i === this.s.length ? n : null;
  }

  private peek(): string {
    return this.s[this.i] ?? '';
  }

  /** The command at the cursor (longest known name after '\', or a plain word), without consuming it. */
  private command(): { name: string; len: number } | null {
    const { s, i } = this;
    if (s[i] === '\\') {
      const name = COMMANDS.filter((c) => s.startsWith(c, i + 1)).sort((a, b) => b.length - a.length)[0];
      return name ? { name, len: name.length + 1 } : null;
    }
    const word = PLAIN_WORDS.filter((w) => s.startsWith(w, i)).sort((a, b) => b.length - a.length)[0];
    return word ? { name: word === 'inf' ? 'infty' : word, len: word.length } : null;
  }

  private expr(): Node | null {
    let a = this.term();
    while (a && (this.peek() === '+' || this.peek() === '-')) {
      const op = this.s[this.i++] as '+' | '-';
      const b = this.term();
      if (!b) return null;
      a = { k: 'bin', op, a, b };
    }
    return a;
  }

  private term(): Node | null {
    let a = this.unary();
    while (a) {
      const c = this.command();
      let op: '*' | '/' | null = null;
      if (this.peek() === '*') {
        this.i++;
        op = '*';
      } else if (this.peek() === '/') {
        this.i++;
        op = '/';
      } else if (c && (c.name === 'cdot' || c.name === 'times')) {
        this.i += c.len;
        op = '*';
      } else if (c && c.name === 'div') {
        this.i += c.len;
        op = '/';
      } else if (this.startsAtom()) op = '*'; // implicit product: 2x, 2\pi, (1)(2)
      if (!op) break;
      const b = this.unary();
      if (!b) return null;
      a = { k: 'bin', op, a, b };
    }
    return a;
  }

  private startsAtom(): boolean {
    const c = this.peek();
    if (/[0-9.({A-Za-z]/.test(c)) return true;
    const cmd = this.command();
    return cmd !== null && !['cdot', 'times', 'div'].includes(cmd.name);
  }

  private unary(): Node | null {
    if (this.peek() === '-') {
      this.i++;
      const a = this.unary();
      return a && { k: 'neg', a };
    }
    if (this.peek() === '+') {
      this.i++;
      return this.unary();
    }
    return this.pow();
  }

  private pow(): Node | null {
    const a = this.atom();
    if (!a || this.peek() !== '^') return a;
    this.i++;
    // TeX: ^{...} is a group, ^2 one token; a sign may lead the exponent (10^-3).
    let b: Node | null;
    if (this.peek() === '-') {
      this.i++;
      const t = this.tokenArg();
      b = t && { k: 'neg', a: t };
    } else b = this.tokenArg();
    return b && { k: 'bin', op: '^', a, b };
  }

  /** One TeX token as an argument: a digit, a letter, a command atom, or a group. */
  private tokenArg(): Node | null {
    const c = this.peek();
    let n: Node | null = null;
    if (c === '{') n = this.group();
    else if (/[0-9]/.test(c)) {
      this.i++;
      n = { k: 'num', q: { n: BigInt(c), d: 1n } };
    } else n = this.atom();
    return n;
  }

  private group(): Node | null {
    if (this.peek() !== '{') return null;
    this.i++;
    const n = this.expr();
    if (!n || this.peek() !== '}') return null;
    this.i++;
    return n;
  }

  private atom(): Node | null {
    const c = this.peek();
    if (c === '(' || c === '[') {
      this.i++;
      const n = this.expr();
      if (!n || this.peek() !== (c === '(' ? ')' : ']')) return null;
      this.i++;
      return n;
    }
    if (c === '{') return this.group();
    NUMBER.lastIndex = this.i;
    const num = NUMBER.exec(this.s);
    if (num) {
      this.i += num[0].length;
      const [int, frac = ''] = num[0].split('.');
      return { k: 'num', q: rational(BigInt((int || '0') + frac), 10n ** BigInt(frac.length))! };
    }
    const cmd = this.command();
    if (cmd) {
      this.i += cmd.len;
      if (cmd.name === 'pi') return { k: 'const', x: Math.PI };
      if (cmd.name === 'infty') return { k: 'const', x: Infinity };
      if (cmd.name === 'frac') {
        const a = this.tokenArg();
        const b = a && this.tokenArg();
        return b && { k: 'bin', op: '/', a: a, b };
      }
      if (cmd.name === 'sqrt') {
        if (this.peek() === '[') {
          this.i++;
          const k = this.expr();
          if (!k || this.peek() !== ']') return null;
          this.i++;
          const a = this.tokenArg();
          return a && { k: 'root', n: k, a };
        }
        const a = this.peek() === '(' ? this.atom() : this.tokenArg();
        return a && { k: 'fn', name: 'sqrt', a };
      }
      if (cmd.name in FUNCS) {
        const a = this.peek() === '(' || this.peek() === '{' ? this.atom() : this.pow();
        return a && { k: 'fn', name: cmd.name, a };
      }
      return null;
    }
    if (/[A-Za-z]/.test(c)) {
      this.i++;
      this.vars.add(c);
      return { k: 'var', name: c };
    }
    return null;
  }
}

/** Longer answers are compared as text only (a MATH answer is short; this bounds the parser's recursion). */
export const MAX_EXPRESSION = 400;

export interface Expression {
  node: Node;
  /** The single-letter variables it uses, sorted. */
  vars: string[];
}

/**
 * Parses a normalised answer as an expression; null when it is not one (text, a tuple, an equation, an
 * unknown command). Words of three letters or more that are not known functions, or an answer of letters
 * only ("no"), make it text.
 */
export function parseExpression(s: string): Expression | null {
  if (!s || s.length > MAX_EXPRESSION || /\\[A-Za-z]+/.test(s.replace(new RegExp(`\\\\(?:${COMMANDS.join('|')})`, 'g'), ''))) return null;
  const words = s.replace(/\\[A-Za-z]+/g, ' ').replace(PLAIN_WORD, ' ');
  if (/[A-Za-z]{3,}/.test(words) || (/^[A-Za-z]{2,}$/.test(s) && !PLAIN_WORDS.includes(s))) return null; // "no" is a word, not n*o
  const p = new Parser(s);
  const node = p.parse();
  return node ? { node, vars: [...p.vars].sort() } : null;
}

/** Variable values at the comparison points: variable i at point t is (N[t] + 10i) / D[t], never an integer for i < 17. */
const N = [223n, 151n, 47n];
const D = [97n, 89n, 83n];
const POINTS = [0, 1, 2].map(
  (t) =>
    (i: number): Rational =>
      rational(N[t] + 10n * BigInt(i), D[t])!,
);

const close = (a: number, b: number): boolean =>
  a === b || (Number.isFinite(a) && Number.isFinite(b) && Math.abs(a - b) <= 1e-9 * Math.max(Math.abs(a), Math.abs(b)));

/** Whether two values agree: exactly when both are rational, else within 1e-9 relative. */
function sameValue(a: Value, b: Value): boolean {
  if (a.q && b.q) return a.q.n === b.q.n && a.q.d === b.q.d;
  return close(a.x, b.x);
}

/** Whether two expressions have the same value (at every comparison point when they use variables). */
export function sameExpression(a: Expression, b: Expression): boolean {
  if (a.vars.join() !== b.vars.join()) return false;
  const trials = a.vars.length ? POINTS : POINTS.slice(0, 1);
  return trials.every((point) => {
    const vars = new Map(a.vars.map((v, i) => [v, point(i)]));
    const va = evaluate(a.node, vars);
    const vb = evaluate(b.node, vars);
    return va !== null && vb !== null && sameValue(va, vb);
  });
}

/** A number as an expression (for answers parsed as numbers first, e.g. with thousands separators). */
export const constant = (q: Rational): Expression => ({ node: { k: 'num', q }, vars: [] });

/** The expression's value scaled by `k` (percent: a% == a/100), as a new expression. */
export function scaled(e: Expression, k: Rational): Expression {
  return { node: { k: 'bin', op: '*', a: e.node, b: { k: 'num', q: k } }, vars: e.vars };
}
