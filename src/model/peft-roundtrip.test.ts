// The lab's adapters leave the lab: an adapter written by the lab's export path
// (fixtures/peft-roundtrip/adapter, scripts/fixtures/make_lab_adapter.ts) loaded by Python's
// PeftModel.from_pretrained gives the logits the lab gives with it (reference made on the GPU machine by
// scripts/fixtures/peft_roundtrip.py). The reverse direction (peft-made adapters loaded by the lab) is in
// parity.test.ts.

import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { testGpu } from '../../kernels/testing.ts';
import { createLoraSet, releaseLoraSet, setLoraSlot } from './lora-set.ts';
import { loadAdapterFiles, loadDecoder } from './load.ts';
import { nodeModelFiles } from './node-files.ts';
import { parseSafetensors, tensorToFloat32 } from './safetensors.ts';
import { releaseWeights } from './weights.ts';

const root = (p: string) => new URL(`../../fixtures/${p}`, import.meta.url).pathname;

describe('a lab-made adapter in peft', () => {
  it('gives the same logits in transformers + peft as in the lab', async () => {
    const gpu = await testGpu();
    const { decoder, model } = await loadDecoder(gpu, await nodeModelFiles(root('parity/llama-tiny')));
    const adapter = await loadAdapterFiles(await nodeModelFiles(root('peft-roundtrip/adapter')), model.config);
    const lora = createLoraSet(
      gpu,
      model.config,
      { r: adapter.config.r, alpha: adapter.config.loraAlpha, targets: adapter.config.targetModules, slots: 1 },
      0,
    );
    setLoraSlot(gpu, lora, 0, adapter);
    const read = (f: string) => parseSafetensors(new Uint8Array(readFileSync(root(f))), f);
    const inp = read('parity/llama-tiny/reference.safetensors');
    const want = tensorToFloat32(read('peft-roundtrip/reference.safetensors').tensors.get('logits_lab_adapter')!);
    const t = (k: string) => Int32Array.from(tensorToFloat32(inp.tensors.get(k)!));
    const mask = t('attention_mask');
    const st = decoder.forward({
      B: 2,
      T: 11,
      ids: t('input_ids'),
      mask,
      pos: t('position_ids'),
      adapters: lora,
      slots: Int32Array.of(0, 0),
    });
    const got = await gpu.readF32(st.logits!);
    decoder.release(st);
    const V = model.config.vocabSize;
    let err = 0;
    for (let n = 0; n < 22; n++) if (mask[n]) for (let v = 0; v < V; v++) err = Math.max(err, Math.abs(got[n * V + v] - want[n * V + v]));
    console.log(`lab adapter in peft vs lab: max abs logit error ${err.toExponential(2)}`);
    expect(err).toBeLessThanOrEqual(1e-4);
    releaseLoraSet(gpu, lora);
    releaseWeights(gpu, decoder.weights);
  });
});
