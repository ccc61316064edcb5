// The UI's error catalogue: a title for every code the layers below raise (their messages and hints
// come with the error), and a fallback hint where an error arrives without one.

import type { WorkerError } from '../worker/api.ts';

const TITLES: Record<string, string> = {
  NO_WEBGPU: 'WebGPU is not available',
  NO_ADAPTER: 'No GPU adapter',
  NO_DEVICE: 'The GPU refused a device',
  DEVICE_LOST: 'The GPU device was lost',
  LIMIT: 'Beyond this GPU\'s limits',
  VALIDATION: 'GPU validation error',
  MODEL_FETCH: 'The built-in model could not be fetched',
  MODEL_FOLDER: 'Not a usable model folder',
  MODEL_TOO_LARGE: 'The model is too large for the browser',
  NO_TOKENIZER: 'The model has no tokenizer',
  FILE_MISSING: 'A file is missing',
  FILE_READ: 'A file could not be read',
  CONFIG_INVALID: 'Invalid configuration',
  CONFIG_UNSUPPORTED: 'Unsupported model architecture',
  WEIGHTS_MISMATCH: 'The weights do not match config.json',
  TOKENIZER_INVALID: 'Unreadable tokenizer',
  DATASET_PARSE: 'The dataset is not valid JSON / JSONL',
  DATASET_FIELD: 'The dataset has bad records',
  DATASET_EMPTY: 'The dataset is empty',
  DATASET_SPLIT: 'Inconsistent dataset splits',
  ENV_MODULE_SYNTAX: 'The environment module does not load',
  ENV_MODULE_THROW: 'The environment module threw',
  ENV_MODULE_TIMEOUT: 'The environment module took too long',
  ENV_MODULE_MEMORY: 'The environment module ran out of memory',
  ENV_MODULE_RESULT: 'The environment module returned a malformed result',
  ENV_MODULE_NONDETERMINISTIC: 'The environment module is not deterministic',
  ENV_MODULE_UNAVAILABLE: 'Environment modules cannot run here',
  RUN_PAUSED: 'The run paused',
  STORAGE: 'Browser storage failed',
  STORAGE_FULL: 'Browser storage is full',
  CHECKSUM: 'A checkpoint file is corrupted',
  ZIP_INVALID: 'Not a checkpoint zip',
  NO_CHECKPOINT: 'No checkpoint found',
  MODEL_MISMATCH: 'The checkpoint belongs to another base model',
  NO_RUN: 'No run loaded',
  BUSY: 'The run is training',
  NO_EPISODES: 'Nothing to inspect yet',
  NO_AGENT: 'No such agent in the run',
  ADAPTER_MISMATCH: 'The adapter does not fit the base model',
  ADAPTER_INVALID: 'An agent\'s adapter is unreadable',
  WORKER: 'The training worker failed',
  INTERNAL: 'Unexpected error',
  IMPORTED: 'Checkpoint imported',
  CHECKPOINT: 'Checkpoint',
};

const FALLBACK_HINT = 'Your runs and checkpoints are kept in this browser; reload the page and resume the run from the Runs tab.';

export const errorTitle = (code: string): string => TITLES[code] ?? code.replace(/_/g, ' ').toLowerCase();
export const errorHint = (e: WorkerError): string | undefined => e.hint ?? (TITLES[e.code] ? undefined : FALLBACK_HINT);
