// The code environment: each task is a JavaScript function to write, checked by running it on unit tests
// in the sandbox (code-run.ts). reset(seed) draws a task (built-in, code-tasks.ts, or the user's JSONL);
// each step extracts the answering agents' code, runs the team's answer (the last answering agent that
// gave code) and rewards it with the share of tests passed (reward "pass_rate", the default) or 1 only
// when every test passes (reward "all_pass": the sparse outcome reward of DeepCoder's reward function and
// of AReaL's code verifier, functioncall/code/verify.py, which count a problem solved only when all its
// test cases pass). The feedback names how many tests passed and the first failure, so a multi-turn
// episode can fix its code; it ends when all pass or after `horizon` turns.
//
// Answer extraction: the last fenced block marked js, javascript, mjs or jsx (```js ... ```); without one,
// the last fenced block of any language; without a fence, no answer (reward 0).

import { type CodeLimits, type CodeRun, type CodeRunner, DEFAULT_CODE_LIMITS } from './code-run.ts';
import { BUILTIN_CODE_TASKS, type CodeTask } from './code-tasks.ts';
import { splitDataset } from './dataset.ts';
import { EnvError, envFail } from './errors.ts';
import { checkHorizon } from './mathEnv.ts';
import { Rng } from '../common/rng.ts';
import type { AgentAnswer, AsyncEnv, EnvOptions, ResetResult, StepOptions, StepResult } from './types.ts';

const FENCE = /```[ \t]*([\w+-]*)[^\n]*\n([\s\S]*?)```/g;
const JS: ReadonlySet<string> = new Set(['js', 'javascript', 'mjs', 'jsx']);

/** The code of the agent's answer (see the file header); null when the text has no fenced block. */
export function extractCode(text: string): string | null {
  let lastJs: string | null = null;
  let last: string | null = null;
  for (const m of text.matchAll(FENCE)) {
    last = m[2];
    if (JS.has(m[1].toLowerCase())) lastJs = m[2];
  }
  return lastJs ?? last;
}

export type CodeReward = 'pass_rate' | 'all_pass';

