// The worker's GPU device and its loaded base model (one at a time, cached by config.model.path and by
// device: after a device loss both are acquired again).

import { acquireBrowserGpu } from '../gpu/browser.ts';
import type { Gpu } from '../gpu/gpu.ts';
import { GpuError } from '../gpu/errors.ts';
import type { ModelConfig } from '../model/config.ts';
import type { Decoder } from '../model/decoder.ts';
import { loadDecoder } from '../model/load.ts';
import type { LoadedTokenizer } from '../model/tokenizer.ts';
import type { ModelInfo } from './api.ts';
import { WorkerFail } from './errors.ts';
import { MAX_MODEL_BYTES, modelFilesFor, weightBytes } from './model-source.ts';

export interface LoadedModel {
  path: string;
  gpu: Gpu;
  decoder: Decoder;
  tokenizer: LoadedTokenizer;
  config: ModelConfig;
  info: ModelInfo;
}

let gpu: Gpu | null = null;
let model: LoadedModel | null = null;
let loading: Promise<LoadedModel> | null = null;

export async function getGpu(): Promise<Gpu> {
  if (gpu && gpu.lostReason !== null) gpu = null;
  gpu ??= await acquireBrowserGpu({ log: (l) => console.log(l) });
  return gpu;
}

export const currentGpu = (): Gpu | null => gpu;

/** Forgets the device and the model (after a device loss). */
export function dropDevice(): void {
  gpu = null;
  model = null;
  loading = null;
}

export const modelsBase = (): string => new URL(`${import.meta.env.BASE_URL}models/`, self.location.origin).href;

async function load(path: string): Promise<LoadedModel> {
  const g = await getGpu();
  const files = await modelFilesFor(path, modelsBase());
  const bytes = await weightBytes(files);
  if (bytes > MAX_MODEL_BYTES) {
    throw new WorkerFail('MODEL_TOO_LARGE', `${files.name}: the weights are ${(bytes / 2 ** 30).toFixed(2)} GiB; the lab takes at most ${(MAX_MODEL_BYTES / 2 ** 30).toFixed(1)} GiB in the browser`);
  }
  let loaded;
  try {
    loaded = await loadDecoder(g, files);
  } catch (e) {
    if (e instanceof GpuError && e.code === 'LIMIT') throw new WorkerFail('MODEL_TOO_LARGE', `${files.name} does not fit this GPU: ${e.message.split('\n')[0]}`);
    throw e;
  }
  const tok = loaded.model.tokenizer;
  if (!tok) throw new WorkerFail('NO_TOKENIZER', `${files.name} has no tokenizer.json: a training run needs the model's tokenizer`);
  const c = loaded.model.config;
  return {
    path, gpu: g, decoder: loaded.decoder, tokenizer: tok, config: c,
    info: {
      path, name: files.name, modelType: String(loaded.model.rawConfig.model_type ?? '?'), numLayers: c.numLayers, hiddenSize: c.hiddenSize,
      vocabSize: c.vocabSize, maxPositions: c.maxPositionEmbeddings, bytes, hasChatTemplate: tok.hasChatTemplate,
    },
  };
}

/** The model config.model.path names, on the current device (loaded once). */
export async function getModel(path: string): Promise<LoadedModel> {
  if (model && model.path === path && model.gpu === gpu && gpu?.lostReason === null) return model;
  loading = load(path);
  try {
    model = await loading;
    return model;
  } finally {
    loading = null;
  }
}
