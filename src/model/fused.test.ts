// The decoder's fused path (kernels/fused) against the unfused one it replaces: the same logits, saved
// tensors and gradients (bit for bit on CPU adapters, whose unfused kernels sum in the same order), the
// same KV-cache decode, and the dispatches per layer per decode step, before and after.

import { describe, expect, it } from 'vitest';
import { expectClose, randn, testGpu } from '../../kernels/testing.ts';
import type { Gpu } from '../gpu/gpu.ts';
import type { BatchInput } from './batch.ts';
import { Decoder } from './decoder.ts';
import { createKvCache, releaseKvCache } from './kv-cache.ts';
import type { FusedForm } from '../../kernels/fused/fused.ts';
import { LINEAR_MODULES, type LinearModule, type ModelConfig } from './config.ts';
import { type LoraSet, createLoraSet, releaseLoraSet } from './lora-set.ts';
import { randomizeLoraB, tinyConfig, tinyWeights } from './testing.ts';
import { createWeightGrads, releaseWeights, uploadWeights, weightTensors } from './weights.ts';

const qwen = (over: Record<string, unknown> = {}) => tinyConfig({ model_type: 'qwen2', architectures: ['Qwen2ForCausalLM'], ...over }); // q/k/v biases

function adapters(gpu: Gpu, config: ModelConfig, targets = [...LINEAR_MODULES]): LoraSet {
  const lora = createLoraSet(gpu, config, { r: 2, alpha: 4, targets, slots: 3 }, 3);
  randomizeLoraB(gpu, lora, (shape) => shape[1] + 1);
  return lora;
}

/** Within tolerance everywhere; on a CPU adapter, identical. */
const same = (gpu: Gpu, name: string, got: ArrayLike<number>, want: ArrayLike<number>) =>
  expectClose(name, got, want, gpu.cpu ? { atol: 0, rtol: 0 } : { atol: 1e-5, rtol: 1e-4 });

