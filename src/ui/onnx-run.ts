// Runs an ONNX export zip (see src/marft/export/agent.ts) in onnxruntime-web on this page, with its WebGPU
// execution provider (or the wasm one), to check an export against the lab's own logits. Loaded on demand
// through the marftLab page hook (main.tsx), so the app does not load onnxruntime-web otherwise. The runtime's
// WebAssembly is one of the app's own assets (no CDN: the lab works offline under its CSP).

import * as ort from 'onnxruntime-web/webgpu';
import wasmUrl from 'onnxruntime-web/ort-wasm-simd-threaded.asyncify.wasm?url';
import { unzipFiles } from '../platform/zip.ts';

ort.env.wasm.wasmPaths = { wasm: new URL(wasmUrl, location.href).href };
ort.env.wasm.numThreads = 1; // threads need cross-origin isolation, which the static app does not ask for
ort.env.wasm.proxy = false;

export interface OnnxRun {
  /** (1, T, V) logits, row-major. */
  logits: Float32Array;
  dims: number[];
  executionProvider: 'webgpu' | 'wasm';
  /** The adapter ORT's WebGPU EP ran on, when it ran on WebGPU. */
  adapter: string | null;
  ms: number;
}

/** Runs the zip's .onnx on `ids` (one unpadded sequence). */
export async function runOnnxZip(
  zip: Uint8Array,
  ids: readonly number[],
  executionProvider: 'webgpu' | 'wasm' = 'webgpu',
): Promise<OnnxRun> {
  const files = unzipFiles(zip);
  const model = Object.keys(files).find((f) => f.endsWith('.onnx'));
  if (!model) throw new Error(`the zip holds no .onnx file (${Object.keys(files).join(', ')})`);
  const data = files[`${model}.data`];
  const t0 = performance.now();
  const session = await ort.InferenceSession.create(files[model], {
    executionProviders: [executionProvider],
    externalData: data ? [{ path: `${model}.data`, data }] : undefined,
  });
  try {
    const tensor = (v: readonly number[]) =>
      new ort.Tensor(
        'int64',
        BigInt64Array.from(v, (x) => BigInt(x)),
        [1, v.length],
      );
    const feeds: Record<string, ort.Tensor> = { input_ids: tensor(ids) };
    if (session.inputNames.includes('attention_mask')) feeds.attention_mask = tensor(ids.map(() => 1));
    const out = await session.run(feeds);
    const logits = out.logits;
    let adapter: string | null = null;
    if (executionProvider === 'webgpu') {
      const info = (await ort.env.webgpu.device).adapterInfo;
      adapter = [info.vendor, info.architecture, info.description].filter(Boolean).join(' ') || 'unknown';
    }
    return {
      logits: (await logits.getData()) as Float32Array,
      dims: [...logits.dims],
      executionProvider,
      adapter,
      ms: performance.now() - t0,
    };
  } finally {
    await session.release();
  }
}
