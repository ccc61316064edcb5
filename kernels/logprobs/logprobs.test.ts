import { describe, expect, it } from 'vitest';
import { dot, expectClose, finiteDiff, randInt, randn, testGpu } from '../testing.ts';
import { logprobsBackward, logprobsForward } from './logprobs.ts';
import { logprobsBackwardRef, logprobsForwardRef } from './logprobs.ref.ts';

const SHAPES: Array<[N: number, V: number]> = [
  [1, 1],
  [3, 7],
  [4, 64],
  [5, 65],
  [6, 130],
  [3, 257],
  [2, 50000],
];
const f32 = (a: Float64Array) => Float64Array.from(Float32Array.from(a));

/** Logits with a wide range (scale 8) and targets with a padding row (-1) when N > 2. */
function data(N: number, V: number, seed: number) {
  const logits = f32(randn(N * V, seed, 8));
  const targets = randInt(N, seed + 1, V);
  if (N > 2) targets[1] = -1;
  return { logits, targets };
}

describe('logprobs', () => {
  for (const [N, V] of SHAPES) {
    for (const T of [1, 0.7]) {
      it(`forward N=${N} V=${V} T=${T}`, async () => {
        const gpu = await testGpu();
        const { logits, targets } = data(N, V, 100 + V);
        const tl = gpu.upload(logits, [N, V], 'f32', 'logits');
        const tt = gpu.upload(targets, [N], 'i32', 'targets');
        const [logp, ent, lse] = ['logp', 'entropy', 'lse'].map((l) => gpu.tensor([N], 'f32', l));
        logprobsForward(gpu, logp, ent, lse, tl, tt, { temperature: T });
        const ref = logprobsForwardRef(logits, targets, N, V, T);
        const tol = { atol: 2e-5 * Math.log2(V + 1), rtol: 2e-5 };
        expectClose('logp', await gpu.read(logp), ref.logp, tol);
        expectClose('entropy', await gpu.read(ent), ref.entropy, tol);
        expectClose('lse', await gpu.read(lse), ref.lse, tol);
        gpu.release(tl, tt, logp, ent, lse);
      });
    }
  }

  for (const [N, V] of SHAPES) {
    for (const mode of ['both', 'dlogp', 'dentropy', 'inplace'] as const) {
      if (V === 50000 && mode !== 'both' && mode !== 'inplace') continue;
      it(`backward ${mode} N=${N} V=${V}`, async () => {
        const gpu = await testGpu();
        const T = mode === 'inplace' ? 1.3 : 1;
        const { logits, targets } = data(N, V, 200 + V);
        const dlogp = mode === 'dentropy' ? null : randn(N, 300 + V);
        const dent = mode === 'dlogp' ? null : randn(N, 400 + V);
        const tl = gpu.upload(logits, [N, V], 'f32', 'logits');
        const tt = gpu.upload(targets, [N], 'i32', 'targets');
        const [logp, ent, lse] = ['logp', 'entropy', 'lse'].map((l) => gpu.tensor([N], 'f32', l));
        logprobsForward(gpu, logp, ent, lse, tl, tt, { temperature: T });
        const tdl = dlogp && gpu.upload(dlogp, [N], 'f32', 'dlogp');
        const tdh = dent && gpu.upload(dent, [N], 'f32', 'dentropy');
        const out = mode === 'inplace' ? tl : gpu.upload(randn(N * V, 5), [N, V], 'f32', 'dlogits'); // = overwrites
        logprobsBackward(gpu, out, tdl, tdh, tl, tt, ent, lse, { temperature: T, inPlace: mode === 'inplace' });
        const ref = logprobsBackwardRef(logits, targets, dlogp, dent, N, V, T);
        expectClose('dlogits', await gpu.read(out), ref, { atol: 2e-6, rtol: 1e-4 });
        gpu.release(tl, tt, logp, ent, lse, tdl ?? undefined, tdh ?? undefined, mode === 'inplace' ? undefined : out);
      });
    }
  }

  it('reference backward matches finite differences of the reference forward', () => {
    const [N, V, T] = [4, 9, 0.8];
    const logits = randn(N * V, 7, 3);
    const targets = Int32Array.from([2, -1, 8, 0]);
    const dlogp = randn(N, 8);
    const dent = randn(N, 9);
    const loss = (x: Float64Array) => {
      const r = logprobsForwardRef(x, targets, N, V, T);
      return dot(r.logp, dlogp) + dot(r.entropy, dent);
    };
    const fd = finiteDiff(loss, logits, 1e-6);
    expectClose('dlogits vs fd', logprobsBackwardRef(logits, targets, dlogp, dent, N, V, T), fd, { atol: 1e-8, rtol: 1e-6 });
  });

  it('handles -inf logits (masked tokens) and out-of-range targets', async () => {
    const gpu = await testGpu();
    const [N, V] = [3, 70];
    const logits = f32(randn(N * V, 11, 4));
    for (let j = 0; j < V; j += 3) logits[j] = -Infinity; // row 0: every third token masked
    const targets = Int32Array.from([1, V, 5]); // row 1: target out of range -> logp NaN, zero grad
    const tl = gpu.upload(logits, [N, V], 'f32', 'logits');
    const tt = gpu.upload(targets, [N], 'i32', 'targets');
    const [logp, ent, lse] = ['logp', 'entropy', 'lse'].map((l) => gpu.tensor([N], 'f32', l));
    logprobsForward(gpu, logp, ent, lse, tl, tt);
    const ref = logprobsForwardRef(logits, targets, N, V);
    expectClose('logp', await gpu.read(logp), ref.logp, { atol: 2e-5 });
    expectClose('entropy', await gpu.read(ent), ref.entropy, { atol: 2e-5 });
    const dlogp = randn(N, 12);
    const dent = randn(N, 13);
    const tdl = gpu.upload(dlogp, [N], 'f32', 'dlogp');
    const tdh = gpu.upload(dent, [N], 'f32', 'dent');
    const out = gpu.tensor([N, V], 'f32', 'dlogits');
    logprobsBackward(gpu, out, tdl, tdh, tl, tt, ent, lse);
    expectClose('dlogits', await gpu.read(out), logprobsBackwardRef(logits, targets, dlogp, dent, N, V), { atol: 2e-6, rtol: 1e-4 });
    gpu.release(tl, tt, logp, ent, lse, tdl, tdh, out);
  });

  it('rejects mismatched shapes before dispatch', async () => {
    const gpu = await testGpu();
    const tl = gpu.upload(randn(12, 1), [3, 4], 'f32', 'logits');
    const tt = gpu.upload([0, 1], [2], 'i32', 'targets');
    const t3 = gpu.upload([0, 1, 2], [3], 'i32', 'targets3');
    const [logp, ent, lse] = ['logp', 'entropy', 'lse'].map((l) => gpu.tensor([3], 'f32', l));
    const d = gpu.tensor([3, 5], 'f32', 'dlogits');
    const before = gpu.dispatchCount;
    expect(() => logprobsForward(gpu, logp, ent, lse, tl, tt)).toThrow(/logprobsForward: targets must be \(3\) i32, got \[2\] i32/);
    expect(() => logprobsBackward(gpu, d, logp, null, tl, t3, null, lse)).toThrow(
      /logprobsBackward: dlogits must be \(3, 4\) f32, got \[3, 5\] f32/,
    );
    expect(() => logprobsBackward(gpu, tl, logp, null, tl, t3, null, lse)).toThrow(/logprobsBackward: dlogits is the logits buffer/);
    expect(gpu.dispatchCount).toBe(before);
    gpu.release(tl, tt, t3, logp, ent, lse, d);
  });
});
