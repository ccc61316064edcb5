import { describe, expect, it } from 'vitest';
import type { Gpu } from '../../src/gpu/gpu.ts';
import type { Tensor } from '../../src/gpu/tensor.ts';
import { expectClose, randn, testGpu } from '../testing.ts';
import { ADAMW_STATS, type AdamWGroup, adamwBegin, adamwStats, adamwStep, adamwUpdate, zeroGrads } from './adamw.ts';
import { type AdamWRefGroup, adamwSlotsStepRef, adamwStepRef } from './adamw.ref.ts';

const SIZES = [1, 7, 64, 65, 130, 5000]; // one group each: below, at and off the workgroup size, and > one reduce segment
const f32 = (a: Float64Array) => Float64Array.from(Float32Array.from(a));
const HP = { lr: 1e-2, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0.1 };

interface Setup {
  gpu: Gpu;
  groups: AdamWGroup[];
  ref: AdamWRefGroup[];
  stats: Tensor;
}

async function setup(seed: number): Promise<Setup> {
  const gpu = await testGpu();
  const ref: AdamWRefGroup[] = SIZES.map((n, k) => ({
    params: f32(randn(n, seed + k)),
    grads: new Float64Array(n),
    m: new Float64Array(n),
    v: new Float64Array(n),
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
  for (const [label, maxNorm] of [
    ['clipping active', 0.5],
    ['clipping inactive', 1e6],
    ['no clipping', 0],
  ] as const) {
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
    for (const k of [1, 4]) {
      s.ref[k].decay = false;
      s.groups[k] = { ...s.groups[k], decay: false };
    }
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
    expect(() => adamwStep(gpu, [{ params, grads, m, v }], stats, HP)).toThrow(
      /adamwStep: v must be f32 with 10 elements like params \[10\] f32, got \[9\] f32/,
    );
    expect(() => adamwUpdate(gpu, { params, grads, m, v: m }, stats, { lr: 1, beta1: 1 })).toThrow(
      /adamwUpdate: betas must be in \[0, 1\)/,
    );
    expect(() => adamwBegin(gpu, small, [grads], 1)).toThrow(
      /adamwBegin: stats must be \(8\) or \(S, 8\) f32 with S <= 128, got \[4\] f32/,
    );
    const stats3 = adamwStats(gpu, 3);
    expect(() => adamwStep(gpu, [{ params, grads, m, v: m }], stats3, HP)).toThrow(
      /adamwStep: params \[10\] f32 does not split into the 3 slots of stats/,
    );
    expect(() => adamwStep(gpu, [{ params, grads, m, v: m }], stats, HP, [1])).toThrow(
      /adamwStep: active slot 1 is not a slot of the 1 in stats/,
    );
    expect(() => adamwStats(gpu, 129)).toThrow(/adamwStats: slots must be an integer in \[1, 128\], got 129/);
    gpu.release(stats3);
    expect(gpu.dispatchCount).toBe(before);
    gpu.release(params, grads, m, v, stats, small);
  });
});

// Per-slot state: one AdamW per agent, as legacy MARFT has it (marft/algorithms/appo_trainer.py: a
// torch.optim.AdamW per agent role, nn.utils.clip_grad_norm_(agent.parameters(), max_grad_norm) per agent,
// and with agent_iteration_interval > 0 only agent_to_train's optimiser steps), over slot-major tensors.
// (AReaL-MARFT's areal/engine/multi_adapter_mixin.py masks each adapter's loss but trains every adapter in
// one optimiser with one clip; the lab follows the legacy code here, as MARFT_REFERENCE.md records.)
describe('adamw per slot', () => {
  const upload = (gpu: Gpu, x: ArrayLike<number>, shape: number[], label: string) => gpu.upload(Float32Array.from(x), shape, 'f32', label);
  const group = (gpu: Gpu, p: ArrayLike<number>, g: ArrayLike<number>, shape: number[]): AdamWGroup => ({
    params: upload(gpu, p, shape, 'p'),
    grads: upload(gpu, g, shape, 'g'),
    m: gpu.zeros(shape, 'f32', 'm'),
    v: gpu.zeros(shape, 'f32', 'v'),
  });
  const releaseGroup = (gpu: Gpu, g: AdamWGroup) => gpu.release(g.params, g.grads, g.m, g.v);
  const slotOf = (a: Float32Array, s: number, S: number) => Array.from(a.subarray((s * a.length) / S, ((s + 1) * a.length) / S));

  it('clips each slot by its own norm and corrects bias by its own count (hand-worked)', async () => {
    // params (2, 2): slot 0 gradient (3, 4), norm 5; slot 1 gradient (0.3, 0.4), norm 0.5. maxNorm 1:
    // slot 0 is scaled by 1 / (5 + 1e-6), slot 1 not at all (a global clip, norm sqrt(25.25), would
    // shrink slot 1 by 0.199 too). First step, lr 0.1, b1 0.9, b2 0.999: m = 0.1 g, v = 0.001 g^2, and
    // m / bc1 / sqrt(v / bc2) = sign(g), so each parameter moves by -lr (to within eps / |g|).
    const gpu = await testGpu();
    const hp = { lr: 0.1, beta1: 0.9, beta2: 0.999, eps: 1e-8, maxNorm: 1 };
    const g = group(gpu, [1, 1, 1, 1], [3, 4, 0.3, 0.4], [2, 2]);
    const stats = adamwStats(gpu, 2);
    adamwStep(gpu, [g], stats, hp);
    const c = 1 / (5 + 1e-6);
    const st = await gpu.readF32(stats);
    expectClose('slot norms', [st[1], st[8 + 1]], [5, 0.5], { atol: 0, rtol: 1e-6 });
    expectClose('slot clip scales', [st[3], st[8 + 3]], [c, 1], { atol: 0, rtol: 1e-6 });
    expect([st[4], st[8 + 4]]).toEqual([1, 1]);
    expectClose('m', await gpu.read(g.m), [0.1 * 3 * c, 0.1 * 4 * c, 0.03, 0.04], { atol: 0, rtol: 1e-6 });
    expectClose('v', await gpu.read(g.v), [0.001 * 9 * c * c, 0.001 * 16 * c * c, 0.001 * 0.09, 0.001 * 0.16], { atol: 0, rtol: 5e-5 }); // 1 - b2 in f32: 1e-5 off
    expectClose('params', await gpu.read(g.params), [0.9, 0.9, 0.9, 0.9], { atol: 1e-6, rtol: 0 });
    // Step slot 1 alone with gradient (0.4, -0.3) (norm 0.5, no clip): its count becomes 2, slot 0's stays 1.
    // m = 0.9 (0.03, 0.04) + 0.1 (0.4, -0.3) = (0.067, 0.006); v = 0.999 (9e-5, 1.6e-4) + 0.001 (0.16, 0.09)
    // = (2.4991e-4, 2.4984e-4); bc1 = 0.19, bc2 = 0.001999: p -= 0.1 (m / 0.19) / (sqrt(v / 0.001999) + 1e-8).
    gpu.write(g.grads, Float32Array.from([100, 100, 0.4, -0.3])); // slot 0's gradient is ignored: it is frozen
    adamwStep(gpu, [g], stats, hp, [1]);
    const st2 = await gpu.readF32(stats);
    expect([st2[4], st2[8 + 4]]).toEqual([1, 2]);
    expect(Array.from(st2.subarray(1, 8))).toEqual(Array.from(st.subarray(1, 8))); // [0] is the reduction's scratch
    const m2 = [0.067, 0.006];
    const v2 = [0.999 * 9e-5 + 0.001 * 0.16, 0.999 * 1.6e-4 + 0.001 * 0.09];
    const p2 = m2.map((m, i) => 0.9 - (0.1 * (m / 0.19)) / (Math.sqrt(v2[i] / (1 - 0.999 ** 2)) + 1e-8));
    expectClose('params after slot 1 step', await gpu.read(g.params), [0.9, 0.9, ...p2], { atol: 2e-6, rtol: 0 });
    expectClose('m after slot 1 step', (await gpu.read(g.m)).subarray(2), m2, { atol: 1e-8, rtol: 1e-5 });
    // the float64 reference agrees with the hand-worked numbers
    const ref: AdamWRefGroup = {
      params: Float64Array.from([1, 1, 1, 1]),
      grads: [3, 4, 0.3, 0.4],
      m: new Float64Array(4),
      v: new Float64Array(4),
    };
    const s1 = adamwSlotsStepRef(
      [ref],
      [
        { step: 0, skipped: 0 },
        { step: 0, skipped: 0 },
      ],
      hp,
    );
    ref.grads = [100, 100, 0.4, -0.3];
    adamwSlotsStepRef([ref], s1, hp, [1]);
    expectClose('reference params', ref.params, [0.9, 0.9, ...p2], { atol: 1e-7, rtol: 0 });
    releaseGroup(gpu, g);
    gpu.release(stats);
  });

  it('matches the float64 reference over steps with changing active slots and a non-finite slot', async () => {
    const gpu = await testGpu();
    const S = 3;
    const shapes = [
      [S, 5, 2],
      [S, 4100],
      [S, 1],
    ]; // 4100 per slot: a slot spans two reduce segments
    const ref: AdamWRefGroup[] = shapes.map((sh, k) => {
      const n = sh.reduce((a, b) => a * b, 1);
      return { params: f32(randn(n, 70 + k)), grads: new Float64Array(n), m: new Float64Array(n), v: new Float64Array(n), decay: k !== 2 };
    });
    const groups: AdamWGroup[] = ref.map((r, k) => ({ ...group(gpu, r.params, r.grads, shapes[k]), decay: r.decay }));
    const stats = adamwStats(gpu, S);
    let states = Array.from({ length: S }, () => ({ step: 0, skipped: 0 }));
    const schedule: Array<number[] | undefined> = [undefined, [1], [0, 2], undefined];
    for (const [step, active] of schedule.entries()) {
      ref.forEach((r, k) => {
        const g = f32(randn(r.params.length, 500 + 10 * step + k, k === 1 ? 0.5 : 0.05));
        if (step === 3 && k === 1) g[g.length / S + 7] = NaN; // slot 1 of step 3: skipped, the others step
        r.grads = g;
        gpu.write(groups[k].grads, Float32Array.from(g));
      });
      adamwStep(gpu, groups, stats, { ...HP, maxNorm: 1 }, active);
      const next = adamwSlotsStepRef(ref, states, { ...HP, maxNorm: 1 }, active);
      const st = await gpu.readF32(stats);
      for (let s = 0; s < S; s++) {
        const o = s * ADAMW_STATS.size;
        expect([st[o + ADAMW_STATS.step], st[o + ADAMW_STATS.skipped]], `slot ${s} counts, step ${step}`).toEqual([
          next[s].step,
          next[s].skipped,
        ]);
        if (!active || active.includes(s)) {
          expect(st[o + ADAMW_STATS.nonFinite]).toBe(next[s].nonFinite ? 1 : 0);
          if (!next[s].nonFinite)
            expectClose(
              `slot ${s} norm, step ${step}`,
              [st[o + ADAMW_STATS.norm], st[o + ADAMW_STATS.clipScale]],
              [next[s].norm, next[s].clipScale],
              { atol: 0, rtol: 1e-5 },
            );
        }
      }
      states = next.map(({ step: t, skipped }) => ({ step: t, skipped }));
      for (const [k, r] of ref.entries()) {
        expectClose(`step ${step} params[${k}]`, await gpu.read(groups[k].params), r.params, { atol: 2e-6, rtol: 2e-6 });
        expectClose(`step ${step} m[${k}]`, await gpu.read(groups[k].m), r.m, { atol: 1e-7, rtol: 1e-5 });
        expectClose(`step ${step} v[${k}]`, await gpu.read(groups[k].v), r.v, { atol: 1e-9, rtol: 1e-5 });
      }
    }
    expect(states.map((x) => x.step)).toEqual([3, 2, 3]); // slot 1: steps 0 and 1, skipped at 3; slots 0, 2: steps 0, 2, 3
    expect(states.map((x) => x.skipped)).toEqual([0, 1, 0]);
    for (const g of groups) releaseGroup(gpu, g);
    gpu.release(stats);
  });

  it("a slot that steps first after others have is a fresh optimiser's first step, bit for bit", async () => {
    const gpu = await testGpu();
    const n = 300;
    const p = f32(randn(2 * n, 81));
    const slotted = group(gpu, p, f32(randn(2 * n, 82)), [2, n]);
    const stats = adamwStats(gpu, 2);
    for (let k = 0; k < 3; k++) {
      // agent 0 trains three times (agent by agent), agent 1 is frozen
      gpu.write(slotted.grads, Float32Array.from(randn(2 * n, 90 + k)));
      adamwStep(gpu, [slotted], stats, { ...HP, maxNorm: 0.5 }, [0]);
    }
    const g1 = f32(randn(2 * n, 99));
    gpu.write(slotted.grads, Float32Array.from(g1));
    adamwStep(gpu, [slotted], stats, { ...HP, maxNorm: 0.5 }, [1]); // agent 1's turn
    const fresh = group(gpu, p.subarray(n), g1.subarray(n), [n]);
    const freshStats = adamwStats(gpu);
    adamwStep(gpu, [fresh], freshStats, { ...HP, maxNorm: 0.5 });
    for (const k of ['params', 'm', 'v'] as const)
      expect(slotOf(await gpu.readF32(slotted[k]), 1, 2), k).toEqual(Array.from(await gpu.readF32(fresh[k])));
    expect(Array.from((await gpu.readF32(stats)).subarray(8))).toEqual(Array.from(await gpu.readF32(freshStats)));
    releaseGroup(gpu, slotted);
    releaseGroup(gpu, fresh);
    gpu.release(stats, freshStats);
  });

  it("a large gradient in one slot does not change another slot's update", async () => {
    const gpu = await testGpu();
    const n = 50;
    const p = f32(randn(2 * n, 7));
    const g = f32(randn(2 * n, 8, 0.1));
    const big = Float64Array.from(g, (x, i) => (i < n ? x * 1e4 : x));
    const [a, b] = [g, big].map((grads) => group(gpu, p, grads, [2, n]));
    const [sa, sb] = [adamwStats(gpu, 2), adamwStats(gpu, 2)];
    adamwStep(gpu, [a], sa, { ...HP, maxNorm: 0.5 });
    adamwStep(gpu, [b], sb, { ...HP, maxNorm: 0.5 });
    for (const k of ['params', 'm', 'v'] as const)
      expect(slotOf(await gpu.readF32(b[k]), 1, 2), k).toEqual(slotOf(await gpu.readF32(a[k]), 1, 2));
    expect(slotOf(await gpu.readF32(b.m), 0, 2)).not.toEqual(slotOf(await gpu.readF32(a.m), 0, 2));
    // one global clip would have shrunk slot 1's gradient by the big slot's norm
    const global = { params: Float64Array.from(p), grads: big, m: new Float64Array(2 * n), v: new Float64Array(2 * n) };
    adamwStepRef([global], { step: 0, skipped: 0 }, { ...HP, maxNorm: 0.5 });
    const m1 = slotOf(await gpu.readF32(a.m), 1, 2);
    expect(Math.abs(global.m[n]) * 100).toBeLessThan(Math.abs(m1[0]));
    releaseGroup(gpu, a);
    releaseGroup(gpu, b);
    gpu.release(sa, sb);
  });
});
