// A check for a GPU machine: a Qwen2.5-0.5B-shaped decoder (random bf16 weights, tied head, 2 layers by
// default) on a device with the adapter's limits and on one with WebGPU's default limits, where its 272 MB
// embedding is split into row chunks (src/model/row-chunks.ts) and each kernel takes the variant that fits.
// The logits and LoRA gradients of a training forward/backward (logits at 64 rows) and the logits of a
// decode-shaped forward (the fused path on a GPU) must agree; it prints each device's limits, the chunks,
// the time of each pass and the largest relative differences. The unit tests check the same on tiny models
// (src/model/row-chunks.test.ts); this runs the real shapes and the GPU kernels.
// Run: node scripts/bundle.mjs bench/default-limits.ts .devcarry/app, then on the machine
//      bash .devcarry/enter.sh node .devcarry/app/default-limits.mjs [--layers 2]

import { parseArgs } from 'node:util';
import { Rng } from '../src/common/rng.ts';
import type { Gpu } from '../src/gpu/gpu.ts';
import { createNodeGpu, ensureVulkanEnv } from '../src/gpu/node.ts';
import { Decoder } from '../src/model/decoder.ts';
import { LINEAR_MODULES } from '../src/model/config.ts';
import { createLoraSet } from '../src/model/lora-set.ts';
import { tinyConfig, tinyWeights } from '../src/model/testing.ts';
import { uploadWeights } from '../src/model/weights.ts';

await ensureVulkanEnv();
const { values } = parseArgs({ options: { layers: { type: 'string', default: '2' } } });
const c = tinyConfig({
  vocab_size: 151936,
  hidden_size: 896,
  intermediate_size: 4864,
  num_hidden_layers: Number(values.layers),
  num_attention_heads: 14,
  num_key_value_heads: 2,
  max_position_embeddings: 4096,
  tie_word_embeddings: true,
});
const host = tinyWeights(c, 5, 0.05);
const [B, T, V] = [2, 96, c.vocabSize];
const rng = new Rng(3);
const ids = Int32Array.from({ length: B * T }, () => rng.int(V));
ids[5] = V - 1; // the last row of the last chunk
const rows = Int32Array.from({ length: 64 }, (_, i) => 20 + i * 2);
const dlogits = Float32Array.from({ length: rows.length * V }, () => (rng.next() - 0.5) * 1e-3);

async function pass(gpu: Gpu) {
  const weights = uploadWeights(gpu, c, (n) => host.get(n), { storeAs: 'bf16' });
  const dec = new Decoder(gpu, c, weights);
  const lora = createLoraSet(gpu, c, { r: 8, alpha: 16, targets: [...LINEAR_MODULES], slots: 2 }, 3);
  let seed = 1;
  for (const layer of lora.layers)
    for (const p of Object.values(layer)) {
      const r = new Rng(seed++);
      gpu.write(
        p.B,
        Float32Array.from({ length: p.B.shape[0] * p.B.shape[1] }, () => (r.next() - 0.5) * 0.1),
      );
    }
  const t0 = performance.now();
  const st = dec.forward({ B, T, ids, slots: Int32Array.from([0, 1]), adapters: lora }, { save: true, logitRows: rows });
  const logits = await gpu.readF32(st.logits!);
  const d = gpu.upload(dlogits, [rows.length, V], 'f32', 'dlogits');
  dec.backward(st, d, null);
  const grads: Float32Array[] = [];
  for (const layer of lora.layers) for (const p of Object.values(layer)) grads.push(await gpu.readF32(p.dA), await gpu.readF32(p.dB));
  gpu.release(d);
  dec.release(st);
  const t1 = performance.now();
  const step = dec.forward(
    { B: 4, T: 1, ids: Int32Array.from([1, V - 1, 77, 9000]), slots: Int32Array.from([0, 1, 0, -1]), adapters: lora },
    { logits: 'last' },
  );
  const last = await gpu.readF32(step.logits!);
  dec.release(step);
  const l = gpu.limits;
  return {
    what: `binding ${l.maxStorageBufferBindingSize}, ${l.maxStorageBuffersPerShaderStage} storage buffers, ${l.maxComputeWorkgroupStorageSize} B workgroup memory: ${weights.embed.length} embedding chunk(s), fused ${dec.fused}`,
    logits,
    grads,
    last,
    ms: `train pass ${(t1 - t0).toFixed(0)} ms (first: pipelines included), decode pass ${(performance.now() - t1).toFixed(0)} ms`,
  };
}

/** max |a - b| over max |b|. */
function rel(a: Float32Array, b: Float32Array): number {
  let worst = 0;
  let scale = 1e-30;
  for (let i = 0; i < b.length; i++) {
    worst = Math.max(worst, Math.abs(a[i] - b[i]));
    scale = Math.max(scale, Math.abs(b[i]));
  }
  return worst / scale;
}

const big = await createNodeGpu({ limits: 'adapter', log: console.log });
const ref = await pass(big);
big.destroy();
const small = await createNodeGpu({ limits: 'default', log: console.log });
const got = await pass(small);
small.destroy();
console.log(`adapter limits: ${ref.what}; ${ref.ms}`);
console.log(`default limits: ${got.what}; ${got.ms}`);
console.log(
  `logits: ${rel(got.logits, ref.logits).toExponential(2)}, decode logits: ${rel(got.last, ref.last).toExponential(2)} (relative)`,
);
console.log(`LoRA gradients: ${Math.max(...got.grads.map((g, i) => rel(g, ref.grads[i]))).toExponential(2)} (worst relative)`);
const finite = [ref.logits, got.logits, ref.last, got.last, ...got.grads].every((x) => x.every(Number.isFinite));
console.log(`all finite: ${finite}; gradients nonzero: ${ref.grads.every((g) => g.some((x) => x !== 0))}`);
process.exit(finite ? 0 : 1);
