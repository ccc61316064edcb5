// A model folder, wherever it lives: the ModelFiles interface (relative paths with '/', read as bytes or text),
// its browser implementation from a FileList / File[] (a directory picker's webkitRelativePath, or loose
// dropped files), an in-memory one (tests, zips, OPFS copies), and loadModelFiles, which reads a Hugging Face
// folder: config.json, model.safetensors or model.safetensors.index.json + shards, and the tokenizer files
// when present (tokenizer.json, tokenizer_config.json, chat_template.jinja, generation_config.json).
// The Node implementation (node:fs) lives in node-files.ts so this module stays browser-safe.
// Weights are views into each file's bytes: a file is held in memory whole (no streaming of >2 GB shards).

import { assertWeights, checkWeights, parseModelConfig, type ModelConfig, type WeightReport } from './config.ts';
import { decodeUtf8, fail, isObject, ModelFileError, parseJsonFile } from './errors.ts';
import { parseShardIndex, parseSafetensors, shardFiles, SHARD_INDEX_FILE, type SafetensorsDType } from './safetensors.ts';
import { loadTokenizer, type LoadedTokenizer } from './tokenizer.ts';

export interface ModelFiles {
  /** The folder's name (for messages and the UI). */
  readonly name: string;
  /** Every file, as a relative path with '/' separators. */
  list(): string[];
  read(path: string): Promise<Uint8Array>;
  readText(path: string): Promise<string>;
}

/** Normalises a relative path ('\\' -> '/', no leading './' or '/'), refusing '..'. */
export function normalizePath(p: string): string {
  const parts = p
    .replace(/\\/g, '/')
    .split('/')
    .filter((s) => s !== '' && s !== '.');
  if (parts.includes('..')) fail('FILE_READ', p, 'path leaves the model folder');
  return parts.join('/');
}

/** A ModelFiles over a path -> getter map; `read` of an unlisted path fails with FILE_MISSING. */
function fromGetters(name: string, getters: Map<string, () => Promise<Uint8Array>>): ModelFiles {
  const get = (path: string): (() => Promise<Uint8Array>) => {
    const g = getters.get(normalizePath(path));
    if (!g) fail('FILE_MISSING', `${name}/${path}`, 'no such file in the folder');
    return g;
  };
  return {
    name,
    list: () => [...getters.keys()],
    read: async (path) => get(path)(),
    readText: async (path) => decodeUtf8(await get(path)(), `${name}/${path}`, 'FILE_READ'),
  };
}

/** In memory: text or bytes per relative path. */
export function memoryFiles(name: string, files: Record<string, Uint8Array | string>): ModelFiles {
  const enc = new TextEncoder();
  const getters = new Map<string, () => Promise<Uint8Array>>();
  for (const [p, v] of Object.entries(files)) {
    const bytes = typeof v === 'string' ? enc.encode(v) : v;
    getters.set(normalizePath(p), async () => bytes);
  }
  return fromGetters(name, getters);
}

/**
 * From a directory picker (<input webkitdirectory>, whose files carry webkitRelativePath "folder/sub/file")
 * or from loose files (drag and drop: the plain file names). The first path component is the folder's name.
 */
export function browserFiles(files: FileList | readonly File[], name?: string): ModelFiles {
  const list = Array.from(files as ArrayLike<File>);
  const getters = new Map<string, () => Promise<Uint8Array>>();
  let folder = name;
  for (const f of list) {
    const rel = (f as File & { webkitRelativePath?: string }).webkitRelativePath || f.name;
    const parts = normalizePath(rel).split('/');
    if (parts.length > 1) {
      folder ??= parts[0];
      parts.shift();
    }
    const path = parts.join('/');
    getters.set(path, async () => {
      try {
        return new Uint8Array(await f.arrayBuffer());
      } catch (e) {
        return fail('FILE_READ', `${folder ?? 'model'}/${path}`, `cannot read (${(e as Error).message})`);
      }
    });
  }
  return fromGetters(folder ?? 'model', getters);
}

export interface WeightEntry {
  dtype: SafetensorsDType;
  shape: readonly number[];
  /** A view into the file's bytes. */
  data: Uint8Array;
  /** The safetensors file it came from. */
  file: string;
}

export interface LoadedModelFiles {
  name: string;
  config: ModelConfig;
  /** config.json as parsed JSON (for fields ModelConfig does not carry). */
  rawConfig: Record<string, unknown>;
  tokenizer?: LoadedTokenizer;
  weights: Map<string, WeightEntry>;
  /** Missing/mis-shaped/unused tensors; `ok` is true after a strict load. */
  report: WeightReport;
}