describe('decoder fused path', () => {
  const targetSets: LinearModule[][] = [[...LINEAR_MODULES], ['q_proj', 'v_proj', 'up_proj']];
  for (const targets of targetSets) {
    it(`saved forward and backward equal the unfused path (LoRA on ${targets.length} modules, mixed slots, padding)`, async () => {
      const gpu = await testGpu();
      const config = qwen();
      const weights = uploadWeights(gpu, config, (n) => tinyWeights(config, 4).get(n));
      const lora = adapters(gpu, config, targets);
      const batch: BatchInput = {
        B: 3,
        T: 4,
        ids: Int32Array.from([3, 7, 1, 30, 0, 5, 9, 21, 4, 4, 4, 2]),
        mask: Int32Array.from([1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1]),
        slots: Int32Array.from([0, 2, -1]),
        adapters: lora,
      };
      const N = 12;
      const dlogits = gpu.upload(Float32Array.from(randn(N * config.vocabSize, 5)), [N, config.vocabSize], 'f32', 'dlogits');
      const dhidden = gpu.upload(Float32Array.from(randn(N * config.hiddenSize, 6)), [N, config.hiddenSize], 'f32', 'dhidden');
      const run = async (fused: boolean) => {
        const dec = new Decoder(gpu, config, weights, { fused });
        expect(dec.fused).toBe(fused);
        for (const layer of lora.layers)
          for (const p of Object.values(layer)) {
            gpu.fill(p.dA, 0);
            gpu.fill(p.dB, 0);
          }
        const grads = createWeightGrads(gpu, weights);
        const st = dec.forward(batch, { save: true });
        const out: Record<string, Float32Array> = { logits: await gpu.readF32(st.logits!), hN: await gpu.readF32(st.hN) };
        for (const [i, s] of st.layers.entries()) {
          for (const k of ['h1', 'q', 'k', 'v', 'att', 'lse', 'xMid', 'h2', 'g', 'u', 'a'] as const)
            out[`layer${i}.${k}`] = await gpu.readF32(s[k]);
          for (const [m, h] of Object.entries(s.loraH)) if (h) out[`layer${i}.loraH.${m}`] = await gpu.readF32(h);
        }
        dec.backward(st, dlogits, dhidden, grads);
        dec.release(st);
        for (const [l, layer] of lora.layers.entries())
          for (const [m, p] of Object.entries(layer)) {
            out[`d${l}.${m}.A`] = await gpu.readF32(p.dA);
            out[`d${l}.${m}.B`] = await gpu.readF32(p.dB);
          }
        for (const { name, t } of weightTensors(grads)) out[`grad ${name}`] = await gpu.readF32(t);
        return out;
      };
      const unfused = await run(false);
      const fused = await run(true);
      expect(Object.keys(fused).sort()).toEqual(Object.keys(unfused).sort());
      expect(Object.keys(unfused).filter((k) => k.includes('loraH')).length).toBe(config.numLayers * targets.length);
      for (const k of Object.keys(unfused)) same(gpu, k, fused[k], unfused[k]);
      releaseLoraSet(gpu, lora);
      releaseWeights(gpu, weights);
    });
  }

  /** Logits of a prefill and one decode step of an L-layer model, and that step's dispatches. */
  const decodeStep = async (
    gpu: Gpu,
    L: number,
    opts: { fused: boolean; fusedForm?: FusedForm },
    targets: LinearModule[] = [...LINEAR_MODULES],
  ) => {
    const B = 4;
    const prompt = {
      B,
      T: 3,
      ids: Int32Array.from({ length: B * 3 }, (_, i) => (i * 7) % 32),
      mask: Int32Array.from({ length: B * 3 }, (_, i) => (i === 0 ? 0 : 1)),
    };
    const config = qwen({ num_hidden_layers: L });
    const weights = uploadWeights(gpu, config, (n) => tinyWeights(config, 8).get(n));
    const dec = new Decoder(gpu, config, weights, opts);
    const lora = adapters(gpu, config, targets);
    const slots = Int32Array.from([0, -1, 2, 1]);
    const cache = createKvCache(gpu, config, B, 8, prompt.mask, 3);
    const pos = Int32Array.from({ length: B }, (_, b) => (b === 0 ? 2 : 3));
    const st0 = dec.forward({ ...prompt, adapters: lora, slots }, { cache, logits: 'last' });
    const prefill = await gpu.readF32(st0.logits!);
    dec.release(st0);
    const before = gpu.dispatchCount;
    const st1 = dec.forward({ B, T: 1, ids: Int32Array.from([1, 2, 3, 4]), pos, adapters: lora, slots }, { cache, logits: 'last' });
    const dispatches = gpu.dispatchCount - before;
    const decode = await gpu.readF32(st1.logits!);
    dec.release(st1);
    releaseKvCache(gpu, cache);
    releaseLoraSet(gpu, lora);
    releaseWeights(gpu, weights);
    return { prefill, decode, dispatches };
  };
  const perLayer = async (gpu: Gpu, opts: { fused: boolean; fusedForm?: FusedForm }, targets?: LinearModule[]) =>
    ((await decodeStep(gpu, 3, opts, targets)).dispatches - (await decodeStep(gpu, 1, opts, targets)).dispatches) / 2;

  it('decodes with the KV cache as the unfused path does, in fewer dispatches per layer per step', async () => {
    const gpu = await testGpu();
    const [u, f] = [await decodeStep(gpu, 2, { fused: false }), await decodeStep(gpu, 2, { fused: true })];
    same(gpu, 'prefill logits', f.prefill, u.prefill);
    same(gpu, 'decode logits', f.decode, u.decode);
    const before = await perLayer(gpu, { fused: false });
    const after = await perLayer(gpu, { fused: true });
    console.log(
      `dispatches per layer per decode step (LoRA on all 7 modules, ${gpu.cpu ? 'CPU adapter' : 'GPU'}): unfused ${before}, fused ${after}`,
    );
    expect(after).toBeLessThanOrEqual(10);
    expect(before).toBeGreaterThanOrEqual(after + 20);
  });

  it("the GPUs' decode form (gemv: each normed group's norm and LoRA shrink inside its matmul) decodes as the unfused path does, in 7 dispatches per layer on GPUs with LoRA on q and v", async () => {
    const gpu = await testGpu();
    const [u, f] = [await decodeStep(gpu, 2, { fused: false }), await decodeStep(gpu, 2, { fused: true, fusedForm: 'gemv' })];
    // another summation order (threads along K)
    expectClose('prefill logits', f.prefill, u.prefill, { atol: 1e-5, rtol: 1e-4 });
    expectClose('decode logits', f.decode, u.decode, { atol: 1e-5, rtol: 1e-4 });
    const attention = gpu.cpu ? 1 : 2; // the split decode attention on GPUs
    const all = await perLayer(gpu, { fused: true, fusedForm: 'gemv' });
    const qv = await perLayer(gpu, { fused: true, fusedForm: 'gemv' }, ['q_proj', 'v_proj']);
    console.log(`dispatches per layer per decode step, gemv form: LoRA on all 7 modules ${all}, on q and v ${qv}`);
    // q/k/v with its norm and shrink, RoPE with the cache append, the attention, o (its shrink), gate/up with its norm and SwiGLU, down (its shrink)
    expect(all).toBe(7 + attention);
    expect(qv).toBe(5 + attention);
  });

  it('pinned adapters build their LoRA groups once, at the pin: forwards copy nothing, give the same logits, and a write after the pin is seen', async () => {
    const gpu = await testGpu();
    const config = qwen({ num_hidden_layers: 2 });
    const weights = uploadWeights(gpu, config, (n) => tinyWeights(config, 8).get(n));
    const dec = new Decoder(gpu, config, weights, { fused: true });
    const lora = adapters(gpu, config);
    const inp: BatchInput = { B: 3, T: 1, ids: Int32Array.from([4, 9, 1]), adapters: lora, slots: Int32Array.from([0, -1, 2]) };
    const copy = gpu.copy.bind(gpu);
    let copies = 0;
    gpu.copy = (...a: Parameters<Gpu['copy']>) => {
      copies++;
      copy(...a);
    };
    /** Logits of one forward and the buffer copies it made. */
    const run = async () => {
      const c0 = copies;
      const st = dec.forward(inp, { logits: 'last' });
      const made = copies - c0;
      const logits = await gpu.readF32(st.logits!);
      dec.release(st);
      return { logits, made };
    };
    try {
      const free = await run();
      // q/k/v (3 modules) and gate/up (2) concatenate A and B: 2 x (3 + 2) copies a layer
      expect(free.made).toBe(2 * config.numLayers * 5);
      const c0 = copies;
      const unpin = dec.pinAdapters(lora);
      expect(copies - c0).toBe(free.made); // built at once: a recorded decode step may be the first fused forward
      const first = await run();
      const second = await run();
      expect(first.made).toBe(0);
      expect(second.made).toBe(0);
      same(gpu, 'logits under the pin', second.logits, free.logits);
      unpin();
      // the optimizer writes adapters in place between generations: the next forward must see it
      const p = lora.layers[0].v_proj!; // not q: with one position, attention ignores the query
      gpu.write(p.B, new Float32Array(p.B.shape.reduce((a, b) => a * b, 1)).fill(0.25));
      const after = await run();
      expect(after.made).toBe(free.made);
      expect(Math.max(...after.logits.map((v, i) => Math.abs(v - free.logits[i])))).toBeGreaterThan(1e-4);
    } finally {
      gpu.copy = copy;
      releaseLoraSet(gpu, lora);
      releaseWeights(gpu, weights);
    }
  });

  it('full-parameter training (trainable weights) runs unfused; asking for the fused path is refused', async () => {
    const gpu = await testGpu();
    const config = tinyConfig();
    const weights = uploadWeights(gpu, config, (n) => tinyWeights(config, 1).get(n), { trainable: true });
    expect(new Decoder(gpu, config, weights).fused).toBe(false);
    expect(weights.fused).toBeUndefined();
    expect(() => new Decoder(gpu, config, weights, { fused: true })).toThrow(/fused path needs frozen weights/);
    releaseWeights(gpu, weights);
  });
});
