// Runs one candidate program against a task's tests in the environment-module sandbox (src/envs/module/
// host.ts over the platform's spawner: a Node worker thread or a browser Worker; no network, no DOM, no
// eval, a heap limit, a time limit). The candidate and a small test runner become one module whose default
// export the guest calls once (`run`); each candidate gets a sandbox of its own, closed afterwards, so
// nothing it changes (prototypes, globals, timers) reaches the next candidate, and the host only ever
// receives JSON text.
// Only the tests' inputs enter the sandbox: the runner answers each call's result as JSON text and the
// expected outputs are compared here, so a candidate can neither read them nor forge the verdict.
// Whatever stops the program (a syntax error, an import, a time-out, the memory limit, a crash) fails
// every test, with the reason.

import { EnvError } from './errors.ts';
import type { SandboxSpawner } from '../common/sandbox.ts';
import { DEFAULT_LIMITS, ModuleHost } from './module/host.ts';

export interface CodeTest {
  /** The arguments of one call of the entry point. */
  input: unknown[];
  /** The value it must return (compared as JSON values; numbers within 1e-9 relative). */
  output: unknown;
}

export interface CodeLimits {
  /** Milliseconds the whole run (load and every test) may take. */
  timeMs: number;
  /** Heap limit of the sandbox in MiB. */
  memoryMb: number;
}

export const DEFAULT_CODE_LIMITS: CodeLimits = { timeMs: 2000, memoryMb: 64 };

export interface TestOutcome {
  pass: boolean;
  /** What went wrong, e.g. "add(2, 3) returned 6, expected 5"; absent when it passed. */
  detail?: string;
}

export interface CodeRun {
  passed: number;
  total: number;
  tests: TestOutcome[];
  /** Why no test could run (syntax, no entry point, time or memory limit, crash); null when they ran. */
  reason: string | null;
}

/** Candidate `export` keywords dropped (a function is what we call, not a module we import). */
const EXPORT = /^(\s*)export\s+(?:default\s+)?(?=(?:async\s+)?function\b|const\b|let\b|var\b|class\b)/gm;

const IDENT = /^[A-Za-z_$][\w$]*$/;

/** Characters of JSON a result may have: a candidate returning a huge value must not flood the host. */
export const MAX_RESULT = 100_000;

/** The module the sandbox loads: the candidate inside a loader function, then the test runner. */
export function candidateModule(code: string, entryPoint: string): string {
  if (!IDENT.test(entryPoint))
    throw new EnvError('ENV_OPTIONS', `code: the entry point ${JSON.stringify(entryPoint)} is not a JavaScript identifier`);
  return [
    // Taken before the candidate runs, so replacing JSON.stringify cannot change how results are sent.
    'const __code_json = JSON.stringify;',
    'function __code_load() {',
    code.replace(EXPORT, '$1'),
    `;return typeof ${entryPoint} === 'function' ? ${entryPoint} : undefined;`,
    '}',
    'export default async function (inputs) {',
    '  const fn = __code_load();',
    `  if (fn === undefined) return { missing: true };`,
    '  const out = [];',
    '  for (const args of inputs) {',
    '    try {',
    '      const v = await fn(...args);',
    "      const j = v === undefined ? undefined : __code_json(v) ?? 'null';",
    `      out.push(j === undefined ? { undef: true } : j.length > ${MAX_RESULT} ? { big: true } : { json: j });`,
    '    } catch (e) {',
    "      let m = 'a thrown value';",
    "      try { m = String(e && typeof e === 'object' && 'message' in e ? e.name + ': ' + e.message : e); } catch {}",
    '      out.push({ threw: m.slice(0, 200) });',
    '    }',
    '  }',
    '  return { out };',
    '}',
  ].join('\n');
}

