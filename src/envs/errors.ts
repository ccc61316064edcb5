// The catalogue of environment errors: every problem creating an environment, reading a dataset or
// stepping an episode is an EnvError with a code, a message that names the problem (and the line of a
// dataset file), and a hint saying what to do next. Kept in src/envs so that this layer does not import
// from src/marft above it.

import { CodedError } from '../common/errors.ts';

export type EnvErrorCode =
  | 'ENV_UNKNOWN' // createEnv with a name nobody registered
  | 'ENV_EXISTS' // registerEnv with a name already taken
  | 'ENV_OPTIONS' // options of an environment are invalid
  | 'ENV_STATE' // step() before reset(), or after the episode ended
  | 'ENV_ACTIONS' // step() with no action, or a non-string action
  | 'DATASET_PARSE' // the dataset text is not JSON / JSONL
  | 'DATASET_FIELD' // a record lacks problem/answer, or has an ambiguous or wrongly typed field
  | 'DATASET_EMPTY' // no records, or none in the requested split
  | 'DATASET_SPLIT'; // a split field with a value other than train/test, or split fields on some records only

const HINTS: Record<EnvErrorCode, string> = {
  ENV_UNKNOWN: 'Use one of the registered environments, or call registerEnv(name, factory) in your environment file and import it before createEnv.',
  ENV_EXISTS: 'Pick another name, or pass { replace: true } to registerEnv to override the built-in one on purpose.',
  ENV_OPTIONS: 'Check the environment options in the run config (env.options).',
  ENV_STATE: 'Call reset(seed) before step(), and start a new episode with reset() once step() returned done.',
  ENV_ACTIONS: 'Pass step() an object {role: generated text} with one entry per agent that acted this turn.',
  DATASET_PARSE: 'Give a JSON array of objects, or JSONL: one JSON object per line, e.g. {"problem": "1+1?", "answer": "2"}.',
  DATASET_FIELD: 'Each record needs a "problem" (or "question") string and an "answer" string or number (a MATH-style "solution" with a \\boxed{} answer also works).',
  DATASET_EMPTY: 'Add records to the dataset, or lower the test fraction / pick the other split.',
  DATASET_SPLIT: 'Give every record "split": "train" or "test", or give none and let the lab split by a seeded shuffle.',
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
