// The host side of an environment module's sandbox: starts it through the platform's spawner (the one the
// session's Envs holds: src/envs/registry.ts), sends one JSON request per call, and turns
// every way a call can fail into an EnvError naming the module and the call:
//   a throw or rejection -> ENV_MODULE_THROW; no answer within the call's time limit -> ENV_MODULE_TIMEOUT
//   (the sandbox is terminated: that is the only way to stop an endless loop); out of memory ->
//   ENV_MODULE_MEMORY; a syntax error -> ENV_MODULE_SYNTAX with its line; a malformed result ->
//   ENV_MODULE_RESULT (the guest's contract checks, and contract.ts's here).
// A sandbox that died takes its env instances with it; the next call starts a new one (the envs made in
// the old one answer ENV_MODULE_THROW "lost"), so a paused run resumes on a fresh sandbox.

import type { Sandbox, SandboxFatal, SandboxLimits, SandboxSpawner } from '../../common/sandbox.ts';
import type { EnvError } from '../errors.ts';
import { type ModuleCall, moduleError } from './contract.ts';
import { prepareModule } from './source.ts';

export interface ModuleLimits extends SandboxLimits {
  /** Milliseconds one call (create, reset, step) may take. */
  callMs: number;
  /** Milliseconds the sandbox may take to start. */
  startMs: number;
}

export const DEFAULT_LIMITS: ModuleLimits = { callMs: 5000, startMs: 10_000, memoryMb: 256 };

interface Pending {
  resolve: (v: unknown) => void;
  reject: (e: EnvError) => void;
  where: ModuleCall;
  timer: ReturnType<typeof setTimeout>;
}

type Reply =
  | { kind: 'reply'; id: number; ok: true; value: string }
  | { kind: 'reply'; id: number; ok: false; error: { name: string; message: string; stack: string } }
  | { kind: 'log'; text: string }
  | { kind: 'ready' };

/** First lines of a module's stack, without the sandbox's own frames. */
function moduleStack(stack: string, module: string): string {
  const own = stack
    .split('\n')
    .slice(1)
    .filter((l) => l.includes(module))
    .slice(0, 3)
    .map((l) => l.trim());
  return own.length ? ` (${own.join('; ')})` : '';
}

export class ModuleHost {
  private sandbox: Sandbox | null = null;
  private starting: Promise<Sandbox> | null = null;
  private pending = new Map<number, Pending>();
  private nextId = 1;
  /** Bumped whenever a sandbox dies: instances made in an older one are gone. */
  generation = 0;
  private readonly body: string;
  /** The static checks' verdict on the source (source.ts), given to every call. */
  private readonly invalid: EnvError | null = null;

  /**
   * `spawner` is the platform's sandbox (src/platform/sandbox/node.ts or browser.ts); null where there is
   * none (every call then fails ENV_MODULE_UNAVAILABLE).
   */
  constructor(
    private readonly spawner: SandboxSpawner | null,
    readonly module: string,
    source: string,
    readonly limits: ModuleLimits = DEFAULT_LIMITS,
    private readonly onLog?: (text: string) => void,
  ) {
    let body = '';
    try {
      body = prepareModule(source, module).body;
    } catch (e) {
      if (!(e instanceof Error && 'code' in e)) throw e;
      this.invalid = e as EnvError;
    }
    this.body = body;
  }

  /** Sends `op` and waits for its reply (the parsed JSON value), within the time limit. */
  async call(op: string, payload: Record<string, unknown>, where: ModuleCall): Promise<unknown> {
    if (this.invalid) throw this.invalid;
    const sandbox = await this.start(where);
    return new Promise((resolve, reject) => {
      const id = this.nextId++;
      const timer = setTimeout(() => {
        this.kill(
          (w) =>
            moduleError(
              'ENV_MODULE_TIMEOUT',
              w,
              `no answer within ${this.limits.callMs} ms (an endless loop, or a promise that never settles); the sandbox was stopped`,
            ),
          id,
        );
      }, this.limits.callMs);
      this.pending.set(id, { resolve, reject, where, timer });
      sandbox.send(JSON.stringify({ id, op, ...payload }));
    });
  }

  /** Stops the sandbox; calls in flight fail. */
  close(): void {
    this.kill(null);
  }

