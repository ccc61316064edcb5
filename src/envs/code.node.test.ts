// The code environment with real worker threads (the Node sandbox, src/platform/sandbox/node.ts): every
// built-in task's reference solution passes its own tests and wrong ones do not; the reward is the share
// of tests passed; answer extraction; the JSONL format's errors; and hostile candidates (an endless loop,
// a huge allocation, the network, node modules, the host's realm, prototype pollution) each get reward 0
// and a reason while the host and the next candidate are unaffected.

import { describe, expect, it } from 'vitest';
import { nodeSandbox } from '../platform/sandbox/node.ts';
import { CodeRunner, PARALLEL_RUNS } from './code-run.ts';
import { BUILTIN_CODE_TASKS } from './code-tasks.ts';
import { createCodeEnv, extractCode, parseCodeTasks } from './code.ts';
import { EnvError } from './errors.ts';
import { createEnv, listEnvs } from './registry.ts';
import { validateConfig } from '../config/run-config.ts';

/** Candidates run in worker threads (each run is a sandbox of its own, closed after it). */
const runner = new CodeRunner(nodeSandbox);

const ADD = BUILTIN_CODE_TASKS.find((t) => t.id === 'add')!;
const add = (code: string) => runner.run(code, 'add', ADD.tests, { timeMs: 1500, memoryMb: 32 });

/** Runs `f` over `items`, `n` at a time (each run is a worker of its own; the machine has few cores). */
async function pool<T, R>(items: readonly T[], n: number, f: (x: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await f(items[i]);
      }
    }),
  );
  return out;
}

describe('built-in code tasks', () => {
  it('are records of the JSONL dataset format with distinct ids, prompts that name the function, and tests that separate outputs', () => {
    const records = BUILTIN_CODE_TASKS.map(({ solution: _, ...task }) => task);
    expect(parseCodeTasks(records.map((r) => JSON.stringify(r)).join('\n'))).toEqual(records);
    expect(new Set(BUILTIN_CODE_TASKS.map((t) => t.id)).size).toBe(BUILTIN_CODE_TASKS.length);
    for (const t of BUILTIN_CODE_TASKS) {
      expect(t.prompt, t.id).toContain(`${t.entryPoint}(`);
      expect(t.tests.length, t.id).toBeGreaterThanOrEqual(3);
      expect(new Set(t.tests.map((x) => JSON.stringify(x.output))).size, t.id).toBeGreaterThanOrEqual(2);
    }
  });

  it('every reference solution passes all its tests; a constant answer and a no-op do not', async () => {
    const runs = await pool(BUILTIN_CODE_TASKS, 2, async (t) => {
      const constant = `function ${t.entryPoint}() { return ${JSON.stringify(t.tests[0].output)}; }`;
      return {
        id: t.id,
        ref: await runner.run(t.solution, t.entryPoint, t.tests),
        constant: await runner.run(constant, t.entryPoint, t.tests),
        noop: await runner.run(`function ${t.entryPoint}() {}`, t.entryPoint, t.tests),
      };
    });
    for (const r of runs) {
      expect({ id: r.id, passed: r.ref.passed, details: r.ref.tests.map((x) => x.detail).filter(Boolean) }).toEqual({
        id: r.id,
        passed: r.ref.total,
        details: [],
      });
      expect(r.constant.passed, r.id).toBeLessThan(r.constant.total);
      expect(r.noop.passed, r.id).toBe(0);
    }
  });
});

