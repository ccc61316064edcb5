// The shared optimiser against the float64 AdamW reference: groups built from (param, grad, decay), one
// step with clipping and per-group decay, the non-finite skip in the stats, clearing grads, and release;
// a slotted one (one state per LoRA slot) against the per-slot reference.

import { describe, expect, it } from 'vitest';
import { type AdamWRefGroup, adamwSlotsStepRef, adamwStepRef } from '../../kernels/adamw/adamw.ref.ts';
import { expectClose, randn, testGpu } from '../../kernels/testing.ts';
import { clearGrads, createOptimizer, optimizerStep, readOptimizerStats, readSlotStats, releaseOptimizer } from './optimizer.ts';

const f32 = (a: Float64Array) => Float64Array.from(Float32Array.from(a));
const HP = { lr: 1e-2, beta1: 0.9, beta2: 0.95, eps: 1e-8, weightDecay: 0.3, maxNorm: 0.5 };

describe('optimizer', () => {
  it('steps every group like the AdamW reference (decay only where asked), skips a non-finite step, clears grads', async () => {
    const gpu = await testGpu();
    const sizes = [12, 5, 300];
    const ref: AdamWRefGroup[] = sizes.map((n, k) => ({
      params: f32(randn(n, 10 + k)),
      grads: f32(randn(n, 20 + k, 0.4)),
      m: new Float64Array(n),
      v: new Float64Array(n),
      decay: k !== 1,
    }));
    const params = ref.map((r, k) => ({
      param: gpu.upload(r.params, [r.params.length], 'f32', `p${k}`),
      grad: gpu.upload(r.grads, [r.params.length], 'f32', `g${k}`),
      decay: r.decay,
    }));
    const o = createOptimizer(gpu, params);
    expect(o.groups.map((g) => g.params)).toEqual(params.map((p) => p.param)); // the order given: checkpoints rely on it
    optimizerStep(gpu, o, HP);
    const r = adamwStepRef(ref, { step: 0, skipped: 0 }, HP);
    for (const [k, g] of o.groups.entries()) {
      expectClose(`params[${k}]`, await gpu.read(g.params), ref[k].params, { atol: 2e-6, rtol: 2e-6 });
      expectClose(`m[${k}]`, await gpu.read(g.m), ref[k].m, { atol: 1e-7, rtol: 1e-5 });
    }
    const s1 = await readOptimizerStats(gpu, o);
    expectClose('norm', [s1.norm], [r.norm], { atol: 0, rtol: 1e-5 });
    expect([s1.skipped, s1.steps, s1.skippedSteps]).toEqual([false, 1, 0]);

    const before = await gpu.readF32(o.groups[2].params);
    gpu.write(o.groups[0].grads, Float32Array.of(NaN), 0);
    optimizerStep(gpu, o, HP);
    expect(await readOptimizerStats(gpu, o)).toMatchObject({ skipped: true, steps: 1, skippedSteps: 1 });
    expect(await gpu.readF32(o.groups[2].params)).toEqual(before);

    clearGrads(gpu, o);
    for (const g of o.groups) expect((await gpu.readF32(g.grads)).every((x) => x === 0)).toBe(true);
    const inUse = gpu.pool.stats.bytesInUse;
    releaseOptimizer(gpu, o);
    expect(gpu.pool.stats.bytesInUse).toBeLessThan(inUse);
    expect(await gpu.readF32(params[0].param)).toHaveLength(12); // the parameters stay the caller's
    gpu.release(...params.flatMap((p) => [p.param, p.grad]));
  });

  it('a slotted optimiser keeps a state per slot and steps only the slots asked for', async () => {
    const gpu = await testGpu();
    const S = 2;
    const ref: AdamWRefGroup[] = [
      [S, 3, 4],
      [S, 6],
    ].map((sh, k) => {
      const n = sh.reduce((a, b) => a * b, 1);
      return {
        params: f32(randn(n, 40 + k)),
        grads: f32(randn(n, 50 + k, k === 0 ? 2 : 0.1)),
        m: new Float64Array(n),
        v: new Float64Array(n),
      };
    });
    const shapes = [
      [S, 3, 4],
      [S, 6],
    ];
    const params = ref.map((r, k) => ({
      param: gpu.upload(r.params, shapes[k], 'f32', `p${k}`),
      grad: gpu.upload(r.grads, shapes[k], 'f32', `g${k}`),
    }));
    const o = createOptimizer(gpu, params, S);
    expect([o.slots, o.stats.shape]).toEqual([2, [2, 8]]);
    optimizerStep(gpu, o, HP);
    optimizerStep(gpu, o, HP, [1]);
    let st = adamwSlotsStepRef(
      ref,
      [
        { step: 0, skipped: 0 },
        { step: 0, skipped: 0 },
      ],
      HP,
    );
    st = adamwSlotsStepRef(ref, st, HP, [1]);
    for (const [k, g] of o.groups.entries())
      expectClose(`params[${k}]`, await gpu.read(g.params), ref[k].params, { atol: 2e-6, rtol: 2e-6 });
    const slots = await readSlotStats(gpu, o);
    expect(slots.map((x) => [x.steps, x.skipped])).toEqual([
      [1, false],
      [2, false],
    ]);
    expect(st.map((x) => x.step)).toEqual([1, 2]);
    await expect(readOptimizerStats(gpu, o)).rejects.toThrow(/readOptimizerStats: the optimiser has 2 slots: read them with readSlotStats/);
    releaseOptimizer(gpu, o);
    gpu.release(...params.flatMap((p) => [p.param, p.grad]));
  });
});
