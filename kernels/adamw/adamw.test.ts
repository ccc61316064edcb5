import { describe, expect, it } from 'vitest';
import type { Gpu } from '../../src/gpu/gpu.ts';
import type { Tensor } from '../../src/gpu/tensor.ts';
import { expectClose, randn, testGpu } from '../testing.ts';
import { ADAMW_STATS, type AdamWGroup, adamwBegin, adamwStats, adamwStep, adamwUpdate, zeroGrads } from './adamw.ts';
import { type AdamWRefGroup, adamwStepRef } from './adamw.ref.ts';

const SIZES = [1, 7, 64, 65, 130, 5000]; // one group each: below, at and off the workgroup size, and > one reduce segment
const f32 = (a: Float64Array) => Float64Array.from(Float32Array.from(a));
const HP = { lr: 1e-2, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0.1 };

interface Setup { gpu: Gpu; groups: AdamWGroup[]; ref: AdamWRefGroup[]; stats: Tensor }

async function setup(seed: number): Promise<Setup> {
  const gpu = await testGpu();
  const ref: AdamWRefGroup[] = SIZES.map((n, k) => ({
    params: f32(randn(n, seed + k)), grads: new Float64Array(n), m: new Float64Array(n), v: new Float64Array(n),
  }));
  const groups = ref.map((r, k) => ({
    params: gpu.upload(r.params, [r.params.length], 'f32', `p${k}`),
    grads: gpu.zeros([r.params.length], 'f32', `g${k}`),
    m: gpu.zeros([r.params.length], 'f32', `m${k}`),
    v: gpu.zeros([r.params.length], 'f32', `v${k}`),
  }));
  return { gpu, groups, ref, stats: adamwStats(gpu) };
}

function setGrads(s: Setup, seed: number, scale: number, poison?: number): void {
  s.ref.forEach((r, k) => {
    const g = f32(randn(r.params.length, seed + 31 * k, scale));
    if (poison !== undefined && k === 4) g[3] = poison;
    r.grads = g;
    s.gpu.release(s.groups[k].grads);
    s.groups[k] = { ...s.groups[k], grads: s.gpu.upload(g, [g.length], 'f32', `g${k}`) };
  });
}

async function compare(s: Setup, label: string): Promise<void> {
  for (const [k, r] of s.ref.entries()) {
    const g = s.groups[k];
    expectClose(`${label} params[${k}]`, await s.gpu.read(g.params), r.params, { atol: 2e-6, rtol: 2e-6 });
    expectClose(`${label} m[${k}]`, await s.gpu.read(g.m), r.m, { atol: 1e-7, rtol: 1e-5 });
    expectClose(`${label} v[${k}]`, await s.gpu.read(g.v), r.v, { atol: 1e-9, rtol: 1e-5 });
  }
}

function release(s: Setup): void {
  for (const g of s.groups) s.gpu.release(g.params, g.grads, g.m, g.v);
  s.gpu.release(s.stats);
}

describe('adamw', () => {
  for (const [label, maxNorm] of [['clipping active', 0.5], ['clipping inactive', 1e6], ['no clipping', 0]] as const) {
    it(`three steps, ${label}`, async () => {
      const s = await setup(1);
      let state = { step: 0, skipped: 0 };
      for (let step = 0; step < 3; step++) {
        setGrads(s, 100 + step, 0.3);
        adamwStep(s.gpu, s.groups, s.stats, { ...HP, maxNorm });
        const r = adamwStepRef(s.ref, state, { ...HP, maxNorm });
        state = r;
        const st = await s.gpu.read(s.stats);
        expectClose(`norm step ${step}`, [st[ADAMW_STATS.norm]], [r.norm], { atol: 0, rtol: 1e-5 });
        expectClose(`clip step ${step}`, [st[ADAMW_STATS.clipScale]], [r.clipScale], { atol: 0, rtol: 1e-5 });
        if (label === 'clipping active') expect(r.clipScale).toBeLessThan(0.2);
        expect([st[ADAMW_STATS.nonFinite], st[ADAMW_STATS.step], st[ADAMW_STATS.skipped]]).toEqual([0, step + 1, 0]);
        await compare(s, `${label} step ${step}`);
      }
      release(s);
    });
  }

  it('exempts groups with decay false from weight decay', async () => {
    const s = await setup(3);
    for (const k of [1, 4]) { s.ref[k].decay = false; s.groups[k] = { ...s.groups[k], decay: false }; }
    let state = { step: 0, skipped: 0 };
    for (let step = 0; step < 2; step++) {
      setGrads(s, 300 + step, 0.3);
      adamwStep(s.gpu, s.groups, s.stats, { ...HP, weightDecay: 0.5, maxNorm: 1 });
      state = adamwStepRef(s.ref, state, { ...HP, weightDecay: 0.5, maxNorm: 1 });
      await compare(s, `decay step ${step}`);
    }
    release(s);
  });

  for (const poison of [NaN, Infinity, 1e30]) {
    it(`skips a step whose gradient norm is not finite (${poison}), then goes on`, async () => {
      const s = await setup(2);
      let state = { step: 0, skipped: 0 };
      for (let step = 0; step < 3; step++) {
        setGrads(s, 200 + step, 0.3, step === 1 ? poison : undefined);
        adamwStep(s.gpu, s.groups, s.stats, { ...HP, maxNorm: 1 });
        const r = adamwStepRef(s.ref, state, { ...HP, maxNorm: 1 });
        state = r;
        const st = await s.gpu.read(s.stats);
        expect(st[ADAMW_STATS.nonFinite]).toBe(step === 1 ? 1 : 0);
        expect([st[ADAMW_STATS.step], st[ADAMW_STATS.skipped]]).toEqual(step === 0 ? [1, 0] : step === 1 ? [1, 1] : [2, 1]);
        await compare(s, `step ${step}`); // step 1: everything unchanged
      }
      release(s);
    });
  }

  it('zeroGrads clears gradients in the command stream', async () => {
    const gpu = await testGpu();
    const g = gpu.upload(randn(70, 3), [70], 'f32', 'g');
    zeroGrads(gpu, [g]);
    expect(Array.from(await gpu.read(g)).every((x) => x === 0)).toBe(true);
    gpu.release(g);
  });

  it('rejects mismatched shapes before dispatch', async () => {
    const gpu = await testGpu();
    const params = gpu.zeros([10], 'f32', 'p');
    const grads = gpu.zeros([10], 'f32', 'g');
    const m = gpu.zeros([10], 'f32', 'm');
    const v = gpu.zeros([9], 'f32', 'v');
    const stats = adamwStats(gpu);
    const small = gpu.zeros([4], 'f32', 'stats4');
    const before = gpu.dispatchCount;
    expect(() => adamwStep(gpu, [{ params, grads, m, v }], stats, HP)).toThrow(/adamwStep: v must be f32 with 10 elements like params \[10\] f32, got \[9\] f32/);
    expect(() => adamwUpdate(gpu, { params, grads, m, v: m }, stats, { lr: 1, beta1: 1 })).toThrow(/adamwUpdate: betas must be in \[0, 1\)/);
    expect(() => adamwBegin(gpu, small, [grads], 1)).toThrow(/adamwBegin: stats must be \(8\) f32, got \[4\] f32/);
    expect(gpu.dispatchCount).toBe(before);
    gpu.release(params, grads, m, v, stats, small);
  });
});