export interface LoadOptions {
  /** Throw WEIGHTS_MISMATCH when tensors are missing or mis-shaped (default true). */
  strict?: boolean;
  /** Skip the tokenizer even if present. */
  skipTokenizer?: boolean;
}

/** Reads a Hugging Face model folder. Every error names the file and the problem. */
export async function loadModelFiles(files: ModelFiles, options: LoadOptions = {}): Promise<LoadedModelFiles> {
  const present = new Set(files.list());
  const at = (p: string): string => `${files.name}/${p}`;
  const readJson = async (p: string, code: 'CONFIG_INVALID' | 'INDEX_INVALID' | 'TOKENIZER_INVALID'): Promise<unknown> =>
    parseJsonFile(decodeUtf8(await files.read(p), at(p), code), at(p), code);

  if (!present.has('config.json'))
    fail('FILE_MISSING', at('config.json'), 'config.json is missing: this is not a Hugging Face model folder');
  const rawConfig = await readJson('config.json', 'CONFIG_INVALID');
  const config = parseModelConfig(rawConfig, at('config.json'));

  // Weights: a single file, or shards through the index.
  let tensorFiles: string[];
  let index: Map<string, string> | null = null;
  if (present.has('model.safetensors')) {
    tensorFiles = ['model.safetensors'];
  } else if (present.has(SHARD_INDEX_FILE)) {
    index = parseShardIndex(await readJson(SHARD_INDEX_FILE, 'INDEX_INVALID'), at(SHARD_INDEX_FILE));
    tensorFiles = shardFiles(index);
    for (const f of tensorFiles) if (!present.has(f)) fail('FILE_MISSING', at(f), `shard listed in ${SHARD_INDEX_FILE} is missing`);
  } else {
    const bin = [...present].some((p) => /^pytorch_model.*\.bin$/.test(p));
    fail(
      'FILE_MISSING',
      at('model.safetensors'),
      bin
        ? 'the folder has only pytorch_model*.bin pickles; convert them to safetensors (save_pretrained(dir, safe_serialization=True))'
        : `neither model.safetensors nor ${SHARD_INDEX_FILE} is in the folder`,
    );
  }
  const weights = new Map<string, WeightEntry>();
  for (const f of tensorFiles) {
    const st = parseSafetensors(await files.read(f), at(f));
    for (const [name, t] of st.tensors) {
      if (index) {
        const owner = index.get(name);
        if (owner === undefined) continue; // not listed: transformers ignores it too
        if (owner !== f) continue; // the index says another shard holds it
      }
      const prev = weights.get(name);
      if (prev) fail('INDEX_INVALID', at(f), `tensor "${name}" is also in ${prev.file}`);
      weights.set(name, { ...t, file: at(f) });
    }
  }
  if (index) {
    for (const [name, f] of index)
      if (!weights.has(name)) fail('TENSOR_MISSING', at(f), `tensor "${name}" is listed in ${SHARD_INDEX_FILE} but not in the shard`);
  }
  const report = options.strict === false ? checkWeights(config, weights) : assertWeights(config, weights, files.name);

  let tokenizer: LoadedTokenizer | undefined;
  if (!options.skipTokenizer && present.has('tokenizer.json')) {
    const tj = await readJson('tokenizer.json', 'TOKENIZER_INVALID');
    const tc = present.has('tokenizer_config.json') ? await readJson('tokenizer_config.json', 'TOKENIZER_INVALID') : null;
    const chatTemplate = present.has('chat_template.jinja') ? await files.readText('chat_template.jinja') : undefined;
    const eos = [...config.eosTokenIds];
    if (present.has('generation_config.json')) {
      try {
        const gc = await readJson('generation_config.json', 'CONFIG_INVALID');
        const ge = isObject(gc) ? gc.eos_token_id : undefined;
        for (const id of Array.isArray(ge) ? ge : [ge]) if (typeof id === 'number' && Number.isSafeInteger(id)) eos.push(id);
      } catch (e) {
        if (!(e instanceof ModelFileError)) throw e; // a broken generation_config only loses extra eos ids
      }
    }
    if (!isObject(tj)) fail('TOKENIZER_INVALID', at('tokenizer.json'), 'not a JSON object');
    tokenizer = loadTokenizer(tj, tc as object | null, {
      chatTemplate,
      eosTokenIds: eos,
      fileName: at('tokenizer.json'),
      configFileName: at('tokenizer_config.json'),
    });
  }
  return { name: files.name, config, rawConfig: rawConfig as Record<string, unknown>, tokenizer, weights, report };
}
