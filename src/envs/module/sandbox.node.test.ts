// The Node sandbox of environment modules, with real worker threads: sync and async modules, and every way
// a module can misbehave — an endless loop, a promise that never settles, a huge allocation, reaching for
// the network, the file system or the host's realm, polluting prototypes, throwing, malformed and
// non-serialisable results, syntax errors, non-determinism — each an EnvError naming the module and the call.

import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { nodeSandbox } from '../../platform/sandbox/node.ts';
import { EnvError } from '../errors.ts';
import { checkModule } from './check.ts';
import { ModulePool, type ModuleSpec } from './module-env.ts';

const envOf = (body: string) => `export default function (options) {\n  return { name: 't', horizon: 2, ${body} };\n}\n`;
const ok = (extra = '') =>
  `reset(seed) { return { observation: { task: 'task ' + seed }, info: { seed } }; }, step(a) { ${extra} return { teamReward: 1, done: true, feedback: 'fine' }; }`;
const spec = (source: string, name: string, limits?: ModuleSpec['limits']): ModuleSpec => ({ source, name, limits });

async function failure(p: Promise<unknown>): Promise<EnvError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(EnvError);
    return e as EnvError;
  }
  throw new Error('expected a failure');
}

/** The modules' sandboxes: worker threads, closed after each case. */
const pool = new ModulePool(nodeSandbox);
afterEach(() => pool.close());

describe('Node sandbox: modules that work', () => {
  it('runs a sync module and an async one (timers inside the sandbox)', async () => {
    const sync = pool.env(spec(envOf(ok()), 'sync.mjs'), { horizon: 3 });
    expect(await sync.reset(4)).toEqual({ observation: { task: 'task 4' }, info: { seed: 4 } });
    expect(sync.name).toBe('t');
    expect(sync.horizon).toBe(2);
    expect((await sync.step({ solver: 'x' })).rewards).toEqual({ solver: 1 });
    sync.close();
    const asyncSrc =
      envOf(`async reset(seed) { await new Promise((r) => setTimeout(r, 20)); return { observation: { task: 'late ' + seed } }; },
      step(a, o) { return new Promise((r) => setTimeout(() => r({ teamReward: 0, done: false, feedback: JSON.stringify(o) }), 5)); }`);
    const env = pool.env(spec(asyncSrc, 'async.mjs'), {});
    expect((await env.reset(1)).observation.task).toBe('late 1');
    expect((await env.step({ a: 'x' }, { answerRoles: ['a'] })).feedback).toBe('{"answerRoles":["a"]}');
    env.close();
  });

  it('passes both example modules through checkModule', async () => {
    for (const [file, roles, texts] of [
      ['guess.mjs', ['solver'], ['\\boxed{8}', '\\boxed{4}']],
      ['verifier.mjs', ['solver', 'verifier'], ['\\boxed{7} \\boxed{yes}']],
    ] as const) {
      const source = readFileSync(new URL(`../../../examples/${file}`, import.meta.url), 'utf8');
      const r = await checkModule(pool, spec(source, file), { seeds: [0, 1, 2], roles: [...roles], texts: [...texts], options: {} });
      expect(r.error, file).toBeNull();
      expect(r.seeds.every((s) => s.deterministic && s.steps.length > 0)).toBe(true);
    }
  });
});

