// The catalogue of environment errors: every problem creating an environment, reading a dataset or
// stepping an episode is an EnvError with a code, a message that names the problem (and the line of a
// dataset file), and a hint saying what to do next. Kept in src/envs so that this layer does not import
// from src/marft above it.

import { CodedError } from '../common/errors.ts';

export type EnvErrorCode =
  | 'ENV_UNKNOWN' // creating an env under a name nobody registered
  | 'ENV_EXISTS' // Envs.register with a name already taken
  | 'ENV_OPTIONS' // options of an environment are invalid
  | 'ENV_STATE' // step() before reset(), or after the episode ended
  | 'ENV_ACTIONS' // step() with no action, or a non-string action
  | 'DATASET_PARSE' // the dataset text is not JSON / JSONL
  | 'DATASET_FIELD' // a record lacks problem/answer, or has an ambiguous or wrongly typed field
  | 'DATASET_EMPTY' // no records, or none in the requested split
  | 'DATASET_SPLIT' // a split field with a value other than train/test, or split fields on some records only
  | 'ENV_MODULE_SYNTAX' // an environment module does not parse, imports, or has no default export
  | 'ENV_MODULE_THROW' // the module's factory, reset or step threw (or rejected)
  | 'ENV_MODULE_TIMEOUT' // a call ran past the time limit (an infinite loop, a promise that never settles)
  | 'ENV_MODULE_MEMORY' // the module ran past its memory limit
  | 'ENV_MODULE_RESULT' // a malformed result: a missing or mistyped field, not JSON-serialisable
  | 'ENV_MODULE_NONDETERMINISTIC' // reset(seed) or step gave different results for the same seed and actions
  | 'ENV_MODULE_UNAVAILABLE' // no sandbox on this platform, or it could not be started
  | 'CODE_TASK'; // a code task record lacks its prompt, entry point or tests

const HINTS: Record<EnvErrorCode, string> = {
  ENV_UNKNOWN:
    "Use one of the registered environments, or register yours on the session's Envs (envs.register(name, factory)) before a run names it.",
  ENV_EXISTS: 'Pick another name, or pass { replace: true } to envs.register to override the built-in one on purpose.',
  ENV_OPTIONS: 'Check the environment options in the run config (env.options).',
  ENV_STATE: 'Call reset(seed) before step(), and start a new episode with reset() once step() returned done.',
  ENV_ACTIONS: 'Pass step() an object {role: generated text} with one entry per agent that acted this turn.',
  DATASET_PARSE: 'Give a JSON array of objects, or JSONL: one JSON object per line, e.g. {"problem": "1+1?", "answer": "2"}.',
  DATASET_FIELD:
    'Each record needs a "problem" (or "question") string and an "answer" string or number (a MATH-style "solution" with a \\boxed{} answer also works).',
  DATASET_EMPTY: 'Add records to the dataset, or lower the test fraction / pick the other split.',
  DATASET_SPLIT: 'Give every record "split": "train" or "test", or give none and let the lab split by a seeded shuffle.',
  ENV_MODULE_SYNTAX:
    'An environment module is one self-contained ES module (no imports) whose default export is a factory (options) => env; start from the template in README.md.',
  ENV_MODULE_THROW:
    'Fix the error in the module (run `marft env test --module FILE` to reproduce it without a model); the run paused at its last checkpoint and continues once the module is fixed.',
  ENV_MODULE_TIMEOUT:
    'Make every reset/step finish within the time limit (no endless loops, every promise settles); the sandbox was stopped and a new one starts on the next call.',
  ENV_MODULE_MEMORY:
    'Keep what the module allocates small (it runs with a memory limit); the sandbox was stopped and a new one starts on the next call.',
  ENV_MODULE_RESULT:
    'reset(seed) must return { observation: { task: string }, info?: object } and step() { teamReward: number, done: boolean, feedback: string, ... }, all JSON-serialisable (see README.md, environment modules).',
  ENV_MODULE_NONDETERMINISTIC:
    'Derive all randomness from the seed given to reset (no Math.random, Date.now or state kept between episodes), so the same seed and actions always give the same results.',
  CODE_TASK:
    'Give each code task (one JSON object per line) {"prompt": "...", "entryPoint": "fnName", "tests": [{"input": [arguments], "output": expected}]} (see README.md, code environment).',
  ENV_MODULE_UNAVAILABLE:
    'Environment modules run in a Web Worker (browser) or a worker thread (Node 20+); run the lab in Chrome or Edge, or the CLI in Node.',
};

export class EnvError extends CodedError<EnvErrorCode> {
  constructor(code: EnvErrorCode, message: string, hint = HINTS[code]) {
    super('EnvError', code, message, hint);
  }
}

/** Throws an EnvError; a one-liner for validation code. */
export function envFail(code: EnvErrorCode, message: string): never {
  throw new EnvError(code, message);
}
