// From files to a model on the GPU: a Hugging Face folder becomes a Decoder (weights uploaded, 16-bit
// kept packed), a PEFT adapter folder becomes an adapter ready for a LoRA slot.

import type { Gpu } from '../gpu/gpu.ts';
import { Decoder, type DecoderOptions } from './decoder.ts';
import { fail } from './errors.ts';
import { type LoadOptions, type LoadedModelFiles, type ModelFiles, loadModelFiles } from './folder.ts';
import { ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE, type ReadPeftAdapter, readPeftAdapter } from './peft.ts';
import type { ModelConfig } from './config.ts';
import { type UploadOptions, uploadWeights } from './weights.ts';

export interface LoadedDecoder {
  decoder: Decoder;
  model: LoadedModelFiles;
}

export async function loadDecoder(
  gpu: Gpu,
  files: ModelFiles,
  opts: LoadOptions & UploadOptions & DecoderOptions = {},
): Promise<LoadedDecoder> {
  const model = await loadModelFiles(files, opts);
  const weights = uploadWeights(gpu, model.config, (n) => model.weights.get(n), { ...opts, file: files.name });
  return { decoder: new Decoder(gpu, model.config, weights, { fused: opts.fused, fusedForm: opts.fusedForm }), model };
}

export async function loadAdapterFiles(files: ModelFiles, model?: ModelConfig): Promise<ReadPeftAdapter> {
  const present = new Set(files.list());
  for (const f of [ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE]) {
    if (!present.has(f)) fail('FILE_MISSING', `${files.name}/${f}`, `${f} is missing: this is not a PEFT adapter folder`);
  }
  return readPeftAdapter(
    {
      [ADAPTER_CONFIG_FILE]: await files.readText(ADAPTER_CONFIG_FILE),
      [ADAPTER_WEIGHTS_FILE]: await files.read(ADAPTER_WEIGHTS_FILE),
    },
    model,
  );
}