describe('running a candidate', () => {
  it('scores the share of tests passed and names the first failure', async () => {
    const wrong = await add('function add(a, b) { return a > 0 ? a + b : a - b; }'); // right only when a > 0 or b = 0
    expect(wrong.passed).toBe(2); // add(2,3)=5 and add(0.5,0.25)=0.75; add(-4,4) gives -8, add(-7,-8) gives 1
    expect(wrong.total).toBe(4);
    expect(wrong.reason).toBeNull();
    expect(wrong.tests[1].detail).toBe('add(-4, 4) returned -8, expected 0');
    const threw = await add('function add() { throw new TypeError("nope"); }');
    expect(threw.tests[0].detail).toBe('add(2, 3) threw TypeError: nope');
    const missing = await add('function plus(a, b) { return a + b; }');
    expect(missing).toMatchObject({ passed: 0, reason: 'no function named add is defined' });
    const exported = await add('export default function add(a, b) {\n  return a + b;\n}');
    expect(exported.passed).toBe(4);
    const arrow = await add('const add = (a, b) => a + b;');
    expect(arrow.passed).toBe(4);
  });

  it('runs at most PARALLEL_RUNS candidates at once, and every one of a larger batch', async () => {
    let live = 0;
    let peak = 0;
    const counted = new CodeRunner((body, name, limits, events) => {
      peak = Math.max(peak, ++live);
      const box = nodeSandbox(body, name, limits, events);
      return {
        send: box.send,
        terminate: () => {
          live--;
          box.terminate();
        },
      };
    });
    const codes = Array.from({ length: PARALLEL_RUNS * 2 + 1 }, (_, i) => `function add(a, b) { return a + b + ${i % 2}; }`);
    const runs = await Promise.all(codes.map((c) => counted.run(c, 'add', ADD.tests, { timeMs: 1500, memoryMb: 32 })));
    expect(runs.map((r) => r.passed)).toEqual(codes.map((_, i) => (i % 2 ? 0 : 4)));
    expect(peak).toBe(PARALLEL_RUNS);
    expect(live).toBe(0);
  });

  it("reports a syntax error with the candidate's own line", async () => {
    const r = await add('function add(a, b) {\n  return a + ;\n}');
    expect(r.passed).toBe(0);
    expect(r.reason).toMatch(/^does not load: line 2/);
  });
});

