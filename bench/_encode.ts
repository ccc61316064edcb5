import { acquireNodeGpu } from '../src/gpu/node.ts';
import { LINEAR_MODULES, parseModelConfig } from '../src/model/config.ts';
import { Decoder, createKvCache } from '../src/model/decoder.ts';
import { createLoraSet } from '../src/model/lora-set.ts';
import { uploadWeights } from '../src/model/weights.ts';
import { BENCH_MODELS, randomWeights } from './random-model.ts';
const gpu = await acquireNodeGpu({ log: () => {} });
const config = parseModelConfig({ model_type: 'llama', architectures: ['LlamaForCausalLM'], max_position_embeddings: 4096, ...BENCH_MODELS.tiny, num_hidden_layers: 2, hidden_size: 64, intermediate_size: 128, vocab_size: 128 });
const weights = uploadWeights(gpu, config, randomWeights(config, 1), {});
const lora = createLoraSet(gpu, config, { r: 8, alpha: 16, targets: [...LINEAR_MODULES], slots: 2 }, 2);
const B = 8, STEPS = Number(process.argv[2] ?? 400);
const slots = Int32Array.from({ length: B }, (_, b) => [0, 1, -1][b % 3]);
const dec = new Decoder(gpu, config, weights, { fused: process.argv[3] === 'fused' });
const unpin = dec.pinAdapters(lora);
const cache = createKvCache(gpu, config, B, STEPS + 2, new Int32Array(B).fill(1), 1);
dec.release(dec.forward({ B, T: 1, ids: new Int32Array(B), adapters: lora, slots }, { cache, logits: 'last' }));
await gpu.sync();
const ids = gpu.upload(new Int32Array(B), [B], 'i32', 'ids'), pos = gpu.upload(new Int32Array(B).fill(1), [B], 'i32', 'pos'), sl = gpu.upload(slots, [B], 'i32', 'sl');
let enc = 0; const d0 = gpu.dispatchCount;
for (let s = 0; s < STEPS; s++) {
  const t = performance.now();
  dec.release(dec.forward({ B, T: 1, ids: new Int32Array(0), idsGpu: ids, posGpu: pos, slotsGpu: sl, adapters: lora, slots }, { cache, logits: 'last' }));
  enc += performance.now() - t;
  if (s % 8 === 7) { gpu.submit(); }
  if (s % 64 === 63) await gpu.sync();
}
await gpu.sync();
const disp = (gpu.dispatchCount - d0) / STEPS;
console.log(JSON.stringify({ dispPerStep: disp, encodeUsPerDispatch: +(enc * 1000 / STEPS / disp).toFixed(2) }));
unpin();
process.exit(0);
