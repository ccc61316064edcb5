// `npx tsx bench/decode-step.ts`: one decode step of the MARFT setting (LoRA on every linear module,
// a slot per sequence, some sequences without adapter) on the unfused and the fused decoder path, on
// whatever device Dawn finds: dispatches per layer per decode step (Gpu.dispatchCount) and the wall
// time of a step (a forward with the KV cache, the last position's logits, and a sync).
// Options: --models tiny,smollm2-135m  --batch 8  --prompt 16  --steps 8  --dtype f32|bf16

import { acquireNodeGpu, ensureVulkanEnv } from '../src/gpu/node.ts';
import { LINEAR_MODULES, parseModelConfig } from '../src/model/config.ts';
import { Decoder, createKvCache, releaseKvCache } from '../src/model/decoder.ts';
import { createLoraSet, releaseLoraSet } from '../src/model/lora-set.ts';
import { Rng } from '../src/common/rng.ts';
import { releaseWeights, uploadWeights } from '../src/model/weights.ts';
import { benchModelConfigJson, randomWeights } from './random-model.ts';

await ensureVulkanEnv();
const arg = (n: string, d: string): string => { const i = process.argv.indexOf(`--${n}`); return i > 0 ? process.argv[i + 1] : d; };
const gpu = await acquireNodeGpu({ log: console.log });
const B = Number(arg('batch', '8'));
const P = Number(arg('prompt', '16'));
const STEPS = Number(arg('steps', gpu.cpu ? '4' : '32'));
const dtype = arg('dtype', 'f32');

for (const name of arg('models', gpu.cpu ? 'tiny' : 'tiny,smollm2-135m').split(',')) {
  const config = parseModelConfig(benchModelConfigJson(name));
  const weights = uploadWeights(gpu, config, randomWeights(config, 1), dtype === 'bf16' ? { storeAs: 'bf16' } : {});
  const lora = createLoraSet(gpu, config, { r: 8, alpha: 16, targets: [...LINEAR_MODULES], slots: 2 }, 2);
  const slots = Int32Array.from({ length: B }, (_, b) => [0, 1, -1][b % 3]);
  const rng = new Rng(3);
  const prompt = Int32Array.from({ length: B * P }, () => rng.int(config.vocabSize));
  const out: Record<string, number | string> = { model: name, dtype, B };
  for (const fused of [false, true]) {
    const dec = new Decoder(gpu, config, weights, { fused });
    const cache = createKvCache(gpu, config, B, P + STEPS + 1, new Int32Array(B * P).fill(1), P);
    dec.release(dec.forward({ B, T: P, ids: prompt, adapters: lora, slots }, { cache, logits: 'last' }));
    await gpu.sync();
    let dispatches = 0;
    const t0 = performance.now();
    for (let s = 0; s < STEPS; s++) {
      const before = gpu.dispatchCount;
      const pos = new Int32Array(B).fill(P + s);
      dec.release(dec.forward({ B, T: 1, ids: Int32Array.from({ length: B }, () => rng.int(config.vocabSize)), pos, adapters: lora, slots }, { cache, logits: 'last' }));
      dispatches = gpu.dispatchCount - before;
      await gpu.sync();
    }
    const ms = (performance.now() - t0) / STEPS;
    releaseKvCache(gpu, cache);
    const key = fused ? 'fused' : 'unfused';
    out[`${key}DispatchesPerStep`] = dispatches;
    out[`${key}MsPerStep`] = Number(ms.toFixed(2));
  }
  // per layer: the step's dispatches less those outside the layers (embedding, final norm, lm_head), over L
  console.log(JSON.stringify(out));
  releaseLoraSet(gpu, lora);
  releaseWeights(gpu, weights);
}
process.exit(0);
