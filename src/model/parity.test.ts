// Parity with Hugging Face transformers + peft: logits of tiny random Llama and Qwen2 models (f32, bf16,
// f16 weights; with left padding; with and without a PEFT adapter) against fixtures made by
// scripts/fixtures/make_parity.py on the GPU machine; on the unfused and the fused path alike.

import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { testGpu } from '../../kernels/testing.ts';
import { createLoraSet, releaseLoraSet, setLoraSlot } from './lora-set.ts';
import { loadAdapterFiles, loadDecoder } from './load.ts';
import { nodeModelFiles } from './node-files.ts';
import { parseSafetensors, tensorToFloat32 } from './safetensors.ts';
import { releaseWeights } from './weights.ts';

const ROOT = new URL('../../fixtures/parity/', import.meta.url).pathname;

function reference(name: string) {
  const st = parseSafetensors(new Uint8Array(readFileSync(`${ROOT}${name}/reference.safetensors`)), 'reference.safetensors');
  const get = (k: string) => ({ shape: st.tensors.get(k)!.shape, data: tensorToFloat32(st.tensors.get(k)!) });
  return {
    ids: get('input_ids'),
    mask: get('attention_mask'),
    pos: get('position_ids'),
    logits: get('logits'),
    logitsLora: get('logits_lora'),
    greedy: get('greedy'),
  };
}

/** Max |got - ref| over the rows whose mask is 1 (padded rows are undefined in both). */
function maxErr(got: Float32Array, ref: Float32Array, mask: Float32Array, V: number, rows?: number[]): number {
  let worst = 0;
  for (let n = 0; n < mask.length; n++) {
    if (!mask[n] || (rows && !rows.includes(n))) continue;
    for (let v = 0; v < V; v++) worst = Math.max(worst, Math.abs(got[n * V + v] - ref[n * V + v]));
  }
  return worst;
}

describe('parity with transformers', () => {
  for (const name of ['llama-tiny', 'llama-tiny-bf16', 'qwen2-tiny', 'qwen2-tiny-f16'])
    for (const fused of [false, true]) {
      it(`${name}${fused ? ' (fused path)' : ''}: logits, and logits with a PEFT adapter in a mixed batch`, async () => {
        const gpu = await testGpu();
        const { decoder, model } = await loadDecoder(gpu, await nodeModelFiles(`${ROOT}${name}`), { fused });
        expect(decoder.fused).toBe(fused);
        const ref = reference(name);
        const [B, T] = ref.ids.shape as [number, number];
        const V = model.config.vocabSize;
        const input = {
          B,
          T,
          ids: Int32Array.from(ref.ids.data),
          mask: Int32Array.from(ref.mask.data),
          pos: Int32Array.from(ref.pos.data),
        };
        const st = decoder.forward(input);
        const logits = await gpu.readF32(st.logits!);
        decoder.release(st);
        const err = maxErr(logits, ref.logits.data, ref.mask.data, V);
        console.log(
          `${name}${fused ? ' fused' : ''}: max abs logit error ${err.toExponential(2)} (logit scale ${Math.max(...ref.logits.data.map(Math.abs)).toFixed(2)})`,
        );
        expect(err).toBeLessThanOrEqual(1e-4);

        // The adapter in slot 1 of 2; sequence 0 runs without adapter (slot -1), sequence 1 with it.
        const adapter = await loadAdapterFiles(await nodeModelFiles(`${ROOT}${name}/adapter`), model.config);
        const lora = createLoraSet(
          gpu,
          model.config,
          { r: adapter.config.r, alpha: adapter.config.loraAlpha, targets: adapter.config.targetModules, slots: 2 },
          1,
        );
        setLoraSlot(gpu, lora, 1, adapter);
        for (const slots of [
          [1, 1],
          [-1, 1],
        ]) {
          const st2 = decoder.forward({ ...input, adapters: lora, slots: Int32Array.from(slots) });
          const got = await gpu.readF32(st2.logits!);
          decoder.release(st2);
          const rows = (b: number) => Array.from({ length: T }, (_, t) => b * T + t);
          for (let b = 0; b < B; b++) {
            const want = slots[b] === 1 ? ref.logitsLora.data : ref.logits.data;
            const e = maxErr(got, want, ref.mask.data, V, rows(b));
            expect(e, `${name} slots ${slots} sequence ${b}`).toBeLessThanOrEqual(1e-4);
          }
        }
        releaseLoraSet(gpu, lora);
        releaseWeights(gpu, decoder.weights);
      });
    }
});
