// The catalogue of model-file errors: every problem reading or writing a model folder, a safetensors file,
// a config, a tokenizer or a PEFT adapter is a ModelFileError with a code, a message that names the file
// and the problem, and a hint saying what to do next.

import { CodedError } from '../common/errors.ts';
import { parseJson } from '../common/json.ts';

export type ModelFileErrorCode =
  | 'FILE_MISSING' // a required file is not in the folder
  | 'FILE_READ' // the file could not be read
  | 'ST_TOO_SHORT' // safetensors: fewer than 8 bytes
  | 'ST_HEADER_SIZE' // safetensors: header length beyond the file or absurd
  | 'ST_HEADER_JSON' // safetensors: header is not UTF-8 JSON
  | 'ST_HEADER_SCHEMA' // safetensors: header JSON is not {name: {dtype, shape, data_offsets}}
  | 'ST_DTYPE' // safetensors: unknown or unsupported dtype
  | 'ST_SHAPE' // safetensors: bad dims, or byte size not matching shape x dtype
  | 'ST_OFFSETS' // safetensors: offsets out of bounds, unsorted, overlapping, or with gaps
  | 'ST_TRUNCATED' // safetensors: data shorter than the header says
  | 'ST_TRAILING' // safetensors: bytes after the last tensor
  | 'ST_WRITE' // safetensors: invalid input to the writer
  | 'TENSOR_MISSING' // a tensor name not in the file / index
  | 'INDEX_INVALID' // model.safetensors.index.json malformed
  | 'CONFIG_INVALID' // config.json malformed: wrong type or missing field
  | 'CONFIG_UNSUPPORTED' // config.json asks for something the lab does not implement
  | 'WEIGHTS_MISMATCH' // weights missing or with wrong shapes for the config
  | 'TOKENIZER_INVALID' // tokenizer.json / tokenizer_config.json malformed
  | 'CHAT_TEMPLATE' // no chat template, or it fails to parse / render
  | 'PEFT_INVALID' // adapter_config.json / adapter_model.safetensors malformed or inconsistent
  | 'PEFT_UNSUPPORTED'; // a PEFT feature the lab does not implement (DoRA, other peft types, ...)

const HINTS: Record<ModelFileErrorCode, string> = {
  FILE_MISSING: 'Pick the whole Hugging Face model folder (config.json, model.safetensors or its index, tokenizer.json).',
  FILE_READ: 'Check that the file exists and is readable, then retry.',
  ST_TOO_SHORT: 'The file is not a safetensors file or is empty; download it again.',
  ST_HEADER_SIZE: 'The file is not a safetensors file, or it is truncated; download it again.',
  ST_HEADER_JSON: 'The safetensors header is corrupt; download the file again.',
  ST_HEADER_SCHEMA:
    'The safetensors header is corrupt or was written by a non-conforming tool; re-save it with the `safetensors` Python library.',
  ST_DTYPE:
    'The lab reads F32, F16 and BF16 weights (I32, I64, U8 and a few others for metadata). Convert the model, e.g. `model.to(torch.bfloat16).save_pretrained(dir)`.',
  ST_SHAPE: 'The safetensors header is inconsistent; re-save the file with the `safetensors` Python library.',
  ST_OFFSETS: 'The safetensors header is inconsistent; re-save the file with the `safetensors` Python library.',
  ST_TRUNCATED: 'The file is truncated (an interrupted download?); download it again.',
  ST_TRAILING: 'The file has extra bytes after its data; re-save it with the `safetensors` Python library.',
  ST_WRITE: 'This is a bug in the caller: check the names, shapes and data lengths passed to writeSafetensors.',
  TENSOR_MISSING: 'Check the tensor name against the file (or the weight_map of model.safetensors.index.json).',
  INDEX_INVALID: 'model.safetensors.index.json must be {"weight_map": {"tensor name": "shard file"}}; download it again.',
  CONFIG_INVALID: 'config.json must be a Hugging Face transformers config; download it again.',
  CONFIG_UNSUPPORTED:
    'The lab runs Llama, Qwen2 and SmolLM-family decoders (LlamaForCausalLM, Qwen2ForCausalLM); pick a model of those families.',
  WEIGHTS_MISMATCH: 'The weights do not belong to this config.json; check that all files come from the same model and revision.',
  TOKENIZER_INVALID: 'tokenizer.json must be a Hugging Face `tokenizers` file (save it with `tokenizer.save_pretrained(dir)`).',
  CHAT_TEMPLATE:
    'Use an instruct/chat model whose tokenizer_config.json (or chat_template.jinja) has a chat_template, or fix the template.',
  PEFT_INVALID: 'The adapter must be a PEFT LoRA adapter (adapter_config.json + adapter_model.safetensors) for this base model.',
  PEFT_UNSUPPORTED: 'The lab reads plain LoRA adapters (peft_type LORA, bias none, no DoRA, no rank/alpha patterns, no modules_to_save).',
};

export class ModelFileError extends CodedError<ModelFileErrorCode> {
  readonly file: string;
  constructor(code: ModelFileErrorCode, file: string, message: string, hint = HINTS[code]) {
    super('ModelFileError', code, `${file}: ${message}`, hint);
    this.file = file;
  }
}

/** Throws a ModelFileError; a one-liner for validation code. */
export function fail(code: ModelFileErrorCode, file: string, message: string): never {
  throw new ModelFileError(code, file, message);
}

/** parseJson (JSON.parse with a nesting cap) that fails with a ModelFileError naming the file (and the position when the engine gives it). */
export function parseJsonFile(text: string, file: string, code: ModelFileErrorCode): unknown {
  try {
    return parseJson(text);
  } catch (e) {
    return fail(code, file, `invalid JSON (${(e as Error).message})`);
  }
}

/** Decodes UTF-8 strictly (no replacement characters), failing with a ModelFileError. */
export function decodeUtf8(bytes: Uint8Array, file: string, code: ModelFileErrorCode): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return fail(code, file, 'not valid UTF-8 text');
  }
}

export const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