describe('hostile candidates: reward 0, a reason, the host unaffected', () => {
  const hostile: Array<[string, string, RegExp]> = [
    ['an endless loop', 'function add(a, b) { while (true) {} }', /^time limit: no answer within 1500 ms/],
    ['an endless loop at load', 'while (true) {}\nfunction add(a, b) { return a + b; }', /^time limit/],
    [
      'a huge allocation',
      'function add(a, b) { const xs = []; for (;;) xs.push(new Array(1e6).fill(a)); }',
      /^memory limit: it ran out of its 32 MiB heap/,
    ],
    ['a huge typed array', 'function add(a, b) { const x = new Float64Array(1e9); return a + b + x[0]; }', /past the sandbox memory limit/],
    ['fetch', 'function add(a, b) { fetch("http://example.com"); return a + b; }', /fetch is not defined/],
    ['XMLHttpRequest', 'function add(a, b) { new XMLHttpRequest(); return a + b; }', /XMLHttpRequest is not defined/],
    ['WebSocket', 'function add(a, b) { new WebSocket("ws://example.com"); return a + b; }', /WebSocket is not defined/],
    ['require', 'function add(a, b) { require("node:fs").writeFileSync("/tmp/x", "1"); return a + b; }', /require is not defined/],
    ['process', 'function add(a, b) { process.exit(1); return a + b; }', /process is not defined/],
    ['an import', 'import fs from "node:fs";\nfunction add(a, b) { return a + b; }', /^does not load: .*imports are not allowed/],
    [
      'a dynamic import',
      'async function add(a, b) { await import("node:fs"); return a + b; }',
      /^does not load: .*import\(\) is not allowed/,
    ],
    ['the DOM', 'function add(a, b) { document.body.innerHTML = "x"; return a + b; }', /document is not defined/],
    [
      'the host realm through a constructor',
      'function add(a, b) { return add.constructor("return process")().pid; }',
      /Code generation from strings disallowed|EvalError/,
    ],
    ['a huge result', 'function add(a, b) { return "x".repeat(200000); }', /returned a value of more than 100000 characters of JSON/],
    ['eval', 'function add(a, b) { return eval("a + b"); }', /Code generation from strings disallowed|EvalError/],
    [
      'the classic vm escape',
      'function add(a, b) { return globalThis.constructor.constructor("return process")().exit(1); }',
      /Code generation from strings disallowed|EvalError/,
    ],
    [
      'globalThis.process',
      'function add(a, b) { globalThis.process.exit(1); return a + b; }',
      /TypeError: Cannot read properties of undefined \(reading 'exit'\)/,
    ],
    [
      'WebAssembly',
      'function add(a, b) { new WebAssembly.Module(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0])); return a + b; }',
      /WebAssembly|Wasm code generation disallowed|not defined/,
    ],
  ];
  for (const [what, code, reason] of hostile) {
    it(what, async () => {
      const r = await add(code);
      expect(r.passed).toBe(0);
      expect(r.reason ?? r.tests[0].detail).toMatch(reason);
    });
  }

  it('prototype pollution stays in its sandbox: not in the host, not in the next candidate', async () => {
    const polluter = `Object.prototype.polluted = 'yes';
Array.prototype.includes = function () { return true; };
globalThis.leaked = 'yes';
JSON.stringify = () => '{"out":[]}';
function add(a, b) { return a + b + ({}).polluted.length - 3; }`;
    const r = await add(polluter); // right within its own realm; the replaced JSON.stringify cannot change what is sent
    expect(r.passed).toBe(4);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect([1, 2].includes(3)).toBe(false);
    expect((globalThis as Record<string, unknown>).leaked).toBeUndefined();
    expect(JSON.stringify({ a: 1 })).toBe('{"a":1}');
    const next = await add('function add(a, b) { return ({}).polluted === undefined && ![1].includes(2) ? a + b : 1000; }');
    expect(next.passed).toBe(4);
  });

  it('a forged reply (Object.prototype.toJSON) carries no outputs: reward 0, each test says why', async () => {
    const forger = `Object.defineProperty(Object.prototype, 'toJSON', { value: () => ({ kind: 'reply', id: 1, ok: true, value: '{"out":[]}' }), configurable: true });
function add(a, b) { return a + b; }`;
    const r = await add(forger);
    expect(r.passed).toBe(0);
    expect(r.tests[0].detail).toBe('add(2, 3) gave no result'); // the expected outputs never enter the sandbox
    expect(({} as Record<string, unknown>).toJSON).toBeUndefined();
    expect((await add('function add(a, b) { return a + b; }')).passed).toBe(4);
  });
});