describe('Node sandbox: limits', () => {
  it('stops an endless loop at the time limit and starts a fresh sandbox for the next call', async () => {
    const src = envOf(
      `reset(seed) { if (seed === 1) for (;;) {} return { observation: { task: 'ok' } }; }, step() { return { teamReward: 0, done: true, feedback: '' }; }`,
    );
    const s = spec(src, 'loop.mjs', { callMs: 400 });
    const e = await failure(pool.env(s, {}).reset(1));
    expect(e.code).toBe('ENV_MODULE_TIMEOUT');
    expect(e.message).toMatch(/environment module "loop\.mjs", reset\(1\): no answer within 400 ms/);
    expect((await pool.env(s, {}).reset(2)).observation.task).toBe('ok');
  });

  it('stops a promise that never settles', async () => {
    const e = await failure(
      pool.env(spec(envOf(`reset() { return new Promise(() => {}); }, step() {}`), 'never.mjs', { callMs: 300 }), {}).reset(0),
    );
    expect(e.code).toBe('ENV_MODULE_TIMEOUT');
  });

  it('stops a module past its heap limit, and refuses one huge buffer', async () => {
    const grow = envOf(`reset() { const keep = []; for (;;) keep.push(new Array(1e5).fill(Math.random())); }, step() {}`);
    const e = await failure(pool.env(spec(grow, 'grow.mjs', { memoryMb: 48, callMs: 20_000 }), {}).reset(0));
    expect(e.code).toBe('ENV_MODULE_MEMORY');
    expect(e.message).toMatch(/grow\.mjs", reset\(0\): it ran out of its 48 MiB heap/);
    const buf = await failure(
      pool.env(spec(envOf(`reset() { new Float64Array(2 ** 30); }, step() {}`), 'buf.mjs', { memoryMb: 64 }), {}).reset(0),
    );
    expect(buf.code).toBe('ENV_MODULE_THROW');
    expect(buf.message).toMatch(/RangeError: an allocation of 8589934592 bytes is past the sandbox memory limit/);
  });
});

describe('Node sandbox: walls', () => {
  it('has no network, file system, process or host realm to reach', async () => {
    const probe = envOf(`reset() {
      const out = {};
      for (const k of ['fetch', 'XMLHttpRequest', 'WebSocket', 'importScripts', 'require', 'process', 'Buffer', 'module', 'navigator', 'SharedArrayBuffer']) out[k] = typeof globalThis[k];
      const attempt = (name, f) => { try { out[name] = 'reached: ' + String(f()); } catch (e) { out[name] = 'blocked: ' + e.name; } };
      attempt('globalThis.constructor', () => globalThis.constructor.constructor('return process')());
      attempt('setTimeout.constructor', () => setTimeout.constructor('return process')());
      attempt('console.log.constructor', () => console.log.constructor('return this')());
      attempt('eval', () => eval('1 + 1'));
      attempt('Function', () => new Function('return 1')());
      attempt('async constructor', () => (async () => {}).constructor('return 1'));
      return { observation: { task: JSON.stringify(out) } };
    }, step() {}`);
    const got = JSON.parse((await pool.env(spec(probe, 'probe.mjs'), {}).reset(0)).observation.task) as Record<string, string>;
    for (const k of [
      'fetch',
      'XMLHttpRequest',
      'WebSocket',
      'importScripts',
      'require',
      'process',
      'Buffer',
      'module',
      'navigator',
      'SharedArrayBuffer',
    ])
      expect(got[k], k).toBe('undefined');
    for (const k of [
      'globalThis.constructor',
      'setTimeout.constructor',
      'console.log.constructor',
      'eval',
      'Function',
      'async constructor',
    ])
      expect(got[k], k).toMatch(/^blocked/);
  });

  it('refuses import() before running anything', async () => {
    const e = await failure(pool.env(spec(envOf(`async reset() { await import('node:fs'); }, step() {}`), 'imp.mjs'), {}).reset(0));
    expect(e.code).toBe('ENV_MODULE_SYNTAX');
    expect(e.message).toMatch(/"imp\.mjs", line 2: import\(\) is not allowed/);
  });

  it('keeps prototype pollution inside the sandbox', async () => {
    const src =
      `Object.prototype.polluted = 'yes';\nArray.prototype.evil = 1;\nJSON.parse = () => ({ hijacked: true });\n` +
      envOf(
        `reset() { return JSON.parse('{}') && { observation: { task: 'x', ['__proto__']: { polluted: 'deep' } }, info: { ['__proto__']: { admin: true }, constructor: { prototype: { polluted: 1 } } } }; }, step() {}`,
      );
    const r = await pool.env(spec(src, 'pollute.mjs'), {}).reset(0);
    const plain: Record<string, unknown> = {};
    expect(plain.polluted).toBeUndefined();
    expect(plain.admin).toBeUndefined();
    expect(([] as unknown as { evil?: number }).evil).toBeUndefined();
    expect(JSON.parse('{"a":1}')).toEqual({ a: 1 });
    expect(Object.getPrototypeOf(r.info)).toBe(Object.prototype);
    expect(r.info.admin).toBeUndefined();
  });
});

describe('Node sandbox: errors name the module, the call and the problem', () => {
  it('a throw, a malformed result, a non-serialisable one, a bad factory, a syntax error', async () => {
    const thrower = envOf(ok(`if (a.solver === 'boom') throw new TypeError('no such move');`));
    const env = pool.env(spec(thrower, 'throw.mjs'), {});
    await env.reset(3);
    const t = await failure(env.step({ solver: 'boom' }));
    expect(t.code).toBe('ENV_MODULE_THROW');
    expect(t.message).toMatch(/environment module "throw\.mjs", step \(seed 3, turn 1\): threw TypeError: no such move \(.*throw\.mjs:2/);

    const bad = await failure(pool.env(spec(envOf(`reset() { return { observation: { task: 1 } }; }, step() {}`), 'bad.mjs'), {}).reset(5));
    expect([bad.code, bad.message.split('\n')[0]]).toEqual([
      'ENV_MODULE_RESULT',
      'environment module "bad.mjs", reset(5): observation.task must be a string, got 1',
    ]);
    const big = await failure(
      pool.env(spec(envOf(`reset() { return { observation: { task: 'x' }, info: { n: 1n } }; }, step() {}`), 'bigint.mjs'), {}).reset(0),
    );
    expect(big.code).toBe('ENV_MODULE_RESULT');
    expect(big.message).toMatch(/not JSON-serialisable/);
    const cyc = await failure(
      pool
        .env(spec(envOf(`reset() { const o = { observation: { task: 'x' } }; o.info = o; return o; }, step() {}`), 'cycle.mjs'), {})
        .reset(0),
    );
    expect(cyc.message).toMatch(/not JSON-serialisable/);
    const nan = pool.env(
      spec(
        envOf(`reset() { return { observation: { task: 'x' } }; }, step() { return { teamReward: NaN, done: true, feedback: '' }; }`),
        'nan.mjs',
      ),
      {},
    );
    await nan.reset(0);
    expect((await failure(nan.step({ s: '' }))).message).toMatch(/teamReward must be a finite number, got null/);
    const noStep = await failure(
      pool.env(spec(`export default () => ({ name: 'x', horizon: 1, reset() {} });`, 'nostep.mjs'), {}).reset(0),
    );
    expect(noStep.message).toMatch(/nostep\.mjs", the factory \(options \{\}\): the env must have the methods reset\(seed\) and step/);
    const notFn = await failure(pool.env(spec('export default 42;', 'notfn.mjs'), {}).reset(0));
    expect(notFn.message).toMatch(/the default export must be a factory function/);
    const top = await failure(pool.env(spec("throw new Error('top level');\nexport default () => ({});", 'top.mjs'), {}).reset(0));
    expect(top.code).toBe('ENV_MODULE_THROW');
    expect(top.message).toMatch(/top level/);
    const syn = await failure(pool.env(spec('const a = 1;\n\nexport default () => ({ reset( { });', 'syntax.mjs'), {}).reset(0));
    expect(syn.code).toBe('ENV_MODULE_SYNTAX');
    expect(syn.message).toMatch(/environment module "syntax\.mjs", line 3: Unexpected token/);
  });

  it('a module that is not deterministic for a seed', async () => {
    const src = envOf(
      `reset(seed) { return { observation: { task: 'n = ' + Math.floor(Math.random() * 1e9) } }; }, step() { return { teamReward: 0, done: true, feedback: '' }; }`,
    );
    const first = pool.env(spec(src, 'random.mjs'), {});
    await first.reset(7);
    const e = await failure(pool.env(spec(src, 'random.mjs'), {}).reset(7));
    expect(e.code).toBe('ENV_MODULE_NONDETERMINISTIC');
    expect(e.message).toMatch(
      /environment module "random\.mjs", reset\(7\): the same seed and actions gave a different result than before/,
    );
    const stepSrc = envOf(
      `reset() { return { observation: { task: 't' } }; }, step() { globalThis.n = (globalThis.n ?? 0) + 1; return { teamReward: globalThis.n, done: true, feedback: '' }; }`,
    );
    const report = await checkModule(pool, spec(stepSrc, 'state.mjs'), { seeds: [0], roles: ['solver'], texts: ['a'], options: {} });
    expect(report.error?.code).toBe('ENV_MODULE_NONDETERMINISTIC');
    expect(report.error?.message).toMatch(/step \(seed 0, turn 1\)/);
  });
});
