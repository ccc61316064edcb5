// Whole-model gradient check: the hand-written backward of the decoder (LoRA gradients, full-parameter
// gradients) and of the value head against central finite differences of the GPU forward.
// L = sum(logits * Wl) + sum(values * Wv), summed on the CPU in float64.

import { describe, expect, it } from 'vitest';
import { randn, testGpu } from '../../kernels/testing.ts';
import type { Gpu } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';
import type { BatchInput } from './batch.ts';
import { Decoder } from './decoder.ts';
import { createLoraSet } from './lora-set.ts';
import { randomizeLoraB, tinyConfig, tinyWeights } from './testing.ts';
import { createValueHead, releaseValueHeadState, valueHeadBackward, valueHeadForward } from './value-head.ts';
import { createWeightGrads, refreshFusedWeights, uploadWeights } from './weights.ts';

const batch: BatchInput = {
  B: 2,
  T: 5,
  ids: Int32Array.from([3, 7, 1, 30, 12, 0, 0, 5, 9, 21]),
  mask: Int32Array.from([1, 1, 1, 1, 1, 0, 0, 1, 1, 1]), // left padding on sequence 1
  slots: Int32Array.from([0, 1]),
};

async function setElement(gpu: Gpu, t: Tensor, i: number, value: number): Promise<number> {
  const all = await gpu.readF32(t);
  const old = all[i];
  gpu.write(t, Float32Array.of(value), i * 4);
  return old;
}

