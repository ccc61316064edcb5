// The UI side of the worker: spawns it, wraps it with comlink, and notices when it is gone. A worker that
// dies (killed by the browser for memory, which fires no event; an uncaught error; a message it cannot
// read) would leave every comlink call pending forever. So the page pings it every PING_MS; no answer for
// GONE_MS, or an 'error' / 'messageerror' event, marks it gone: every pending and later call rejects with
// WorkerGone, the listeners hear why, and restartEngine() starts a fresh worker (runs and checkpoints live
// in the browser's storage, not in the worker, so nothing saved is lost).

import * as Comlink from 'comlink';
import type { EngineApi } from './api.ts';
import { type WarmUpMode, limitsParam, warmUpParam } from './page-params.ts';

/**
 * Ping period, and the silence after which the worker counts as gone: a busy worker still answers between
 * GPU waits, but a model load on a slow, loaded CPU can keep its thread busy for many seconds.
 */
export const PING_MS = 2_000;
export const GONE_MS = 45_000;

export class WorkerGone extends Error {
  constructor(readonly reason: string) {
    super(`the lab's engine (its Web Worker) stopped: ${reason}`);
    this.name = 'WorkerGone';
  }
}

/** What the watch needs of a worker: its events and a ping that resolves while it is alive. */
export interface Watched {
  addEventListener(type: 'error' | 'messageerror', listener: (e: Event) => void): void;
  ping(): Promise<unknown>;
}

/**
 * Watches one worker: `gone` rejects with WorkerGone when it stops answering or reports an error;
 * `guard(p)` rejects with it too, so no caller waits forever. `stop()` ends the pings.
 */
export class WorkerWatch {
  readonly gone: Promise<never>;
  private markGone!: (reason: string) => void;
  private lastAnswer: number;
  private readonly timer: ReturnType<typeof setInterval>;
  reason: string | null = null;

  constructor(w: Watched, now: () => number = Date.now) {
    this.gone = new Promise<never>((_, reject) => {
      this.markGone = (reason) => {
        if (this.reason !== null) return;
        this.reason = reason;
        this.stop();
        reject(new WorkerGone(reason));
      };
    });
    this.gone.catch(() => {}); // observed through guard() and onGone
    this.lastAnswer = now();
    w.addEventListener('error', (e) => {
      const message = (e as { message?: string }).message;
      this.markGone(`an uncaught error in the worker${message ? ` (${message})` : ''}`);
    });
    w.addEventListener('messageerror', () => this.markGone('it received a message it could not read'));
    this.timer = setInterval(() => {
      if (now() - this.lastAnswer > GONE_MS) {
        this.markGone(
          `it has not answered for ${Math.round((now() - this.lastAnswer) / 1000)} s (closed or killed by the browser, e.g. out of memory)`,
        );
        return;
      }
      void w.ping().then(
        () => {
          this.lastAnswer = now();
        },
        () => {},
      );
    }, PING_MS);
  }

  guard<T>(p: Promise<T>): Promise<T> {
    return Promise.race([p, this.gone]);
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

/** The kernel warm-up the page's address asks for (?warmup=on|off, else auto), for EngineApi.prepareKernels. */
export const pageWarmUp = (): WarmUpMode => (typeof location === 'undefined' ? 'auto' : warmUpParam(location.search));

let current: { worker: Worker; engine: Comlink.Remote<EngineApi>; watch: WorkerWatch } | null = null;
const goneListeners: Array<(reason: string) => void> = [];

function spawn(): NonNullable<typeof current> {
  const worker = new Worker(new URL('./engine.worker.ts', import.meta.url), { type: 'module', name: 'marft-engine' });
  const remote = Comlink.wrap<EngineApi>(worker);
  // ?limits=default: before any call that could open the device
  if (typeof location !== 'undefined' && limitsParam(location.search) === 'default') void remote.setDeviceLimits('default');
  const watch = new WorkerWatch({ addEventListener: (t, l) => worker.addEventListener(t, l), ping: () => remote.ping() });
  watch.gone.catch((e: WorkerGone) => {
    for (const l of goneListeners) l(e.reason);
  });
  // every method call races the watch: a dead worker rejects it instead of leaving it pending
  const engine = new Proxy({} as Comlink.Remote<EngineApi>, {
    get: (_, prop) =>
      prop === 'then'
        ? undefined
        : (...args: unknown[]) =>
            watch.guard((remote as unknown as Record<PropertyKey, (...a: unknown[]) => Promise<unknown>>)[prop](...args)),
  });
  return { worker, engine, watch };
}

export function getEngine(): Comlink.Remote<EngineApi> {
  current ??= spawn();
  return current.engine;
}

/** Called with the reason whenever the engine's worker is found gone. */
export function onEngineGone(listener: (reason: string) => void): void {
  goneListeners.push(listener);
}

/** Ends the current worker (gone or not) and starts a fresh one. */
export function restartEngine(): Comlink.Remote<EngineApi> {
  if (current) {
    current.watch.stop();
    current.worker.terminate();
  }
  current = spawn();
  return current.engine;
}
