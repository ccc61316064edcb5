// The ONNX export run in onnxruntime-web (WebAssembly backend in Node) against transformers' logits on the
// parity fixtures (tiny Llama and Qwen2, f32 / bf16 / f16 weights): a left-padded batch with the mask, the
// PEFT adapter merged, the graph without attention_mask, and the external-data layout. CPU only (no GPU).

import { readFileSync } from 'node:fs';
import * as ort from 'onnxruntime-web';
import { describe, expect, it } from 'vitest';
import { loadAdapterFiles } from '../load.ts';
import { nodeModelFiles } from '../node-files.ts';
import { parseSafetensors, tensorToFloat32 } from '../safetensors.ts';
import { type OnnxExport, exportOnnx } from './export.ts';
import { concatChunks } from './external-data.ts';
import { mergeTransposed } from './merge.ts';
import { onnx } from './graph.ts';

ort.env.wasm.numThreads = 1;
const ROOT = new URL('../../../fixtures/parity/', import.meta.url).pathname;

function reference(name: string) {
  const st = parseSafetensors(new Uint8Array(readFileSync(`${ROOT}${name}/reference.safetensors`)), 'reference.safetensors');
  const get = (k: string) => ({ shape: st.tensors.get(k)!.shape as number[], data: tensorToFloat32(st.tensors.get(k)!) });
  return { ids: get('input_ids'), mask: get('attention_mask'), logits: get('logits'), logitsLora: get('logits_lora') };
}

async function run(exp: OnnxExport, ids: Float32Array, mask: Float32Array | null, B: number, T: number): Promise<Float32Array> {
  const session = await ort.InferenceSession.create(exp.model, {
    executionProviders: ['wasm'],
    externalData: exp.data ? [{ path: exp.data.location, data: concatChunks(exp.data.chunks(), exp.data.bytes) }] : undefined,
  });
  const feeds: Record<string, ort.Tensor> = {
    input_ids: new ort.Tensor(
      'int64',
      BigInt64Array.from(ids, (v) => BigInt(v)),
      [B, T],
    ),
  };
  if (mask)
    feeds.attention_mask = new ort.Tensor(
      'int64',
      BigInt64Array.from(mask, (v) => BigInt(v)),
      [B, T],
    );
  const out = await session.run(feeds);
  await session.release();
  expect(out.logits.dims).toEqual([B, T, out.logits.dims[2]]);
  return out.logits.data as Float32Array;
}

/** Max |got - ref| over rows [row0, row0 + rows) of ref whose mask is 1. */
function maxErr(got: Float32Array, ref: Float32Array, mask: Float32Array, V: number, row0 = 0, rows = mask.length): number {
  let worst = 0;
  for (let n = 0; n < rows; n++) {
    if (!mask[row0 + n]) continue;
    for (let v = 0; v < V; v++) worst = Math.max(worst, Math.abs(got[n * V + v] - ref[(row0 + n) * V + v]));
  }
  return worst;
}

describe('mergeTransposed', () => {
  it('is (W + scale B A)^T in float64', () => {
    const W = Float32Array.of(1, 2, 3, 4, 5, 6); // (2, 3)
    const A = Float32Array.of(1, 0, -1); // (1, 3)
    const B = Float32Array.of(2, -3); // (2, 1)
    const got = mergeTransposed(W, 2, 3, { A, B, r: 1, scale: 0.5 });
    expect(Array.from(got)).toEqual([1 + 1, 4 - 1.5, 2, 5, 3 - 1, 6 + 1.5]);
  });
});

describe('ONNX export in onnxruntime-web (wasm)', () => {
  for (const name of ['llama-tiny', 'llama-tiny-bf16', 'qwen2-tiny', 'qwen2-tiny-f16']) {
    it(`${name}: padded batch, with and without the merged adapter, without mask, external data`, async () => {
      const files = await nodeModelFiles(`${ROOT}${name}`);
      const ref = reference(name);
      const [B, T] = ref.ids.shape;
      const V = ref.logits.shape[2];
      const base = await exportOnnx(files, null, { fileName: 'model.onnx' });
      expect(base.data).toBeNull();
      const decoded = onnx.ModelProto.decode(base.model);
      expect(Number(decoded.opsetImport[0].version)).toBeGreaterThanOrEqual(17);
      expect(decoded.graph!.input!.map((i) => i.name)).toEqual(['input_ids', 'attention_mask']);
      const errBase = maxErr(await run(base, ref.ids.data, ref.mask.data, B, T), ref.logits.data, ref.mask.data, V);

      const adapter = await loadAdapterFiles(await nodeModelFiles(`${ROOT}${name}/adapter`));
      const merged = await exportOnnx(files, adapter, { fileName: 'model.onnx' });
      const errLora = maxErr(await run(merged, ref.ids.data, ref.mask.data, B, T), ref.logitsLora.data, ref.mask.data, V);

      // No attention_mask input: the unpadded sequence alone (positions 0..T-1).
      const b = [0, 1].find((s) => ref.mask.data.slice(s * T, (s + 1) * T).every((m) => m === 1))!;
      const noMask = await exportOnnx(files, null, { fileName: 'model.onnx', withAttentionMask: false });
      expect(onnx.ModelProto.decode(noMask.model).graph!.input!.map((i) => i.name)).toEqual(['input_ids']);
      const errNoMask = maxErr(
        await run(noMask, ref.ids.data.slice(b * T, (b + 1) * T), null, 1, T),
        ref.logits.data,
        ref.mask.data,
        V,
        b * T,
        T,
      );

      // External data forced: same logits, weights out of the .onnx.
      const ext = await exportOnnx(files, adapter, { fileName: 'model.onnx', externalData: true });
      expect(ext.data).not.toBeNull();
      expect(ext.data!.location).toBe('model.onnx.data');
      expect(ext.model.length).toBeLessThan(merged.model.length / 2);
      const errExt = maxErr(await run(ext, ref.ids.data, ref.mask.data, B, T), ref.logitsLora.data, ref.mask.data, V);

      console.log(
        `${name}: max abs logit error vs transformers: base ${errBase.toExponential(2)}, merged LoRA ${errLora.toExponential(2)}, no mask ${errNoMask.toExponential(2)}, external data ${errExt.toExponential(2)}`,
      );
      for (const [k, e] of Object.entries({ errBase, errLora, errNoMask, errExt })) expect(e, k).toBeLessThanOrEqual(1e-4);
    });
  }
});
