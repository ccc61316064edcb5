// A user's environment module as an AsyncEnv for the rollout: each ModuleEnv is one env instance inside a
// sandbox shared by every env of the same module (source, limits) in the session's pool (ModulePool) — one
// worker per module, not per episode — and closed a few seconds after its last env is, so the iterations
// of a run reuse it.
// Results are checked (contract.ts), and checked for determinism as the run goes: the pool remembers what
// reset(seed) and each step after the same actions gave (bounded), and a module that answers the same
// question differently (GRPO repeats every task's seed; resumes and `marft env test` replay seeds) fails
// with ENV_MODULE_NONDETERMINISTIC, naming the seed and where the two answers part.

import { envFail } from '../errors.ts';
import type { AsyncEnv, EnvOptions, ResetResult, StepOptions, StepResult } from '../types.ts';
import { type ModuleCall, checkEnvInfo, checkReset, checkStep, moduleError } from './contract.ts';
import type { SandboxSpawner } from '../../common/sandbox.ts';
import { DEFAULT_LIMITS, type ModuleLimits, ModuleHost } from './host.ts';

export interface ModuleSpec {
  /** The module's source text. */
  source: string;
  /** Its label in messages (a file name). */
  name: string;
  limits?: Partial<ModuleLimits>;
  /** Where the module's console output goes (default: nowhere). */
  onLog?: (text: string) => void;
}

/** Idle milliseconds before a sandbox nobody uses is closed. */
const IDLE_MS = 3000;
/** Results remembered per module for the determinism check. */
const SEEN_MAX = 4096;

interface Entry {
  key: string;
  host: ModuleHost;
  users: number;
  nextInst: number;
  idle: ReturnType<typeof setTimeout> | null;
  /** question (options, seed, actions so far) -> the JSON answer first given. */
  seen: Map<string, string>;
}

/**
 * The sandboxes of users' modules, one per module (source, limits), on one platform's spawner: a session
 * holds one (its Envs, src/envs/registry.ts), so two sessions, or two tests, never share a sandbox.
 */
export class ModulePool {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly spawner: SandboxSpawner | null) {}

  /** An env of the module `spec` with `options` (the env starts in its sandbox on the first reset). */
  env(spec: ModuleSpec, options: EnvOptions): ModuleEnv {
    return new ModuleEnv(this.acquire(spec), options, (e) => this.release(e));
  }

  /** Closes every module sandbox now (the CLI at exit, tests between cases). */
  close(): void {
    for (const e of this.entries.values()) {
      if (e.idle) clearTimeout(e.idle);
      e.host.close();
    }
    this.entries.clear();
  }

  private acquire(spec: ModuleSpec): Entry {
    const limits = { ...DEFAULT_LIMITS, ...spec.limits };
    const key = `${spec.name}\n${JSON.stringify(limits)}\n${spec.source}`;
    let e = this.entries.get(key);
    if (!e) {
      e = {
        key,
        host: new ModuleHost(this.spawner, spec.name, spec.source, limits, spec.onLog),
        users: 0,
        nextInst: 1,
        idle: null,
        seen: new Map(),
      };
      this.entries.set(key, e);
    }
    if (e.idle) clearTimeout(e.idle);
    e.idle = null;
    e.users++;
    return e;
  }

  private release(e: Entry): void {
    if (--e.users > 0) return;
    e.idle = setTimeout(() => {
      if (e.users > 0) return;
      e.host.close();
      this.entries.delete(e.key);
    }, IDLE_MS);
    (e.idle as { unref?: () => void }).unref?.();
  }
}

/** Where two JSON texts part, for the determinism message. */
function firstDifference(a: string, b: string): string {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  const from = Math.max(0, i - 30);
  return `…${a.slice(from, i + 40)}… then …${b.slice(from, i + 40)}…`;
}

function remember(e: Entry, question: string, answer: string, where: ModuleCall): void {
  const before = e.seen.get(question);
  if (before === undefined) {
    if (e.seen.size >= SEEN_MAX) e.seen.delete(e.seen.keys().next().value!);
    e.seen.set(question, answer);
  } else if (before !== answer) {
    throw moduleError(
      'ENV_MODULE_NONDETERMINISTIC',
      where,
      `the same seed and actions gave a different result than before: ${firstDifference(before, answer)}`,
    );
  }
}

export class ModuleEnv implements AsyncEnv {
  name: string;
  /** The options' horizon until the module's env reports its own (on the first reset). */
  horizon: number;
  private inst: number | null = null;
  private generation = -1;
  private seed: number | null = null;
  private turn = 0;
  private history = '';
  private closed = false;
  private readonly optionsKey: string;

  constructor(
    private readonly entry: Entry,
    private readonly options: EnvOptions,
    private readonly release: (e: Entry) => void,
  ) {
    this.name = entry.host.module;
    this.horizon = typeof options.horizon === 'number' ? options.horizon : Number.MAX_SAFE_INTEGER;
    this.optionsKey = JSON.stringify(options);
  }

  private where(call: string): ModuleCall {
    return { module: this.entry.host.module, call };
  }

  private async instance(): Promise<number> {
    const host = this.entry.host;
    if (this.inst !== null && this.generation === host.generation) return this.inst;
    if (this.inst !== null)
      throw moduleError(
        'ENV_MODULE_THROW',
        this.where('step'),
        'its sandbox was stopped (after an error in another call); the episode is lost',
      );
    const inst = this.entry.nextInst++;
    const where = this.where(
      `the factory (options ${this.optionsKey.length > 60 ? `${this.optionsKey.slice(0, 57)}...` : this.optionsKey})`,
    );
    const info = checkEnvInfo(await host.call('create', { inst, options: this.options }, where), where);
    this.inst = inst;
    this.generation = host.generation;
    this.name = info.name;
    this.horizon = info.horizon;
    return inst;
  }

  async reset(seed: number): Promise<ResetResult> {
    if (this.closed) envFail('ENV_STATE', `environment module "${this.entry.host.module}": reset() after close()`);
    const inst = await this.instance();
    const where = this.where(`reset(${seed})`);
    const r = checkReset(await this.entry.host.call('reset', { inst, seed }, where), where);
    this.seed = seed;
    this.turn = 0;
    this.history = '';
    remember(this.entry, `${this.optionsKey}|${seed}`, JSON.stringify(r), where);
    return r;
  }

  async step(actions: Record<string, string>, options: StepOptions = {}): Promise<StepResult> {
    if (this.inst === null || this.seed === null)
      envFail('ENV_STATE', `environment module "${this.entry.host.module}": step() before reset()`);
    const inst = await this.instance();
    this.turn++;
    const where = this.where(`step (seed ${this.seed}, turn ${this.turn})`);
    const stepOptions = options.answerRoles ? { answerRoles: [...options.answerRoles] } : {};
    const r = checkStep(await this.entry.host.call('step', { inst, actions, stepOptions }, where), where, Object.keys(actions));
    this.history += `|${JSON.stringify([actions, stepOptions])}`;
    remember(this.entry, `${this.optionsKey}|${this.seed}${this.history}`, JSON.stringify(r), where);
    return r;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    const host = this.entry.host;
    if (this.inst !== null && this.generation === host.generation) {
      host.call('dispose', { inst: this.inst }, this.where('dispose')).catch(() => {});
    }
    this.release(this.entry);
  }
}
