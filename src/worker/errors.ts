// The worker's own error codes (the layers below have theirs: GpuError, ModelFileError, EnvError,
// ConfigError, MarftError, CheckpointError; a run's NO_RUN and BUSY, an export's NO_AGENT and
// ADAPTER_MISMATCH are MarftErrors); each with a hint saying what to do next.

import { CodedError } from '../common/errors.ts';
import type { EngineErrorCode } from '../marft/errors.ts';

export type WorkerErrorCode =
  | 'MODEL_FETCH' // the built-in model could not be fetched
  | 'MODEL_FOLDER' // a picked folder is not a model folder, or a local model is gone
  | 'MODEL_TOO_LARGE' // the model does not fit the browser's memory or the device's limits
  | 'NO_TOKENIZER' // the model folder has no tokenizer.json
  | 'STORAGE_FULL' // OPFS quota
  | 'NO_EPISODES'; // the inspector before any iteration

const HINTS: Record<WorkerErrorCode, string> = {
  MODEL_FETCH: 'The built-in model is served from public/models/marft-tiny/; check that the folder was deployed with the app, or pick a local model folder.',
  MODEL_FOLDER: 'Pick a Hugging Face model folder (config.json, model.safetensors or its index, tokenizer.json) with the folder picker.',
  MODEL_TOO_LARGE: 'Pick a smaller model (a few hundred million parameters at most in 16-bit), or run the CLI on a machine with a larger GPU.',
  NO_TOKENIZER: 'The folder needs tokenizer.json (and tokenizer_config.json for the chat template); save them with tokenizer.save_pretrained(dir).',
  STORAGE_FULL: 'Free some browser storage: the Runs tab\'s Storage panel shows what each run and local model takes and deletes old ones; then retry.',
  NO_EPISODES: 'Train at least one iteration first; the inspector shows the last iteration\'s episodes.',
};

export class WorkerFail extends CodedError<WorkerErrorCode> {
  constructor(code: WorkerErrorCode, message: string, hint = HINTS[code]) {
    super('WorkerFail', code, message, hint);
  }
}

/**
 * Every code an error or notice reaching the front-end through the worker API can carry: the engine's and
 * the worker's catalogues, INTERNAL (an error that came without a code), and the codes the worker sets on
 * notices and inspector errors of its own (ROLLBACK, INSPECT_RANGE, DEMO_COPY: the read-only demo run continued in a copy).
 */
export type AnyErrorCode = EngineErrorCode | WorkerErrorCode | 'INTERNAL' | 'ROLLBACK' | 'INSPECT_RANGE' | 'DEMO_COPY';
