// The Node sandbox for environment modules: a worker thread with a heap limit (resourceLimits; running
// past it ends the worker with ERR_WORKER_OUT_OF_MEMORY, reported as 'memory'), no environment variables
// and its own stdio, in which the module runs inside a fresh vm context:
// - the context has only the JavaScript built-ins (no require, process, fetch, WebSocket, Buffer, fs, net),
//   plus a console and setTimeout/clearTimeout defined inside it;
// - codeGeneration { strings: false, wasm: false }: no eval / new Function / WebAssembly compilation;
// - import() has no loader (ERR_VM_DYNAMIC_IMPORT_CALLBACK_MISSING), and source.ts refuses imports anyway;
// - only strings cross between the worker and the context (requests in, a polled outbox of JSON replies and
//   timer requests out), so the module never holds an object of the worker's realm (whose Function
//   constructor would reach `process`);
// - typed arrays and ArrayBuffers larger than the memory limit are refused (they live outside the V8 heap,
//   so resourceLimits would not see them).
// The worker also drops its own network and native-binding globals, as a second wall. The per-call time
// limit is the host's (src/envs/module/host.ts): it terminates the worker, which stops even an endless loop.

import { Worker } from 'node:worker_threads';
import type { Sandbox, SandboxEvents, SandboxLimits, SandboxSpawner } from '../../common/sandbox.ts';
import { GUEST_RUNTIME, WRAPPER_LINES, wrapModule } from './guest.ts';

/** Inside the context: console, timers and the outbox, defined in the context's own realm. */
const CONTEXT_SHIM = String.raw`
(function (capBytes) {
  'use strict';
  const out = [];
  const timers = new Map();
  let nextTimer = 1;
  const stringify = JSON.stringify;
  const emit = (text) => { out.push(text); };
  const log = (...a) => emit(stringify({ kind: 'log', text: a.map((x) => (typeof x === 'string' ? x : (() => { try { return stringify(x); } catch { return String(x); } })())).join(' ') }));
  globalThis.console = { log, info: log, warn: log, error: log, debug: log };
  globalThis.setTimeout = (fn, ms, ...args) => {
    if (typeof fn !== 'function') throw new TypeError('setTimeout needs a function');
    const id = nextTimer++;
    timers.set(id, () => fn(...args));
    out.push(stringify({ kind: 'timer', id, ms: Math.max(0, Number(ms) || 0) }));
    return id;
  };
  globalThis.clearTimeout = (id) => { timers.delete(id); };
  const cap = (C, per) => new Proxy(C, {
    construct(target, args, nt) {
      const n = typeof args[0] === 'number' ? args[0] * per : 0;
      if (n > capBytes) throw new RangeError('an allocation of ' + n + ' bytes is past the sandbox memory limit');
      return Reflect.construct(target, args, nt);
    },
  });
  globalThis.ArrayBuffer = cap(ArrayBuffer, 1);
  if (typeof SharedArrayBuffer !== 'undefined') globalThis.SharedArrayBuffer = undefined;
  for (const name of ['Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array', 'Int32Array', 'Uint32Array', 'Float32Array', 'Float64Array', 'BigInt64Array', 'BigUint64Array']) {
    globalThis[name] = cap(globalThis[name], globalThis[name].BYTES_PER_ELEMENT);
  }
  return {
    emit,
    poll() { const s = '[' + out.join(',') + ']'; out.length = 0; return s; },
    fire(id) {
      const f = timers.get(id);
      timers.delete(id);
      if (f) try { f(); } catch (e) { log('uncaught in a timer callback: ' + String(e && e.message || e)); }
    },
  };
})
`;

