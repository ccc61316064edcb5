import { describe, expect, it } from 'vitest';
import { dot, expectClose, finiteDiff, randInt, randn, testGpu } from '../testing.ts';
import { ropeBackward, ropeForward, thetaInvFreq } from './rope.ts';
import { ropeAngles, ropeRef } from './rope.ref.ts';

// [B, T, NH, NKV, HS]: pairs per token (NH+NKV)*HS/2 at and off the 256-thread workgroup.
const SHAPES: Array<[number, number, number, number, number]> = [
  [1, 1, 1, 1, 2],
  [1, 7, 3, 1, 8],
  [2, 64, 4, 2, 64],
  [1, 65, 2, 1, 16],
  [2, 130, 2, 2, 32],
  [3, 5, 7, 1, 130],
];
const f32 = (a: Float64Array) => Float64Array.from(Float32Array.from(a));

/** Positions up to ~2000: per-sequence KV-cache offsets, and left padding (position 1 repeated) in sequence 0. */
function positions(B: number, T: number, seed: number): Int32Array {
  const off = randInt(B, seed, 1900);
  const pos = new Int32Array(B * T);
  for (let b = 0; b < B; b++) for (let t = 0; t < T; t++) pos[b * T + t] = off[b] + t;
  for (let t = 0; t < Math.min(3, T - 1); t++) pos[t] = 1;
  pos[B * T - 1] = 2047;
  return pos;
}