describe('the code environment', () => {
  it('is registered, and draws tasks by seed with the answer format in the prompt', () => {
    expect(listEnvs().map((e) => e.name)).toContain('code');
    const env = createCodeEnv(runner, { split: 'all' });
    const a = env.reset(3);
    expect(env.reset(3)).toEqual(a);
    expect(a.observation.task).toContain('```js');
    expect(createEnv('code', {}).name).toBe('code');
    const train = createCodeEnv(runner).tasks.map((t) => t.id);
    const test = createCodeEnv(runner, { split: 'test' }).tasks.map((t) => t.id);
    expect(train.length + test.length).toBe(BUILTIN_CODE_TASKS.length);
    expect(test.length).toBe(Math.round(BUILTIN_CODE_TASKS.length * 0.2));
    expect(train.filter((id) => test.includes(id))).toEqual([]);
  });

  it('rewards the team answer with the pass rate (or all-or-nothing), multi-turn with feedback', async () => {
    const data = JSON.stringify({
      id: 'sq',
      prompt: 'Write square(x).',
      entryPoint: 'square',
      tests: [
        { input: [2], output: 4 },
        { input: [-3], output: 9 },
        { input: [0], output: 0 },
      ],
    });
    const env = createCodeEnv(runner, { data, split: 'all', horizon: 2 });
    env.reset(0);
    const half = '```js\nfunction square(x) { return x > 0 ? x * x : x; }\n```';
    const s1 = await env.step({ planner: 'use x*x', coder: `Here:\n${half}` }, { answerRoles: ['coder'] });
    expect(s1).toMatchObject({ teamReward: 2 / 3, correct: false, done: false, rewards: { planner: 2 / 3, coder: 2 / 3 } });
    expect(s1.feedback).toBe('judge: 2 of 3 tests passed; first failure: square(-3) returned -3, expected 9');
    const s2 = await env.step({ planner: 'x', coder: '```javascript\nconst square = (x) => x * x;\n```' }, { answerRoles: ['coder'] });
    expect(s2).toMatchObject({ teamReward: 1, correct: true, done: true, feedback: 'judge: all 3 tests passed' });
    const strict = createCodeEnv(runner, { data, split: 'all', reward: 'all_pass' });
    strict.reset(0);
    const strictStep = await strict.step({ coder: half });
    expect(strictStep.teamReward).toBe(0);
    // each answering role's own pass rate (the coder step helper reads it), whatever the team reward rule
    expect(strictStep.answers.coder).toMatchObject({ correct: false, score: 2 / 3 });
    const none = createCodeEnv(runner, { data, split: 'all', horizon: 1 });
    none.reset(0);
    expect(await none.step({ coder: 'x * x' })).toMatchObject({
      teamReward: 0,
      done: true,
      info: { reason: 'no code block' },
      answers: { coder: { answer: null, score: 0 } },
    });
  });

  it('gives a hostile answer reward 0 with the reason in the feedback', async () => {
    const env = createCodeEnv(runner, { split: 'all', timeLimitMs: 500, horizon: 1 });
    env.reset(0);
    const s = await env.step({ coder: '```js\nwhile (true) {}\n```' });
    expect(s).toMatchObject({
      teamReward: 0,
      correct: false,
      done: true,
      info: {
        passed: 0,
        reason: 'time limit: no answer within 500 ms (an endless loop, or a promise that never settles); the sandbox was stopped',
      },
    });
    expect(s.feedback).toBe(`judge: no test passed (${s.info.reason})`);
  });

  it('extracts the last js block, else the last block', () => {
    expect(extractCode('a\n```js\nA\n```\nb\n```python\nB\n```')).toBe('A\n');
    expect(extractCode('```\nA\n```\n```ts\nB\n```')).toBe('B\n');
    expect(extractCode('```js\nA\n```\n```JavaScript\nC\n```')).toBe('C\n');
    expect(extractCode('function f() {}')).toBeNull();
  });

  it('names malformed tasks and options', () => {
    expect(parseCodeTasks('{"prompt":"p","entry_point":"f","tests":[{"input":[1],"output":2}]}')[0]).toMatchObject({
      id: '1',
      entryPoint: 'f',
    });
    const bad = (data: string, re: RegExp) => {
      try {
        parseCodeTasks(data, 'tasks.jsonl');
        expect.unreachable();
      } catch (e) {
        expect(e).toBeInstanceOf(EnvError);
        expect((e as Error).message).toMatch(re);
      }
    };
    bad('{"prompt":"p","entryPoint":"f","tests":[]}', /CODE_TASK|line 1: "tests" must be a non-empty array/);
    bad('{"prompt":"p","entryPoint":"f x","tests":[{"input":[],"output":1}]}', /line 1: "entryPoint" must be the name/);
    bad('\n{"prompt":"p","entryPoint":"f","tests":[{"input":1,"output":1}]}', /line 2: tests\[0\] must be/);
    bad('{"prompt": ', /tasks.jsonl, line 1: not valid JSON/);
    expect(() => createCodeEnv(runner, { reward: 'partial' as never })).toThrow(/reward must be "pass_rate" or "all_pass"/);
    expect(() => createCodeEnv(runner, { timeLimitMs: -1 })).toThrow(/timeLimitMs must be a number/);
    expect(validateConfig({ env: { name: 'code', options: { reward: 'all_pass' } } }).issues).toEqual([]);
    expect(validateConfig({ env: { name: 'code', options: { reward: 'partial' } } }).issues).toEqual([
      {
        path: 'env.options',
        message:
          'env.options: code: reward must be "pass_rate" or "all_pass", got "partial"\n  hint: Check the environment options in the run config (env.options).',
      },
    ]);
  });
});
