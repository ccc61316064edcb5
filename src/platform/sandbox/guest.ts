// The code that runs inside a sandbox, as JavaScript text (it is evaluated in another realm, so it cannot
// be a TypeScript function of ours). GUEST_RUNTIME turns JSON requests into calls on the module's envs and
// answers with JSON replies; everything crossing the boundary is a string, so no object of one realm ever
// reaches the other (a host object inside a vm context is the classic way out of it).
//
// Requests: {id, op: 'create', inst, options} | {id, op: 'reset', inst, seed} | {id, op: 'step', inst, actions, stepOptions}
//           | {id, op: 'dispose', inst} | {id, op: 'run', input}
// Replies:  {kind: 'reply', id, ok: true, value: <JSON text>} | {kind: 'reply', id, ok: false, error: {name, message, stack}}
//           | {kind: 'log', text} | {kind: 'ready'}
// A `create` loads the module on first use (its top level runs then) and calls the factory; the guest
// checks that the env has reset and step (functions cannot cross), the host checks everything else.
// A `run` calls the default export itself with `input` and answers its result: the code environment
// (src/envs/code-run.ts) loads a candidate program with its test runner as the module and runs it once.

/** Defines __marft_guest(load, emit) -> dispatch(requestText). */
export const GUEST_RUNTIME = String.raw`
function __marft_guest(load, emit) {
  'use strict';
  const stringify = JSON.stringify, parse = JSON.parse;
  const envs = new Map();
  let factory = null;
  const describe = (e) => {
    try {
      if (e && typeof e === 'object') return { name: String(e.name ?? 'Error'), message: String(e.message ?? e), stack: typeof e.stack === 'string' ? e.stack : '' };
      return { name: 'thrown value', message: String(e), stack: '' };
    } catch { return { name: 'Error', message: 'an error that cannot be printed', stack: '' }; }
  };
  const reply = (id, ok, v) => {
    if (!ok) { emit(stringify({ kind: 'reply', id, ok: false, error: describe(v) })); return; }
    let text;
    try { text = stringify(v === undefined ? null : v); } catch (e) {
      emit(stringify({ kind: 'reply', id, ok: false, error: { name: 'ResultError', message: 'the result is not JSON-serialisable (' + describe(e).message + ')', stack: '' } }));
      return;
    }
    emit(stringify({ kind: 'reply', id, ok: true, value: text }));
  };
  const contract = (message) => ({ name: 'ContractError', message, stack: '' });
  const run = async (req) => {
    if (req.op === 'run') {
      factory ??= load();
      const f = await factory;
      if (typeof f !== 'function') throw contract('the default export must be a function (input) => result');
      return await f(req.input);
    }
    if (req.op === 'create') {
      factory ??= load();
      const f = await factory;
      if (typeof f !== 'function') throw contract('the default export must be a factory function (options) => env, got ' + (f === null ? 'null' : typeof f));
      const env = await f(req.options);
      if (!env || typeof env !== 'object') throw contract('the factory must return an env object, got ' + (env === null ? 'null' : typeof env));
      if (typeof env.reset !== 'function' || typeof env.step !== 'function') throw contract('the env must have the methods reset(seed) and step(actions, options)');
      envs.set(req.inst, env);
      return { name: env.name, horizon: env.horizon };
    }
    const env = envs.get(req.inst);
    if (!env) throw contract('no env instance ' + req.inst + ' in this sandbox');
    if (req.op === 'reset') return await env.reset(req.seed);
    if (req.op === 'step') return await env.step(req.actions, req.stepOptions);
    if (req.op === 'dispose') { envs.delete(req.inst); return null; }
    throw contract('unknown request ' + req.op);
  };
  return function dispatch(text) {
    const req = parse(text);
    let p;
    try { p = run(req); } catch (e) { reply(req.id, false, e); return; }
    p.then((v) => reply(req.id, true, v), (e) => reply(req.id, false, e));
  };
}
`;

/** Lines before the module's first line in the wrapper below (one: the function header). */
export const WRAPPER_LINES = 1;

/** The prepared module as an async function expression returning its default export. */
export const wrapModule = (body: string): string =>
  `(async function __marft_load() { const __marft_module = {};\n${body}\n;return __marft_module.default; })`;
