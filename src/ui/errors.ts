// The UI's error catalogue: a title for every code the layers below raise (their messages and hints
// come with the error), and a fallback hint where an error arrives without one. TITLES is typed against
// the union of all codes, so a code added to any layer's catalogue without a title here fails the typecheck.

import type { AnyErrorCode, WorkerError } from '../worker/api.ts';

/** Codes the UI sets itself, on its own errors and notices. */
type UiCode =
  | 'WORKER'
  | 'DATASET_ARCHIVE'
  | 'IMPORTED'
  | 'CHECKPOINT'
  | 'CONFIG_UNKNOWN'
  | 'CONFIG_RESTORE'
  | 'CONFIG_LOADED'
  | 'CONFIG_COPY'
  | 'CONFIG_STORAGE';

const TITLES: Record<AnyErrorCode | UiCode, string> = {
  // GPU
  NO_WEBGPU: 'WebGPU is not available',
  NO_ADAPTER: 'No GPU adapter',
  NO_DEVICE: 'The GPU refused a device',
  DEVICE_LOST: 'The GPU device was lost',
  LIMIT: "Beyond this GPU's limits",
  VALIDATION: 'GPU validation error',
  SHAPE: 'Mismatched shapes (a bug)',
  RECORDING: 'A GPU recording was misused (a bug)',
  // model files
  FILE_MISSING: 'A file is missing',
  FILE_READ: 'A file could not be read',
  ST_TOO_SHORT: 'Not a safetensors file',
  ST_HEADER_SIZE: 'Not a safetensors file',
  ST_HEADER_JSON: 'Corrupt safetensors header',
  ST_HEADER_SCHEMA: 'Corrupt safetensors header',
  ST_DTYPE: 'Unsupported weight type',
  ST_SHAPE: 'Inconsistent safetensors header',
  ST_OFFSETS: 'Inconsistent safetensors header',
  ST_TRUNCATED: 'A safetensors file is truncated',
  ST_TRAILING: 'A safetensors file has extra bytes',
  ST_WRITE: 'Safetensors could not be written',
  TENSOR_MISSING: 'A tensor is missing',
  INDEX_INVALID: 'Invalid safetensors index',
  CONFIG_INVALID: 'Invalid configuration',
  CONFIG_UNSUPPORTED: 'Unsupported model architecture',
  WEIGHTS_MISMATCH: 'The weights do not match config.json',
  TOKENIZER_INVALID: 'Unreadable tokenizer',
  CHAT_TEMPLATE: 'No usable chat template',
  PEFT_INVALID: 'Invalid PEFT adapter',
  PEFT_UNSUPPORTED: 'Unsupported PEFT adapter',
  // environments
  ENV_UNKNOWN: 'Unknown environment',
  ENV_EXISTS: 'The environment name is taken',
  ENV_OPTIONS: 'Invalid environment options',
  ENV_STATE: 'The environment is not in an episode',
  ENV_ACTIONS: 'Invalid environment actions',
  DATASET_PARSE: 'The dataset is not valid JSON / JSONL',
  DATASET_FIELD: 'The dataset has bad records',
  DATASET_EMPTY: 'The dataset is empty',
  DATASET_SPLIT: 'Inconsistent dataset splits',
  // run config
  GRAPH_EMPTY: 'The agent graph is empty',
  GRAPH_ROLE: 'Invalid role name',
  GRAPH_PROFILE: 'Invalid agent profile',
  GRAPH_EDGE: 'Invalid edge',
  GRAPH_CYCLE: 'The agent graph has a cycle',
  GRAPH_NO_ANSWER: 'No agent gives the answer',
  GRAPH_DYNAMIC: 'Invalid dynamic topology',
  CONFIG_JSON: 'The run config is not JSON',
  CONFIG_LINK: 'The config link cannot be used',
  // environment modules
  ENV_MODULE_SYNTAX: 'The environment module does not load',
  ENV_MODULE_THROW: 'The environment module threw',
  ENV_MODULE_TIMEOUT: 'The environment module took too long',
  ENV_MODULE_MEMORY: 'The environment module ran out of memory',
  ENV_MODULE_RESULT: 'The environment module returned a malformed result',
  ENV_MODULE_NONDETERMINISTIC: 'The environment module is not deterministic',
  ENV_MODULE_UNAVAILABLE: 'Environment modules cannot run here',
  CODE_TASK: 'A code task is malformed',
  // algorithm
  CREDIT: 'Credit assignment failed',
  RUN_PAUSED: 'Training paused',
  ITERATION_ABANDONED: 'The iteration in flight was abandoned',
  // checkpoints
  NO_CHECKPOINT: 'No checkpoint found',
  POINTER_INVALID: 'The latest-checkpoint pointer is invalid',
  FILE_TRUNCATED: 'A checkpoint file is truncated',
  FILE_SIZE: 'A checkpoint file was changed',
  CHECKSUM: 'A checkpoint file is corrupted',
  STATE_INVALID: 'The checkpoint state is damaged',
  MODEL_MISMATCH: 'The checkpoint belongs to another base model',
  TENSOR_MISMATCH: 'The checkpoint does not fit this run',
  ADAPTER_INVALID: "An agent's adapter is unreadable",
  STORAGE: 'Browser storage failed',
  PATH_INVALID: 'Invalid checkpoint path',
  ZIP_INVALID: 'Not a checkpoint zip',
  ZIP_TOO_LARGE: 'The zip is too large',
  // worker
  MODEL_FETCH: 'The built-in model could not be fetched',
  MODEL_FOLDER: 'Not a usable model folder',
  MODEL_TOO_LARGE: 'The model is too large for the browser',
  NO_TOKENIZER: 'The model has no tokenizer',
  STORAGE_FULL: 'Browser storage is full',
  HUB_REPO: 'Not a Hub model id',
  HUB_NOT_FOUND: 'No such model on the Hub',
  HUB_GATED: 'The Hub model is gated or private',
  HUB_NO_WEIGHTS: 'The Hub repo has no usable weights',
  HUB_NETWORK: 'The Hub download failed',
  HUB_SIZE: 'A downloaded file does not match the Hub',
  NO_RUN: 'No run loaded',
  BUSY: 'The run is training',
  MODEL_IN_USE: 'The model is in use',
  NO_EPISODES: 'Nothing to inspect yet',
  LOG_INVALID: 'Not a training log',
  NO_AGENT: 'No such agent in the run',
  TRY_INPUT: 'The try cannot start',
  ADAPTER_MISMATCH: 'The adapter does not fit the base model',
  INTERNAL: 'Unexpected error',
  ROLLBACK: 'Rolled back to the last checkpoint',
  INSPECT_RANGE: 'No such episode',
  EPISODES_INVALID: 'Unreadable recorded episodes',
  EPISODES_GROUP: 'A GRPO group has the wrong size',
  DEMO_INVALID: 'The demo run is missing or unreadable',
  DEMO_COPY: 'The demo run continues in a copy',
  // the UI's own
  WORKER: 'The training worker failed',
  DATASET_ARCHIVE: 'An archive, not a dataset',
  IMPORTED: 'Checkpoint imported',
  CHECKPOINT: 'Checkpoint',
  CONFIG_UNKNOWN: 'Unknown preset run config',
  CONFIG_RESTORE: 'The saved builder could not be restored',
  CONFIG_LOADED: 'Config loaded',
  CONFIG_COPY: 'Editing a copy',
  CONFIG_STORAGE: 'The builder is not saved in this browser',
};

const FALLBACK_HINT = 'Your runs and checkpoints are kept in this browser; reload the page and resume the run from the Runs tab.';

const isKnown = (code: string): code is keyof typeof TITLES => Object.hasOwn(TITLES, code);

/** The title of a code; a code from outside every catalogue (an exception's own code) is spelled out. */
export const errorTitle = (code: string): string => (isKnown(code) ? TITLES[code] : code.replace(/_/g, ' ').toLowerCase());
export const errorHint = (e: WorkerError): string | undefined => e.hint ?? (isKnown(e.code) ? undefined : FALLBACK_HINT);
