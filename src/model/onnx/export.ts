// A Hugging Face model folder (+ an optional PEFT adapter, merged) -> an ONNX model and the tokenizer files
// that go next to it. Browser-safe: the caller writes the files (Node: src/cli/commands/export.ts).

import type { ModelFiles } from '../folder.ts';
import { loadModelFiles } from '../folder.ts';
import type { PeftAdapter } from '../peft.ts';
import { type DecoderGraphOptions, ONNX_OPSET, adaptedModules, buildDecoderGraph } from './decoder-graph.ts';
import { type EncodedModel, encodeModel } from './external-data.ts';
import { checkAdapterFits, weightF32 } from './merge.ts';

/** Files copied next to the .onnx when the model folder has them. */
export const TOKENIZER_FILES = [
  'tokenizer.json',
  'tokenizer_config.json',
  'special_tokens_map.json',
  'chat_template.jinja',
  'generation_config.json',
];

export interface OnnxExportOptions extends DecoderGraphOptions {
  /** The .onnx file's name (its data file is `${fileName}.data`). */
  fileName: string;
  externalData?: boolean | 'auto';
  /** Free text recorded in the model's metadata (e.g. "agent solver of ckpt-000012"). */
  source?: string;
}

export interface OnnxExport extends EncodedModel {
  /** Tokenizer files of the model folder, by name. */
  extraFiles: Record<string, Uint8Array>;
  /** One line on what was exported. */
  summary: string;
}

export async function exportOnnx(files: ModelFiles, adapter: PeftAdapter | null, opts: OnnxExportOptions): Promise<OnnxExport> {
  const model = await loadModelFiles(files, { skipTokenizer: true });
  const config = model.config;
  if (adapter) checkAdapterFits(config, adapter, 'adapter');
  const where = files.name;
  const g = buildDecoderGraph(config, (n) => weightF32(model.weights, n, where), adapter, opts);
  const metadata: Record<string, string> = {
    base_model: files.name,
    model_type: config.modelType,
    lora_merged: adapter ? `r=${adapter.config.r} alpha=${adapter.config.loraAlpha} targets=${adaptedModules(adapter).join(',')}` : 'none',
  };
  if (opts.source) metadata.source = opts.source;
  const encoded = encodeModel(
    g,
    {
      opset: ONNX_OPSET,
      producer: 'marft-lab',
      docString: `${config.architecture} from ${files.name}${adapter ? ' with a LoRA adapter merged (W + scale * B @ A)' : ''}`,
      metadata,
    },
    { externalData: opts.externalData, dataLocation: `${opts.fileName}.data` },
  );
  const present = new Set(files.list());
  const extraFiles: Record<string, Uint8Array> = {};
  for (const f of TOKENIZER_FILES) if (present.has(f)) extraFiles[f] = await files.read(f);
  const summary = `${config.architecture} ${config.numLayers} layers, opset ${ONNX_OPSET}, ${adapter ? 'adapter merged' : 'no adapter'}, ${encoded.data ? `external data ${(encoded.data.bytes / 1e9).toFixed(2)} GB` : 'weights inline'}`;
  return { ...encoded, extraFiles, summary };
}