describe('rope', () => {
  for (const inplace of [false, true]) {
    for (const [B, T, NH, NKV, HS] of SHAPES) {
      const theta = HS === 64 ? 1e6 : 10000;
      it(`forward and backward ${inplace ? 'in place' : 'out of place'} B=${B} T=${T} NH=${NH} NKV=${NKV} HS=${HS}`, async () => {
        const gpu = await testGpu();
        const pos = positions(B, T, B + T);
        const q = f32(randn(B * T * NH * HS, 1 + T));
        const k = f32(randn(B * T * NKV * HS, 2 + T));
        const tPos = gpu.upload(pos, [B * T], 'i32', 'pos');
        const tQ = gpu.upload(q, [B, T, NH, HS], 'f32', 'q');
        const tK = gpu.upload(k, [B, T, NKV, HS], 'f32', 'k');
        const qo = inplace ? tQ : gpu.tensor([B, T, NH, HS], 'f32', 'qo');
        const ko = inplace ? tK : gpu.tensor([B, T, NKV, HS], 'f32', 'ko');
        ropeForward(gpu, qo, ko, tQ, tK, tPos, theta);
        const ang = ropeAngles(pos, HS, theta);
        const qRef = ropeRef(q, ang, B * T, NH, HS);
        const kRef = ropeRef(k, ang, B * T, NKV, HS);
        // The angle is HF's f32 value in both: what remains is the kernel's cos/sin and f32 products (~2e-7 here).
        const tol = { atol: 1e-6, rtol: 1e-5 };
        const qGot = await gpu.read(qo);
        expectClose('q', qGot, qRef, tol);
        expectClose('k', await gpu.read(ko), kRef, tol);
        if (!inplace) expectClose('q input untouched', await gpu.read(tQ), q, { atol: 0, rtol: 0 });
        // Against the ideal float64 angles the difference is HF's own f32 angle rounding: up to pos * 2^-24.
        const exact = ropeRef(q, ropeAngles(pos, HS, theta, true), B * T, NH, HS);
        expectClose('q vs exact angles', qGot, exact, { atol: 2048 * 2 ** -24 * 2 * 1.5 + 2e-6, rtol: 1e-5 });

        // backward: the inverse rotation of the gradients
        const dq = f32(randn(B * T * NH * HS, 3 + T));
        const dk = f32(randn(B * T * NKV * HS, 4 + T));
        const tDq = gpu.upload(dq, [B, T, NH, HS], 'f32', 'dqOut');
        const tDk = gpu.upload(dk, [B, T, NKV, HS], 'f32', 'dkOut');
        const dqi = inplace ? tDq : gpu.tensor([B, T, NH, HS], 'f32', 'dq');
        const dki = inplace ? tDk : gpu.tensor([B, T, NKV, HS], 'f32', 'dk');
        ropeBackward(gpu, dqi, dki, tDq, tDk, tPos, theta);
        expectClose('dq', await gpu.read(dqi), ropeRef(dq, ang, B * T, NH, HS, -1), tol);
        expectClose('dk', await gpu.read(dki), ropeRef(dk, ang, B * T, NKV, HS, -1), tol);
        gpu.release(tPos, tQ, tK, tDq, tDk);
        if (!inplace) gpu.release(qo, ko, dqi, dki);
      });
    }
  }

  it('takes a caller-built inv_freq tensor (rope_scaling)', async () => {
    const gpu = await testGpu();
    const [B, T, NH, NKV, HS] = [1, 9, 2, 1, 8];
    const pos = positions(B, T, 5);
    const inv = Float32Array.from(thetaInvFreq(HS, 500000), (v, d) => (d > 1 ? v / 8 : v));
    const ang = Float64Array.from({ length: (B * T * HS) / 2 }, (_, i) => Math.fround(pos[Math.floor(i / (HS / 2))] * inv[i % (HS / 2)]));
    const q = f32(randn(B * T * NH * HS, 6));
    const k = f32(randn(B * T * NKV * HS, 7));
    const tPos = gpu.upload(pos, [B * T], 'i32', 'pos');
    const tInv = gpu.upload(inv, [HS / 2], 'f32', 'inv_freq');
    const tQ = gpu.upload(q, [B, T, NH, HS], 'f32', 'q');
    const tK = gpu.upload(k, [B, T, NKV, HS], 'f32', 'k');
    ropeForward(gpu, tQ, tK, tQ, tK, tPos, tInv);
    expectClose('q', await gpu.read(tQ), ropeRef(q, ang, B * T, NH, HS), { atol: 2e-6, rtol: 1e-5 });
    expectClose('k', await gpu.read(tK), ropeRef(k, ang, B * T, NKV, HS), { atol: 2e-6, rtol: 1e-5 });
    gpu.release(tPos, tInv, tQ, tK);
  });

  it('inv_freq is theta^(-2d/HS) rounded to f32', () => {
    for (const [HS, theta] of [
      [64, 10000],
      [128, 1e6],
      [2, 10000],
    ]) {
      const inv = thetaInvFreq(HS, theta);
      expectClose(
        `inv_freq HS=${HS}`,
        inv,
        Float64Array.from(inv, (_, d) => theta ** ((-2 * d) / HS)),
        { atol: 0, rtol: 2 ** -23 },
      );
    }
  });

  it('backward reference matches finite differences of the forward', () => {
    const [BT, H, HS] = [4, 2, 6];
    const pos = [0, 3, 1500, 2047];
    const ang = ropeAngles(pos, HS, 10000);
    const x = randn(BT * H * HS, 41);
    const dy = randn(BT * H * HS, 42);
    const fd = finiteDiff((v) => dot(ropeRef(v, ang, BT, H, HS), dy), x);
    expectClose('dx vs fd', ropeRef(dy, ang, BT, H, HS, -1), fd, { atol: 1e-8, rtol: 1e-6 });
  });

  it('rejects mismatched shapes before dispatch', async () => {
    const gpu = await testGpu();
    const q = gpu.upload(randn(2 * 3 * 2 * 4, 1), [2, 3, 2, 4], 'f32', 'q');
    const k = gpu.upload(randn(2 * 3 * 1 * 4, 2), [2, 3, 1, 4], 'f32', 'k');
    const kBad = gpu.upload(randn(2 * 3 * 1 * 6, 2), [2, 3, 1, 6], 'f32', 'kBad');
    const pos = gpu.upload([0, 1, 2, 3, 4, 5], [6], 'i32', 'pos');
    const posBad = gpu.upload([0, 1, 2], [3], 'i32', 'posBad');
    const qo = gpu.tensor([2, 3, 2, 4], 'f32', 'qo');
    const before = gpu.dispatchCount;
    expect(() => ropeForward(gpu, q, kBad, q, kBad, pos, 10000)).toThrow(
      /ropeForward: k must be \(2, 3, NKV, 4\) f32 like q \[2, 3, 2, 4\] f32, got \[2, 3, 1, 6\] f32/,
    );
    expect(() => ropeForward(gpu, q, k, q, k, posBad, 10000)).toThrow(/ropeForward: pos must be \(6\) i32/);
    expect(() => ropeForward(gpu, qo, k, q, k, pos, 10000)).toThrow(/both be rotated in place or both out of place/);
    expect(() => ropeBackward(gpu, q, k, q, k, pos, gpu.tensor([3], 'f32', 'inv'))).toThrow(/ropeBackward: inv_freq must be \(2\) f32/);
    expect(gpu.dispatchCount).toBe(before);
    gpu.release(q, k, kBad, pos, posBad, qo);
  });
});