  private start(where: ModuleCall): Promise<Sandbox> {
    if (this.sandbox) return Promise.resolve(this.sandbox);
    if (this.starting) return this.starting;
    const s = this.spawner;
    if (!s) return Promise.reject(moduleError('ENV_MODULE_UNAVAILABLE', where, 'no sandbox is available here'));
    this.starting = new Promise<Sandbox>((resolve, reject) => {
      let ready = false;
      let box: Sandbox | null = null;
      const timer = setTimeout(() => {
        box?.terminate();
        this.starting = null;
        reject(
          moduleError(
            'ENV_MODULE_TIMEOUT',
            where,
            `the sandbox did not start within ${this.limits.startMs} ms (a module whose top level never ends?)`,
          ),
        );
      }, this.limits.startMs);
      const fatal = (f: SandboxFatal): void => {
        clearTimeout(timer);
        if (!ready) {
          this.starting = null;
          reject(this.fatalError(f, where));
        } else this.kill((w) => this.fatalError(f, w));
      };
      try {
        box = s(
          this.body,
          this.module,
          { memoryMb: this.limits.memoryMb },
          {
            onMessage: (text) => {
              let m: Reply;
              try {
                m = JSON.parse(text) as Reply;
              } catch {
                return; // not the guest runtime's (a module can post too): ignored
              }
              if (m.kind === 'ready' && !ready) {
                ready = true;
                clearTimeout(timer);
                this.sandbox = box;
                this.starting = null;
                resolve(box!);
              } else if (m.kind === 'log') this.onLog?.(m.text);
              else if (m.kind === 'reply') this.settle(m);
            },
            onFatal: fatal,
          },
        );
      } catch (e) {
        clearTimeout(timer);
        this.starting = null;
        reject(moduleError('ENV_MODULE_UNAVAILABLE', where, `the sandbox could not be started (${(e as Error).message})`));
      }
    });
    return this.starting;
  }

  private fatalError(f: SandboxFatal, where: ModuleCall): EnvError {
    if (f.kind === 'syntax') {
      return moduleError(
        'ENV_MODULE_SYNTAX',
        { ...where, call: f.line ? `line ${f.line}${f.column ? `:${f.column}` : ''}` : 'loading' },
        f.message,
      );
    }
    if (f.kind === 'memory') return moduleError('ENV_MODULE_MEMORY', where, `${f.message}; the sandbox was stopped`);
    return moduleError('ENV_MODULE_THROW', where, `the sandbox crashed (${f.message})`);
  }

  private settle(m: Extract<Reply, { kind: 'reply' }>): void {
    const p = this.pending.get(m.id);
    if (!p) return;
    this.pending.delete(m.id);
    clearTimeout(p.timer);
    if (m.ok) {
      try {
        p.resolve(JSON.parse(m.value));
      } catch {
        p.reject(moduleError('ENV_MODULE_RESULT', p.where, 'the result did not arrive as JSON'));
      }
      return;
    }
    const { name, message, stack } = m.error;
    if (name === 'ContractError' || name === 'ResultError') p.reject(moduleError('ENV_MODULE_RESULT', p.where, message));
    else p.reject(moduleError('ENV_MODULE_THROW', p.where, `threw ${name}: ${message}${moduleStack(stack, this.module)}`));
  }

  /**
   * Terminates the sandbox. Calls in flight get `error(their call)` — only the call `culprit` when one is
   * named, the others a note that they were stopped with it; with no error, that the sandbox was closed.
   */
  private kill(error: ((where: ModuleCall) => EnvError) | null, culprit?: number): void {
    this.sandbox?.terminate();
    this.sandbox = null;
    this.generation++;
    const blamed = culprit !== undefined ? this.pending.get(culprit) : undefined;
    const cause = error && blamed ? error(blamed.where) : null;
    for (const [id, p] of this.pending) {
      clearTimeout(p.timer);
      if (error && (culprit === undefined || id === culprit)) p.reject(error(p.where));
      else
        p.reject(
          moduleError(
            cause?.code ?? 'ENV_MODULE_THROW',
            p.where,
            cause ? `stopped with the sandbox (${cause.message.split('\n')[0]})` : 'the sandbox was closed',
          ),
        );
    }
    this.pending.clear();
  }
}