/** Deep equality of JSON values, numbers within 1e-9 relative (0.1 + 0.2 == 0.3). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (typeof a === 'number' && typeof b === 'number') return a === b || Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return a === b;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) return a.length === (b as unknown[]).length && a.every((x, i) => jsonEqual(x, (b as unknown[])[i]));
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  return (
    ka.length === kb.length &&
    ka.every(
      (k) => Object.prototype.hasOwnProperty.call(b, k) && jsonEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]),
    )
  );
}

const show = (v: unknown): string => {
  const s = JSON.stringify(v) ?? 'undefined';
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
};

const call = (entryPoint: string, input: unknown[]): string => `${entryPoint}(${input.map(show).join(', ')})`;

type RunReply = { missing: true } | { out: Array<{ json?: string; undef?: true; big?: true; threw?: string }> };

function failAll(tests: readonly CodeTest[], reason: string): CodeRun {
  return { passed: 0, total: tests.length, tests: tests.map(() => ({ pass: false, detail: reason })), reason };
}

/** The reason of a sandbox failure in a judge's words (the EnvError's first line, without the module label). */
function reasonOf(e: EnvError): string {
  // The module's line N is the candidate's line N - 2 (the constant and the loader's header come first).
  const first = e.message
    .split('\n')[0]
    .replace(/^environment module "[^"]*", line (\d+)/, (_, n: string) => `line ${Number(n) - 2}`)
    .replace(/^environment module "[^"]*", [^:]*: /, '');
  if (e.code === 'ENV_MODULE_TIMEOUT') return `time limit: ${first}`;
  if (e.code === 'ENV_MODULE_MEMORY') return `memory limit: ${first}`;
  if (e.code === 'ENV_MODULE_SYNTAX') return `does not load: ${first}`;
  return `crashed: ${first}`;
}

/**
 * Candidates in sandboxes at once, per runner: a rollout steps all its episodes together, and each
 * candidate is a worker with a heap of its own, so a batch of 128 would otherwise start 128 workers.
 */
export const PARALLEL_RUNS = 4;

/** Runs candidates on the platform's spawner, PARALLEL_RUNS at a time (a session holds one: its Envs). */
export class CodeRunner {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  /** `spawner` null: no sandbox here; every run fails ENV_MODULE_UNAVAILABLE. */
  constructor(private readonly spawner: SandboxSpawner | null) {}

  /** Runs `code`'s `entryPoint` on every test in a fresh sandbox; see the file header. */
  run(code: string, entryPoint: string, tests: readonly CodeTest[], limits: CodeLimits = DEFAULT_CODE_LIMITS): Promise<CodeRun> {
    return this.inTurn(() => this.runAlone(code, entryPoint, tests, limits));
  }

  private async inTurn<T>(f: () => Promise<T>): Promise<T> {
    if (this.running >= PARALLEL_RUNS) await new Promise<void>((go) => this.waiting.push(go));
    this.running++;
    try {
      return await f();
    } finally {
      this.running--;
      this.waiting.shift()?.();
    }
  }

  private async runAlone(code: string, entryPoint: string, tests: readonly CodeTest[], limits: CodeLimits): Promise<CodeRun> {
    const host = new ModuleHost(this.spawner, `candidate ${entryPoint}`, candidateModule(code, entryPoint), {
      ...DEFAULT_LIMITS,
      callMs: limits.timeMs,
      memoryMb: limits.memoryMb,
    });
    let reply: RunReply;
    try {
      reply = (await host.call(
        'run',
        { input: tests.map((t) => t.input) },
        { module: `candidate ${entryPoint}`, call: 'the tests' },
      )) as RunReply;
    } catch (e) {
      if (!(e instanceof EnvError) || e.code === 'ENV_MODULE_UNAVAILABLE') throw e;
      return failAll(tests, reasonOf(e));
    } finally {
      host.close();
    }
    return verdict(entryPoint, tests, reply);
  }
}

/** The candidate's outcome on each test from the runner's reply. */
function verdict(entryPoint: string, tests: readonly CodeTest[], reply: RunReply): CodeRun {
  if (!reply || typeof reply !== 'object') return failAll(tests, 'crashed: the test runner gave no result');
  if ('missing' in reply) return failAll(tests, `no function named ${entryPoint} is defined`);
  const out = Array.isArray(reply.out) ? reply.out : [];
  const outcomes = tests.map((t, i): TestOutcome => {
    const r = out[i];
    if (!r || typeof r !== 'object') return { pass: false, detail: `${call(entryPoint, t.input)} gave no result` };
    if (typeof r.threw === 'string') return { pass: false, detail: `${call(entryPoint, t.input)} threw ${r.threw}` };
    if (r.big)
      return { pass: false, detail: `${call(entryPoint, t.input)} returned a value of more than ${MAX_RESULT} characters of JSON` };
    if (r.undef) return { pass: false, detail: `${call(entryPoint, t.input)} returned undefined, expected ${show(t.output)}` };
    let v: unknown;
    try {
      v = JSON.parse(String(r.json));
    } catch {
      return { pass: false, detail: `${call(entryPoint, t.input)} returned a value that is not JSON` };
    }
    return jsonEqual(v, t.output)
      ? { pass: true }
      : { pass: false, detail: `${call(entryPoint, t.input)} returned ${show(v)}, expected ${show(t.output)}` };
  });
  return { passed: outcomes.filter((o) => o.pass).length, total: tests.length, tests: outcomes, reason: null };
}
