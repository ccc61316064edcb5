// ForwardOptions.logitRows: logits at chosen rows only (scoring and the update take them at the action
// rows). Checked against the full forward it replaces: the same logits at those rows, and a backward of
// dlogits at the rows that equals the full backward's with dlogits zero elsewhere (LoRA, full-parameter and
// LM-head gradients), on the unfused and the fused path.

import { describe, expect, it } from 'vitest';
import { randn, testGpu } from '../../kernels/testing.ts';
import type { BatchInput } from './batch.ts';
import { Decoder } from './decoder.ts';
import { createLoraSet } from './lora-set.ts';
import { randomizeLoraB, tinyConfig, tinyWeights } from './testing.ts';
import { createWeightGrads, uploadWeights } from './weights.ts';

const batch: BatchInput = {
  B: 2,
  T: 5,
  ids: Int32Array.from([3, 7, 1, 30, 12, 4, 9, 5, 0, 0]),
  mask: Int32Array.from([1, 1, 1, 1, 1, 1, 1, 1, 0, 0]), // right padding on sequence 1, as action batches are
  slots: Int32Array.from([1, 0]),
};
const rows = Int32Array.from([6, 2, 3, 4, 5]); // out of order, across both sequences

const close = (a: Float32Array, b: Float32Array, tol = 1e-5): void => {
  expect(a.length).toBe(b.length);
  const scale = Math.max(1e-3, ...Array.from(b, Math.abs));
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  expect(worst).toBeLessThanOrEqual(tol * scale);
};

describe('Decoder logitRows', () => {
  for (const fused of [false, true])
    it(`gives the full forward's logits at those rows and the same gradients${fused ? ' (fused path)' : ''}`, async () => {
      const gpu = await testGpu();
      const config = tinyConfig();
      const weights = uploadWeights(gpu, config, (n) => tinyWeights(config, 9).get(n));
      const dec = new Decoder(gpu, config, weights, { fused });
      const lora = createLoraSet(gpu, config, { r: 2, alpha: 4, targets: ['q_proj', 'v_proj', 'down_proj'], slots: 2 }, 3);
      randomizeLoraB(gpu, lora, (shape) => shape[1] + 2);
      const N = batch.B * batch.T;
      const V = config.vocabSize;
      const M = rows.length;
      const dRows = Float32Array.from(randn(M * V, 41));
      const dFull = new Float32Array(N * V);
      rows.forEach((r, i) => dFull.set(dRows.subarray(i * V, (i + 1) * V), r * V));

      const run = async (atRows: boolean): Promise<{ logits: Float32Array; grads: Float32Array[] }> => {
        const grads = createWeightGrads(gpu, weights);
        for (const layer of lora.layers)
          for (const p of Object.values(layer)) {
            gpu.fill(p.dA, 0);
            gpu.fill(p.dB, 0);
          }
        const st = dec.forward({ ...batch, adapters: lora }, { save: true, ...(atRows ? { logitRows: rows } : {}) });
        expect(st.logits!.shape).toEqual([atRows ? M : N, V]);
        const all = await gpu.readF32(st.logits!);
        const logits = atRows ? all : Float32Array.from(Array.from(rows).flatMap((r) => Array.from(all.subarray(r * V, (r + 1) * V))));
        const dlogits = atRows ? gpu.upload(dRows, [M, V], 'f32', 'dlogits') : gpu.upload(dFull, [N, V], 'f32', 'dlogits');
        dec.backward(st, dlogits, null, fused ? null : grads);
        gpu.release(dlogits);
        dec.release(st);
        const out: Float32Array[] = [];
        for (const layer of lora.layers) for (const p of Object.values(layer)) out.push(await gpu.readF32(p.dA), await gpu.readF32(p.dB));
        if (!fused)
          out.push(await gpu.readF32(grads.lmHead[0]), await gpu.readF32(grads.layers[0].linear.q_proj), await gpu.readF32(grads.norm));
        return { logits, grads: out };
      };
      const full = await run(false);
      const part = await run(true);
      close(part.logits, full.logits);
      expect(full.grads.every((g) => g.some((v) => v !== 0))).toBe(true);
      part.grads.forEach((g, i) => close(g, full.grads[i], 1e-4));
    });

  it("rejects rows outside the batch, an empty list, and rows without logits 'all'", async () => {
    const gpu = await testGpu();
    const config = tinyConfig();
    const dec = new Decoder(
      gpu,
      config,
      uploadWeights(gpu, config, (n) => tinyWeights(config, 9).get(n)),
      { fused: false },
    );
    const plain = { ...batch, slots: undefined };
    expect(() => dec.forward(plain, { logitRows: Int32Array.of(0, 10) })).toThrow(/logitRows must be a non-empty list of rows in 0\.\.9/);
    expect(() => dec.forward(plain, { logitRows: new Int32Array(0) })).toThrow(/non-empty/);
    expect(() => dec.forward(plain, { logits: 'last', logitRows: rows })).toThrow(/logitRows needs logits 'all'/);
  });
});
