// The browser sandbox for environment modules: a dedicated classic Worker made from a Blob URL (allowed by
// the page's CSP, `worker-src 'self' blob:`; no eval is needed, so none is asked of the CSP). Its script is
// one text: a prelude that takes away, before the module's first line runs,
//   - the network: fetch, XMLHttpRequest, WebSocket, WebTransport, EventSource, importScripts, and Worker /
//     SharedWorker (a new worker would come back with them), on the global object and its prototypes;
//   - storage: indexedDB, caches; and the channels out: BroadcastChannel;
//   - code from strings: eval, Function (and the constructors reachable from function prototypes), string
//     timers; import() cannot appear in a module (source.ts refuses it), so nothing is loaded;
// then the guest runtime, then the module wrapped in an async function. A worker has no DOM. A syntax error
// fails the whole script before anything runs and arrives as an ErrorEvent with its line. The per-call
// time limit is the host's (src/envs/module/host.ts), which terminates the worker. Memory: a browser gives
// no per-worker heap limit; allocations past the limit in one buffer are refused (as in Node) and a worker
// the browser stops for memory is reported as 'crash'; the time limit bounds anything slower.

import type { Sandbox, SandboxEvents, SandboxLimits, SandboxSpawner } from '../../common/sandbox.ts';
import { GUEST_RUNTIME, WRAPPER_LINES, wrapModule } from './guest.ts';

const PRELUDE = (capBytes: number) => String.raw`'use strict';
const __marft_post = self.postMessage.bind(self);
const __marft_listen = self.addEventListener.bind(self);
(() => {
  const gone = ['fetch', 'XMLHttpRequest', 'WebSocket', 'WebTransport', 'EventSource', 'importScripts', 'Worker', 'SharedWorker',
    'indexedDB', 'caches', 'BroadcastChannel', 'eval', 'Request', 'Response', 'Headers', 'FormData', 'XMLHttpRequestUpload', 'XMLHttpRequestEventTarget'];
  for (let o = self; o; o = Object.getPrototypeOf(o)) {
    for (const k of gone) {
      if (Object.prototype.hasOwnProperty.call(o, k)) { try { delete o[k]; } catch {} }
      if (Object.prototype.hasOwnProperty.call(o, k)) { try { Object.defineProperty(o, k, { value: undefined, writable: false, configurable: false }); } catch {} }
    }
  }
  for (const k of gone) { try { Object.defineProperty(self, k, { value: undefined, writable: false, configurable: false }); } catch {} }
  const noStrings = (what) => function () { throw new EvalError(what + ' is not allowed in an environment module'); };
  const F = noStrings('Function()');
  F.prototype = Function.prototype;
  for (const f of [function () {}, async function () {}, function* () {}, async function* () {}]) {
    Object.defineProperty(Object.getPrototypeOf(f), 'constructor', { value: F, writable: false, configurable: false });
  }
  Object.defineProperty(self, 'Function', { value: F, writable: false, configurable: false });
  const st = self.setTimeout.bind(self), si = self.setInterval.bind(self);
  self.setTimeout = (fn, ms, ...a) => { if (typeof fn !== 'function') throw new TypeError('setTimeout needs a function'); return st(fn, ms, ...a); };
  self.setInterval = (fn, ms, ...a) => { if (typeof fn !== 'function') throw new TypeError('setInterval needs a function'); return si(fn, ms, ...a); };
  const cap = (C, per) => new Proxy(C, { construct(t, args, nt) {
    const n = typeof args[0] === 'number' ? args[0] * per : 0;
    if (n > ${capBytes}) throw new RangeError('an allocation of ' + n + ' bytes is past the sandbox memory limit');
    return Reflect.construct(t, args, nt);
  } });
  self.ArrayBuffer = cap(ArrayBuffer, 1);
  for (const name of ['Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array', 'Int32Array', 'Uint32Array', 'Float32Array', 'Float64Array', 'BigInt64Array', 'BigUint64Array']) {
    self[name] = cap(self[name], self[name].BYTES_PER_ELEMENT);
  }
})();
`;

const START = String.raw`
const __marft_dispatch = __marft_guest(__marft_load, (text) => __marft_post(text));
__marft_listen('message', (e) => { if (typeof e.data === 'string') __marft_dispatch(e.data); });
__marft_post('{"kind":"ready"}');
`;

/** The worker's whole script, and the line of the module's first line in it. */
export function browserSandboxScript(body: string, memoryMb: number): { script: string; firstLine: number } {
  const head = `${PRELUDE(memoryMb * 1048576)}${GUEST_RUNTIME}\nconst __marft_load = `;
  const firstLine = head.split('\n').length + WRAPPER_LINES;
  return { script: `${head}${wrapModule(body)};\n${START}`, firstLine };
}

/** Starts a sandbox in a Blob-URL Worker; see the file header for what it enforces. */
export const browserSandbox: SandboxSpawner = (body: string, name: string, limits: SandboxLimits, events: SandboxEvents): Sandbox => {
  if (typeof Worker === 'undefined' || typeof Blob === 'undefined') throw new Error('this context cannot start a Worker');
  const { script, firstLine } = browserSandboxScript(body, limits.memoryMb);
  const url = URL.createObjectURL(new Blob([script], { type: 'text/javascript' }));
  const worker = new Worker(url, { name: `env-module ${name}` });
  let ready = false;
  let dead = false;
  const end = (): void => {
    dead = true;
    worker.terminate();
    URL.revokeObjectURL(url);
  };
  worker.onmessage = (e: MessageEvent) => {
    if (typeof e.data !== 'string' || dead) return;
    if (!ready && e.data === '{"kind":"ready"}') ready = true;
    events.onMessage(e.data);
  };
  worker.onerror = (e: ErrorEvent) => {
    e.preventDefault();
    if (dead || ready) return; // after loading, an uncaught error in a module's callback: its call times out
    end();
    const line = e.lineno ? e.lineno - firstLine + 1 : undefined;
    const message = e.message || 'the module could not be loaded';
    events.onFatal(
      /SyntaxError/i.test(message) || line !== undefined
        ? {
            kind: 'syntax',
            message: message.replace(/^Uncaught\s+/, ''),
            line: line !== undefined && line >= 1 ? line : undefined,
            column: e.colno || undefined,
          }
        : { kind: 'crash', message },
    );
  };
  return {
    send: (text) => {
      if (!dead) worker.postMessage(text);
    },
    terminate: end,
  };
};
