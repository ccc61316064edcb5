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
  | 'HUB_REPO' // a typed Hub model id is not owner/name
  | 'HUB_NOT_FOUND' // the Hub has no such repo (or file)
  | 'HUB_GATED' // the repo is gated or private (HTTP 401/403)
  | 'HUB_NO_WEIGHTS' // the repo has no config.json or no safetensors the lab reads
  | 'HUB_NETWORK' // the Hub could not be reached, or a download broke off, after retries
  | 'HUB_SIZE' // a downloaded file's size or sha256 differs from what the Hub lists
  | 'NO_EPISODES' // the inspector before any iteration
  | 'LOG_INVALID'; // a training log to overlay is not metrics lines or a state.json

const HINTS: Record<WorkerErrorCode, string> = {
  MODEL_FETCH:
    'The built-in model is served from public/models/marft-tiny/; check that the folder was deployed with the app, or pick a local model folder.',
  MODEL_FOLDER: 'Pick a Hugging Face model folder (config.json, model.safetensors or its index, tokenizer.json) with the folder picker.',
  MODEL_TOO_LARGE:
    'Pick a smaller model (a few hundred million parameters at most in 16-bit), or run the CLI on a machine with a larger GPU.',
  NO_TOKENIZER:
    'The folder needs tokenizer.json (and tokenizer_config.json for the chat template); save them with tokenizer.save_pretrained(dir).',
  STORAGE_FULL:
    "Free some browser storage: the Runs tab's Storage panel shows what each run and local model takes and deletes old ones; then retry.",
  HUB_REPO: "Type the model's id as the Hub shows it above its page: owner/name, e.g. Qwen/Qwen2.5-0.5B-Instruct.",
  HUB_NOT_FOUND:
    'Check the spelling of the repo id on huggingface.co (it is case-sensitive); a private repo also answers 404 without a token.',
  HUB_GATED:
    "Accept the model's terms on its Hub page and paste an access token (huggingface.co/settings/tokens) into the token field: the lab keeps it only in memory. Or download the folder yourself and pick it.",
  HUB_NO_WEIGHTS:
    'The lab reads transformers repos with config.json and model.safetensors (or its sharded index); pick a repo that has them, e.g. HuggingFaceTB/SmolLM2-135M-Instruct.',
  HUB_NETWORK: 'Check the connection and press Download again: what arrived is kept and the download resumes where it stopped.',
  HUB_SIZE:
    'The file was dropped; press Download again to fetch it anew. If it happens again the repo changed while downloading, or a proxy alters the files.',
  NO_EPISODES: "Train at least one iteration first; the inspector shows the last iteration's episodes.",
  LOG_INVALID:
    "Pick the JSON lines `marft train --json` printed (one iteration a line, e.g. a learning-matrix <row>-s<seed>.jsonl) or a checkpoint's state.json.",
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

/** NO_EPISODES for an iteration the run does not keep, numbered from 1 as the lab shows iterations (0-based inside). */
export const notKept = (iteration: number, kept: readonly number[]): WorkerFail =>
  new WorkerFail('NO_EPISODES', `iteration ${iteration + 1} is not kept (kept: ${kept.map((i) => i + 1).join(', ') || 'none'})`);