/** The worker's program (eval'd: CommonJS scope). workerData: { body, name, memoryMb }. */
const WORKER = String.raw`
'use strict';
(() => {
const { parentPort, workerData } = require('node:worker_threads');
const vm = require('node:vm');
for (const k of ['fetch', 'WebSocket', 'XMLHttpRequest', 'EventSource', 'Request', 'Response', 'Headers', 'FormData', 'BroadcastChannel']) {
  try { delete globalThis[k]; } catch {}
}
for (const k of ['binding', '_linkedBinding', 'dlopen', 'getBuiltinModule', 'chdir', 'kill']) {
  try { process[k] = undefined; } catch {}
}
const post = (text) => parentPort.postMessage(text);
const ctx = vm.createContext(Object.create(null), { name: workerData.name, codeGeneration: { strings: false, wasm: false } });
const rt = vm.runInContext(workerData.shim, ctx, { filename: 'marft-sandbox-shim' })(workerData.memoryMb * 1048576);
const guest = vm.runInContext(workerData.runtime + '\n__marft_guest', ctx, { filename: 'marft-sandbox-guest' });
let load;
try {
  load = new vm.Script(workerData.wrapped, { filename: workerData.name, lineOffset: -workerData.wrapperLines }).runInContext(ctx);
} catch (e) {
  const m = /:(\d+)\n/.exec(String(e && e.stack || ''));
  post(JSON.stringify({ kind: 'syntax', message: String(e && e.message || e), line: m ? Number(m[1]) : undefined }));
  return;
}
const dispatch = guest(load, rt.emit);
let pending = 0;
let idle = 0;
let scheduled = false;
const pump = () => {
  scheduled = false;
  const items = JSON.parse(rt.poll());
  for (const it of items) {
    if (it.kind === 'timer') setTimeout(() => { rt.fire(it.id); idle = 0; schedule(); }, it.ms);
    else { if (it.kind === 'reply') pending--; post(JSON.stringify(it)); }
  }
  idle = items.length ? 0 : idle + 1;
  if (pending > 0) schedule();
};
const schedule = () => {
  if (scheduled) return;
  scheduled = true;
  if (idle < 64) setImmediate(pump); else setTimeout(pump, 2);
};
parentPort.on('message', (text) => {
  pending++;
  idle = 0;
  try { dispatch(text); } catch (e) { pending--; post(JSON.stringify({ kind: 'log', text: 'bad request: ' + String(e && e.message || e) })); }
  schedule();
});
post(JSON.stringify({ kind: 'ready' }));
})();
`;

/** Starts a sandbox in a worker thread; see the file header for what it enforces. */
export const nodeSandbox: SandboxSpawner = (body: string, name: string, limits: SandboxLimits, events: SandboxEvents): Sandbox => {
  const worker = new Worker(WORKER, {
    eval: true,
    env: {},
    stdout: true,
    stderr: true,
    resourceLimits: {
      maxOldGenerationSizeMb: limits.memoryMb,
      maxYoungGenerationSizeMb: Math.min(32, Math.max(4, limits.memoryMb >> 3)),
      stackSizeMb: 4,
    },
    workerData: {
      body,
      name,
      memoryMb: limits.memoryMb,
      shim: CONTEXT_SHIM,
      runtime: GUEST_RUNTIME,
      wrapped: wrapModule(body),
      wrapperLines: WRAPPER_LINES,
    },
  });
  worker.unref(); // a sandbox never keeps the process alive on its own
  let dead = false;
  worker.on('message', (text: string) => {
    if (typeof text !== 'string') return;
    if (text.startsWith('{"kind":"syntax"')) {
      const s = JSON.parse(text) as { message: string; line?: number };
      dead = true;
      void worker.terminate();
      events.onFatal({ kind: 'syntax', message: s.message, line: s.line });
      return;
    }
    events.onMessage(text);
  });
  worker.on('error', (e: Error & { code?: string }) => {
    if (dead) return;
    dead = true;
    events.onFatal(
      e.code === 'ERR_WORKER_OUT_OF_MEMORY'
        ? { kind: 'memory', message: `it ran out of its ${limits.memoryMb} MiB heap` }
        : { kind: 'crash', message: e.message },
    );
  });
  worker.on('exit', (code) => {
    if (dead) return;
    dead = true;
    events.onFatal({ kind: 'crash', message: `the sandbox exited (code ${code})` });
  });
  return {
    send: (text) => {
      if (!dead) worker.postMessage(text);
    },
    terminate: () => {
      dead = true;
      void worker.terminate();
    },
  };
};