export interface CodeEnvOptions extends EnvOptions {
  /** JSONL (or a JSON array) of {prompt, entryPoint, tests: [{input: [...args], output}]}; default: the built-in tasks. */
  data?: string | unknown[];
  /** A name for messages (the file name). */
  source?: string;
  split?: 'train' | 'test' | 'all';
  /** Fraction of tasks in test when they carry no split field. Default 0.2. */
  testFraction?: number;
  splitSeed?: number;
  reward?: CodeReward;
  /** Milliseconds a candidate may run (loading and all tests). Default 2000. */
  timeLimitMs?: number;
  /** The sandbox's heap limit in MiB. Default 64. */
  memoryMb?: number;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Checks one task record; returns the task or what is wrong with it. */
function checkTask(raw: unknown, index: number): CodeTask | string {
  if (!isObject(raw)) return 'not an object';
  const prompt = raw.prompt;
  if (typeof prompt !== 'string' || !prompt.trim()) return '"prompt" must be a non-empty string';
  const entry = raw.entryPoint ?? raw.entry_point;
  if (typeof entry !== 'string' || !/^[A-Za-z_$][\w$]*$/.test(entry))
    return '"entryPoint" must be the name of the function to call (a JavaScript identifier)';
  const tests = raw.tests;
  if (!Array.isArray(tests) || tests.length === 0) return '"tests" must be a non-empty array of {input: [...arguments], output}';
  for (const [i, x] of tests.entries()) {
    if (!isObject(x) || !Array.isArray(x.input) || !('output' in x)) return `tests[${i}] must be {input: [...arguments], output}`;
  }
  const split = raw.split;
  if (split !== undefined && split !== 'train' && split !== 'test')
    return `"split" must be "train" or "test", got ${JSON.stringify(split)}`;
  const id = raw.id ?? index + 1;
  if (typeof id !== 'string' && typeof id !== 'number') return '"id" must be a string or a number';
  return {
    id: String(id),
    prompt,
    entryPoint: entry,
    tests: tests.map((x) => ({ input: x.input as unknown[], output: x.output })),
    ...(split ? { split } : {}),
  };
}

/** Parses code tasks from JSONL (one task per line) or a JSON array; errors name the line (or record). */
export function parseCodeTasks(data: string | unknown[], source = 'code tasks'): CodeTask[] {
  let raws: Array<{ raw: unknown; where: string }>;
  if (typeof data === 'string') {
    const body = data.replace(/^\uFEFF/, '');
    if (body.trimStart().startsWith('[')) {
      let arr: unknown;
      try {
        arr = JSON.parse(body);
      } catch (e) {
        envFail('DATASET_PARSE', `${source}: invalid JSON (${(e as Error).message})`);
      }
      raws = (arr as unknown[]).map((raw, i) => ({ raw, where: `record ${i + 1}` }));
    } else {
      raws = [];
      for (const [i, l] of body.split(/\r?\n/).entries()) {
        if (!l.trim()) continue;
        try {
          raws.push({ raw: JSON.parse(l), where: `line ${i + 1}` });
        } catch (e) {
          envFail('DATASET_PARSE', `${source}, line ${i + 1}: not valid JSON (${(e as Error).message})`);
        }
      }
    }
  } else if (Array.isArray(data)) raws = data.map((raw, i) => ({ raw, where: `record ${i + 1}` }));
  else envFail('ENV_OPTIONS', `code: options.data must be JSONL text or an array of tasks, got ${typeof data}`);
  if (raws.length === 0) envFail('DATASET_EMPTY', `${source}: no tasks`);
  const bad: string[] = [];
  const tasks: CodeTask[] = [];
  raws.forEach(({ raw, where }, i) => {
    const r = checkTask(raw, i);
    if (typeof r === 'string') bad.push(`${where}: ${r}`);
    else tasks.push(r);
  });
  if (bad.length)
    envFail('CODE_TASK', `${source}: ${bad.length} task${bad.length > 1 ? 's are' : ' is'} malformed:\n  ${bad.slice(0, 10).join('\n  ')}`);
  return tasks;
}

/** The observation's task text: the prompt and the answer format. */
export function codePrompt(task: CodeTask): string {
  return `${task.prompt}\nAnswer with the complete JavaScript function \`${task.entryPoint}\` in a \`\`\`js code block.`;
}

function feedbackOf(run: CodeRun): string {
  if (run.reason !== null) return `judge: no test passed (${run.reason})`;
  if (run.passed === run.total) return `judge: all ${run.total} tests passed`;
  const first = run.tests.find((x) => !x.pass)?.detail;
  return `judge: ${run.passed} of ${run.total} tests passed; first failure: ${first}`;
}

export class CodeEnv implements AsyncEnv {
  readonly name = 'code';
  readonly horizon: number;
  private current: CodeTask | null = null;
  private turn = 0;
  private done = false;

  constructor(
    readonly tasks: readonly CodeTask[],
    horizon: number | undefined,
    private readonly reward: CodeReward,
    private readonly limits: CodeLimits,
    /** The session's sandbox for candidates (its Envs' runner). */
    private readonly runner: CodeRunner,
  ) {
    this.horizon = checkHorizon('code', horizon);
  }

  reset(seed: number): ResetResult {
    this.current = this.tasks[Rng.fromSeed(`code:${seed}`).int(this.tasks.length)];
    this.turn = 0;
    this.done = false;
    return {
      observation: { task: codePrompt(this.current) },
      info: { id: this.current.id, entryPoint: this.current.entryPoint, tests: this.current.tests.length, seed },
    };
  }

