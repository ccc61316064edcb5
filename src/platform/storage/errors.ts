// The catalogue of checkpoint errors: every problem saving, loading, importing or exporting a checkpoint
// is a CheckpointError with a code, a message that names the file (relative to the checkpoint folder, or
// the store path) and the problem, and a hint saying what to do next — the style of src/model/errors.ts.

import { CodedError } from '../../common/errors.ts';

export type CheckpointErrorCode =
  | 'NO_CHECKPOINT' // the folder has neither a `latest` pointer nor a state.json
  | 'POINTER_INVALID' // `latest` does not name a checkpoint folder of the run
  | 'FILE_MISSING' // a file the checkpoint lists (or needs) is not there
  | 'FILE_TRUNCATED' // a file is shorter than state.json records
  | 'FILE_SIZE' // a file is longer than state.json records
  | 'CHECKSUM' // a file's SHA-256 differs from the one state.json records
  | 'STATE_INVALID' // state.json is malformed, of another format or version, or fails its own checksum
  | 'CONFIG_INVALID' // config.json is not a valid run config
  | 'MODEL_MISMATCH' // the checkpoint was made for a base model of other dimensions
  | 'TENSOR_MISMATCH' // a tensor is missing, unexpected, out of order or of the wrong shape
  | 'ADAPTER_INVALID' // an agent's PEFT adapter does not fit the run's LoRA settings
  | 'STORAGE' // the storage backend failed (read, write, rename, remove)
  | 'PATH_INVALID' // a path with "..", ".", an empty segment, a backslash or a drive letter
  | 'ZIP_INVALID' // the bytes are not a readable zip, or an entry is malformed
  | 'ZIP_TOO_LARGE'; // the zip expands beyond the size or entry cap (a zip bomb?)

const HINTS: Record<CheckpointErrorCode, string> = {
  NO_CHECKPOINT: 'Point at a run folder (it holds `latest` and ckpt-* folders) or at one checkpoint folder (it holds state.json).',
  POINTER_INVALID:
    'The `latest` file should hold the name of a ckpt-* folder next to it; delete it to fall back to picking a checkpoint folder by hand.',
  FILE_MISSING: 'The checkpoint is incomplete; load an earlier checkpoint of the run (the ckpt-* folders), or re-import the whole zip.',
  FILE_TRUNCATED:
    'The file was cut short (an interrupted copy or download?); load an earlier checkpoint of the run or copy the file again.',
  FILE_SIZE: 'The file was changed after the checkpoint was written; load an earlier checkpoint of the run or copy the file again.',
  CHECKSUM: 'The file is corrupted or was edited after saving; load an earlier checkpoint of the run or copy the file again.',
  STATE_INVALID: 'state.json is damaged or comes from another program or version; load an earlier checkpoint of the run.',
  CONFIG_INVALID: 'config.json is not a valid run config; fix the field named above (it is plain JSON) or load an earlier checkpoint.',
  MODEL_MISMATCH: 'Resume with the same base model the run was trained on (config.json model.path names it).',
  TENSOR_MISMATCH:
    'The checkpoint does not match this version of the lab or this run config; load it with the version that wrote it, or start a new run.',
  ADAPTER_INVALID: 'Each agents/<role>/ folder must hold a PEFT LoRA adapter with the rank, alpha and target modules of config.json lora.',
  STORAGE: "Check that the folder exists, is writable and the disk (or the browser's storage quota) is not full, then retry.",
  PATH_INVALID: 'Checkpoint paths are relative, "/"-separated, with no "..", "." or empty parts.',
  ZIP_INVALID: 'The file is not a zip written by the lab (or it is damaged); download or export it again.',
  ZIP_TOO_LARGE: "The zip expands beyond the lab's cap; it is not a checkpoint of a model that fits in the browser (or it is a zip bomb).",
};

export class CheckpointError extends CodedError<CheckpointErrorCode> {
  /** The file or folder the problem is about ('' when none). */
  readonly file: string;
  constructor(code: CheckpointErrorCode, file: string, message: string, hint = HINTS[code]) {
    super('CheckpointError', code, `${file ? `${file}: ` : ''}${message}`, hint);
    this.file = file;
  }
}

/**
 * Did `e` fail because the disk or the browser's storage quota is full? A QuotaExceededError or ENOSPC, or
 * a store's STORAGE error wrapping one (the stores keep the cause's name or code in the message).
 */
export function isStorageFull(e: unknown): boolean {
  const x = e as { name?: unknown; code?: unknown; message?: unknown } | null;
  if (x?.name === 'QuotaExceededError' || x?.code === 'ENOSPC' || x?.code === 'EDQUOT') return true;
  return typeof x?.message === 'string' && /QuotaExceededError|ENOSPC|EDQUOT/.test(x.message);
}

/** Throws a CheckpointError; a one-liner for validation code. */
export function ckptFail(code: CheckpointErrorCode, file: string, message: string): never {
  throw new CheckpointError(code, file, message);
}