describe('decoder + value head gradients', () => {
  for (const fused of [false, true])
    it(`match finite differences for LoRA, value-head and full-parameter gradients${fused ? ' (fused path)' : ''}`, async () => {
      const gpu = await testGpu();
      const config = tinyConfig({ model_type: 'qwen2', architectures: ['Qwen2ForCausalLM'] }); // q/k/v biases too
      const weights = uploadWeights(gpu, config, (n) => tinyWeights(config, 5).get(n));
      const dec = new Decoder(gpu, config, weights, { fused });
      const lora = createLoraSet(
        gpu,
        config,
        { r: 2, alpha: 4, targets: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'], slots: 2 },
        7,
      );
      randomizeLoraB(gpu, lora, (shape) => shape[1] + 3);
      const head = createValueHead(gpu, config.hiddenSize, [8], 2, 11);
      const N = batch.B * batch.T;
      const V = config.vocabSize;
      const wl = Float32Array.from(randn(N * V, 21));
      const wv = Float32Array.from(randn(2 * N, 22));
      const ones = gpu.upload(new Float32Array(N).fill(1), [1, N], 'f32', 'ones');

      const loss = async (): Promise<number> => {
        if (fused) refreshFusedWeights(gpu, weights); // the finite differences change weights in place
        const st = dec.forward({ ...batch, adapters: lora });
        const hs = valueHeadForward(gpu, head, st.hN);
        const [lg, vs] = [await gpu.readF32(st.logits!), await gpu.readF32(hs.values)];
        releaseValueHeadState(gpu, hs);
        dec.release(st);
        let L = 0;
        for (let i = 0; i < lg.length; i++) L += lg[i] * wl[i];
        for (let i = 0; i < vs.length; i++) L += vs[i] * wv[i];
        return L;
      };

      // analytic gradients
      const grads = createWeightGrads(gpu, weights);
      const st = dec.forward({ ...batch, adapters: lora }, { save: true });
      const hs = valueHeadForward(gpu, head, st.hN);
      const dlogits = gpu.upload(wl, [N, V], 'f32', 'dlogits');
      const dvalues = gpu.upload(wv, [2, N], 'f32', 'dvalues');
      const dhN = gpu.tensor([N, config.hiddenSize], 'f32', 'dhN');
      valueHeadBackward(gpu, head, hs, dvalues, dhN, ones);
      dec.backward(st, dlogits, dhN, grads);
      releaseValueHeadState(gpu, hs);
      dec.release(st);

      const cases: Array<{ name: string; param: Tensor; grad: Tensor; idx: number[] }> = [];
      const l0 = lora.layers[0];
      const l1 = lora.layers[1];
      cases.push(
        { name: 'lora q A slot0', param: l0.q_proj!.A, grad: l0.q_proj!.dA, idx: [5] },
        { name: 'lora q A slot1', param: l0.q_proj!.A, grad: l0.q_proj!.dA, idx: [2 * 16 + 3] },
        { name: 'lora k B', param: l1.k_proj!.B, grad: l1.k_proj!.dB, idx: [9] },
        { name: 'lora v B slot1', param: l0.v_proj!.B, grad: l0.v_proj!.dB, idx: [8 * 2 + 3] },
        { name: 'lora o A', param: l1.o_proj!.A, grad: l1.o_proj!.dA, idx: [4] },
        { name: 'lora gate B', param: l0.gate_proj!.B, grad: l0.gate_proj!.dB, idx: [7] },
        { name: 'lora up A', param: l1.up_proj!.A, grad: l1.up_proj!.dA, idx: [11] },
        { name: 'lora down B', param: l0.down_proj!.B, grad: l0.down_proj!.dB, idx: [24 * 2 + 1] },
        { name: 'head W0', param: head.heads[0][0].W, grad: head.heads[0][0].dW, idx: [2] },
        { name: 'head b1 (head 1)', param: head.heads[1][1].b, grad: head.heads[1][1].db, idx: [0] },
        { name: 'head W1 (head 1)', param: head.heads[1][1].W, grad: head.heads[1][1].dW, idx: [5] },
        { name: 'embed', param: weights.embed[0], grad: grads.embed[0], idx: [7 * 16 + 2] },
        { name: 'q_proj.weight', param: weights.layers[0].linear.q_proj, grad: grads.layers[0].linear.q_proj, idx: [13] },
        { name: 'k_proj.bias', param: weights.layers[1].bias.k_proj!, grad: grads.layers[1].bias.k_proj!, idx: [2] },
        { name: 'down_proj.weight', param: weights.layers[1].linear.down_proj, grad: grads.layers[1].linear.down_proj, idx: [30] },
        { name: 'input_layernorm', param: weights.layers[0].inNorm, grad: grads.layers[0].inNorm, idx: [4] },
        { name: 'norm', param: weights.norm, grad: grads.norm, idx: [1] },
        { name: 'lm_head', param: weights.lmHead[0], grad: grads.lmHead[0], idx: [40] },
      );
      const eps = 1e-2;
      const failures: string[] = [];
      for (const c of cases) {
        const g = await gpu.readF32(c.grad);
        for (const i of c.idx) {
          const x = await setElement(gpu, c.param, i, 0);
          gpu.write(c.param, Float32Array.of(x + eps), i * 4);
          const up = await loss();
          gpu.write(c.param, Float32Array.of(x - eps), i * 4);
          const down = await loss();
          gpu.write(c.param, Float32Array.of(x), i * 4);
          const fd = (up - down) / (2 * eps);
          const ok = Math.abs(fd - g[i]) <= 2e-3 + 2e-2 * Math.abs(fd);
          console.log(`${ok ? 'ok ' : 'BAD'} ${c.name}[${i}]: backward ${g[i].toPrecision(6)}, finite difference ${fd.toPrecision(6)}`);
          if (!ok) failures.push(`${c.name}[${i}]`);
        }
      }
      expect(failures).toEqual([]);
    });
});

describe('activation checkpointing', () => {
  for (const fused of [false, true])
    it(`save: 'checkpoint' gives the same gradients as save: true, recomputing each layer in backward${fused ? ' (fused path)' : ''}`, async () => {
      const gpu = await testGpu();
      const config = tinyConfig({ model_type: 'qwen2', architectures: ['Qwen2ForCausalLM'] });
      const weights = uploadWeights(gpu, config, (n) => tinyWeights(config, 6).get(n));
      const dec = new Decoder(gpu, config, weights, { fused });
      const lora = createLoraSet(gpu, config, { r: 2, alpha: 4, targets: ['q_proj', 'v_proj', 'o_proj', 'down_proj'], slots: 2 }, 8);
      randomizeLoraB(gpu, lora, (shape) => shape[1] + 5);
      const N = batch.B * batch.T;
      const dlogits = gpu.upload(Float32Array.from(randn(N * config.vocabSize, 31)), [N, config.vocabSize], 'f32', 'dlogits');
      const run = async (
        save: true | 'checkpoint',
      ): Promise<{ grads: Float32Array[]; logits: Float32Array; layersKept: number; inUse: number }> => {
        const grads = createWeightGrads(gpu, weights);
        for (const layer of lora.layers)
          for (const p of Object.values(layer)) {
            gpu.fill(p.dA, 0);
            gpu.fill(p.dB, 0);
          }
        const before = gpu.pool.stats.bytesInUse;
        const st = dec.forward({ ...batch, adapters: lora }, { save });
        const logits = await gpu.readF32(st.logits!);
        const layersKept = st.layers.length;
        const inUse = gpu.pool.stats.bytesInUse - before;
        dec.backward(st, dlogits, null, grads);
        dec.release(st);
        const out: Float32Array[] = [];
        for (const layer of lora.layers) for (const p of Object.values(layer)) out.push(await gpu.readF32(p.dA), await gpu.readF32(p.dB));
        out.push(await gpu.readF32(grads.layers[0].linear.q_proj), await gpu.readF32(grads.embed[0]), await gpu.readF32(grads.norm));
        return { grads: out, logits, layersKept, inUse };
      };
      const full = await run(true);
      const ckpt = await run('checkpoint');
      expect(full.layersKept).toBe(config.numLayers);
      expect(ckpt.layersKept).toBe(0);
      expect(ckpt.inUse).toBeLessThan(full.inUse * 0.6); // activations not kept
      expect(Array.from(ckpt.logits)).toEqual(Array.from(full.logits));
      expect(full.grads.some((g) => g.some((v) => v !== 0))).toBe(true);
      ckpt.grads.forEach((g, i) => expect(Array.from(g)).toEqual(Array.from(full.grads[i])));
    });
});