  async step(actions: Record<string, string>, options: StepOptions = {}): Promise<StepResult> {
    const task = this.current;
    if (!task) envFail('ENV_STATE', 'code: step() called before reset()');
    if (this.done) envFail('ENV_STATE', `code: step() called after the episode ended (turn ${this.turn} of ${this.horizon})`);
    const roles = Object.keys(actions);
    if (roles.length === 0) envFail('ENV_ACTIONS', 'code: step() got no actions');
    for (const r of roles) {
      if (typeof actions[r] !== 'string') envFail('ENV_ACTIONS', `code: the action of "${r}" is ${typeof actions[r]}, not a string`);
    }
    const answering = roles.filter((r) => !options.answerRoles || options.answerRoles.includes(r));
    const runs = new Map<string, CodeRun>(); // one sandbox run per distinct program
    const answers: Record<string, AgentAnswer> = {};
    let team: { code: string; run: CodeRun } | null = null;
    for (const r of answering) {
      const code = extractCode(actions[r]);
      if (code === null) {
        answers[r] = { answer: null, correct: false, score: 0 };
        continue;
      }
      let run = runs.get(code);
      if (!run) {
        run = await this.runner.run(code, task.entryPoint, task.tests, this.limits);
        runs.set(code, run);
      }
      answers[r] = { answer: code, correct: run.passed === run.total, score: run.passed / run.total };
      team = { code, run };
    }
    this.turn++;
    const run = team?.run ?? null;
    const correct = run !== null && run.passed === run.total;
    this.done = correct || this.turn >= this.horizon;
    const teamReward = run === null ? 0 : this.reward === 'all_pass' ? (correct ? 1 : 0) : run.passed / run.total;
    const rewards: Record<string, number> = {};
    for (const r of roles) rewards[r] = teamReward;
    return {
      teamReward,
      rewards,
      done: this.done,
      feedback: run ? feedbackOf(run) : 'judge: no code found (put the function in a ```js code block)',
      correct,
      answers,
      info: {
        turn: this.turn,
        id: task.id,
        passed: run?.passed ?? 0,
        total: task.tests.length,
        reason: run ? run.reason : 'no code block',
      },
    };
  }
}

function positive(name: string, v: unknown, fallback: number, max: number): number {
  if (v === undefined) return fallback;
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0 || v > max)
    envFail('ENV_OPTIONS', `code: ${name} must be a number in (0, ${max}], got ${JSON.stringify(v)}`);
  return v;
}

/** A code env whose candidates run on `runner` (the session's Envs' runner). */
export function createCodeEnv(runner: CodeRunner, options: CodeEnvOptions = {}): CodeEnv {
  const source = options.source ?? 'code tasks';
  const all = options.data === undefined ? BUILTIN_CODE_TASKS : parseCodeTasks(options.data, source);
  const which = options.split ?? 'train';
  if (which !== 'train' && which !== 'test' && which !== 'all')
    envFail('ENV_OPTIONS', `code: split must be "train", "test" or "all", got ${JSON.stringify(which)}`);
  const tasks =
    which === 'all' ? all : splitDataset(all, { testFraction: options.testFraction ?? 0.2, splitSeed: options.splitSeed })[which];
  if (tasks.length === 0) throw new EnvError('DATASET_EMPTY', `${source}: the ${which} split is empty (${all.length} tasks in all)`);
  const reward = options.reward ?? 'pass_rate';
  if (reward !== 'pass_rate' && reward !== 'all_pass')
    envFail('ENV_OPTIONS', `code: reward must be "pass_rate" or "all_pass", got ${JSON.stringify(reward)}`);
  const limits = {
    timeMs: positive('timeLimitMs', options.timeLimitMs, DEFAULT_CODE_LIMITS.timeMs, 60_000),
    memoryMb: positive('memoryMb', options.memoryMb, DEFAULT_CODE_LIMITS.memoryMb, 4096),
  };
  return new CodeEnv(tasks, options.horizon, reward, limits, runner);
}
