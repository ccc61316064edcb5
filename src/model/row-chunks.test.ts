// The embedding and the LM head split by rows (row-chunks.ts, lm-head.ts) where one buffer binding cannot
// hold them, on a tiny model: a device told to bind less (Gpu caps) splits them in three, and its logits, the
// loss of one step and its LoRA gradients equal the unsplit device's; and a device with WebGPU's default
// limits runs the forward and a LoRA backward with the same results.

import { afterAll, describe, expect, it } from 'vitest';
import { randn, testGpu } from '../../kernels/testing.ts';
import type { Gpu } from '../gpu/gpu.ts';
import { createNodeGpu } from '../gpu/node.ts';
import type { BatchInput } from './batch.ts';
import type { ModelConfig } from './config.ts';
import { Decoder } from './decoder.ts';
import { createLoraSet, releaseLoraSet } from './lora-set.ts';
import { chunkRows } from './row-chunks.ts';
import { randomizeLoraB, tinyConfig, tinyWeights } from './testing.ts';
import { releaseWeights, uploadWeights } from './weights.ts';

// N = 6 rows of 64 logits: 1536 bytes, which the capped binding holds; the (64, 16) f32 embedding (4096) it does not
const BINDING = 1536;
const config = (tied: boolean): ModelConfig =>
  tinyConfig({
    vocab_size: 64,
    hidden_size: 16,
    intermediate_size: 24,
    num_attention_heads: 2,
    num_key_value_heads: 1,
    tie_word_embeddings: tied,
  });
const batch: BatchInput = {
  B: 2,
  T: 3,
  ids: Int32Array.from([3, 63, 40, 22, 5, 0]),
  mask: Int32Array.from([1, 1, 1, 1, 1, 0]),
  slots: Int32Array.from([1, 0]),
};
const rows = Int32Array.from([4, 1, 2]);

interface StepResult {
  chunks: number;
  logits: Float32Array;
  loss: number;
  grads: Float32Array[];
  rowLogits: Float32Array;
  rowGrads: Float32Array[];
}

/** Logits, the loss sum(logits * dlogits) and the LoRA gradients of one step, over all rows and at `rows`. */
async function step(gpu: Gpu, c: ModelConfig): Promise<StepResult> {
  const weights = uploadWeights(gpu, c, (n) => tinyWeights(c, 7).get(n));
  const dec = new Decoder(gpu, c, weights, { fused: false });
  const lora = createLoraSet(gpu, c, { r: 2, alpha: 4, targets: ['q_proj', 'v_proj', 'down_proj'], slots: 2 }, 3);
  randomizeLoraB(gpu, lora, (_, i) => 10 + i);
  const V = c.vocabSize;
  const grads = async (): Promise<Float32Array[]> => {
    const out: Float32Array[] = [];
    for (const layer of lora.layers) for (const p of Object.values(layer)) out.push(await gpu.readF32(p.dA), await gpu.readF32(p.dB));
    return out;
  };
  const zeroGrads = (): void => {
    for (const layer of lora.layers)
      for (const p of Object.values(layer)) {
        gpu.fill(p.dA, 0);
        gpu.fill(p.dB, 0);
      }
  };
  const once = async (atRows: boolean) => {
    zeroGrads();
    const M = atRows ? rows.length : batch.B * batch.T;
    const st = dec.forward({ ...batch, adapters: lora }, { save: true, ...(atRows ? { logitRows: rows } : {}) });
    const logits = await gpu.readF32(st.logits!);
    const d = Float32Array.from(randn(M * V, 41 + M));
    const dlogits = gpu.upload(d, [M, V], 'f32', 'dlogits');
    dec.backward(st, dlogits, null);
    gpu.release(dlogits);
    dec.release(st);
    return { logits, loss: logits.reduce((a, x, i) => a + x * d[i], 0), grads: await grads() };
  };
  const all = await once(false);
  const at = await once(true);
  const chunks = weights.embed.length;
  releaseLoraSet(gpu, lora);
  releaseWeights(gpu, weights);
  return { chunks, logits: all.logits, loss: all.loss, grads: all.grads, rowLogits: at.logits, rowGrads: at.grads };
}

/** Every element within 1e-5 of the reference's largest magnitude. */
function close(name: string, got: ArrayLike<number>, ref: ArrayLike<number>): void {
  expect(got.length, name).toBe(ref.length);
  const scale = Math.max(1e-3, ...Array.from(ref, Math.abs));
  let worst = 0;
  for (let i = 0; i < ref.length; i++) worst = Math.max(worst, Math.abs(got[i] - ref[i]));
  expect(worst, `${name}: worst error ${worst} against a largest magnitude of ${scale}`).toBeLessThanOrEqual(1e-5 * scale);
}

function same(got: StepResult, ref: StepResult): void {
  close('logits', got.logits, ref.logits);
  close('loss', [got.loss], [ref.loss]);
  close('logits at rows', got.rowLogits, ref.rowLogits);
  expect(ref.grads.every((g) => g.some((v) => v !== 0))).toBe(true);
  got.grads.forEach((g, i) => close(`LoRA gradient ${i}`, g, ref.grads[i]));
  got.rowGrads.forEach((g, i) => close(`LoRA gradient ${i} (logits at rows)`, g, ref.rowGrads[i]));
}

describe('an embedding and LM head split by rows', () => {
  const made: Gpu[] = [];
  afterAll(() => made.forEach((g) => g.destroy()));

  it('splits rows evenly within the budget, and not at all where the whole fits', () => {
    expect(chunkRows(64, 16, 4, 4096)).toBe(64);
    expect(chunkRows(64, 16, 4, BINDING)).toBe(22); // 24 rows fit: three chunks of 22, 22 and 20
    expect(chunkRows(151936, 896, 2, 2 ** 27)).toBe(50646); // Qwen2.5-0.5B's bf16 embedding (272 MB) in three chunks
    expect(chunkRows(8, 16, 4, 32)).toBeNull();
  });

  for (const tied of [false, true])
    it(`gives the unsplit logits, loss and LoRA gradients (${tied ? 'tied' : 'untied'} LM head)`, async () => {
      const whole = await step(await testGpu(), config(tied));
      const gpu = await createNodeGpu({ caps: { maxStorageBufferBindingSize: BINDING } });
      made.push(gpu);
      expect(gpu.limits.maxStorageBufferBindingSize).toBe(BINDING);
      const split = await step(gpu, config(tied));
      expect([whole.chunks, split.chunks]).toEqual([1, 3]);
      same(split, whole);
    });

  it("runs the forward and a LoRA backward on a device with WebGPU's default limits", async () => {
    const ref = await step(await testGpu(), config(false));
    const gpu = await createNodeGpu({ limits: 'default' });
    made.push(gpu);
    const l = gpu.limits;
    expect([l.maxStorageBufferBindingSize, l.maxBufferSize, l.maxStorageBuffersPerShaderStage]).toEqual([2 ** 27, 2 ** 28, 8]);
    expect([l.maxComputeWorkgroupStorageSize, l.maxComputeInvocationsPerWorkgroup, l.maxComputeWorkgroupSizeX]).toEqual([16384, 256, 256]);
    same(await step(gpu, config(false)), ref);
  });
});
