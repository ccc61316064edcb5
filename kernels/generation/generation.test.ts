import { describe, expect, it } from 'vitest';
import { testGpu } from '../testing.ts';
import { type StepTensors, advanceStep } from './generation.ts';
import { type StepState, advanceRef } from './generation.ref.ts';

describe('generation advance', () => {
  // B past the workgroup's 64 threads; no stop tokens and three; limits of 0 (ended before the first step), 1 and more
  for (const [B, stops] of [
    [3, []],
    [70, [5, 9, 2]],
    [1, [0]],
  ] as const) {
    it(`B=${B} with ${stops.length} stop tokens, step by step against the reference`, async () => {
      const gpu = await testGpu();
      const Tp = 6;
      const plen = Int32Array.from({ length: B }, (_, b) => 1 + ((b * 5) % Tp));
      const limit = Int32Array.from({ length: B }, (_, b) => (b * 7 + 3) % 9);
      const init: StepState = {
        step: 0,
        len: 0,
        pos: new Int32Array(B),
        kept: Int32Array.from({ length: B + 1 }, (_, b) => (b < B && limit[b] <= 0 ? 0 : -1)),
      };
      const s: StepTensors = {
        step: gpu.upload([0], [1], 'i32', 'step'),
        len: gpu.zeros([1], 'i32', 'len'),
        pos: gpu.zeros([B], 'i32', 'pos'),
        kept: gpu.upload(init.kept, [B + 1], 'i32', 'kept'),
        plen: gpu.upload(plen, [B], 'i32', 'plen'),
        limit: gpu.upload(limit, [B], 'i32', 'limit'),
        stops: gpu.upload(stops.length ? [...stops] : [0], [Math.max(1, stops.length)], 'i32', 'stops'),
        NS: stops.length,
        Tp,
      };
      let want = init;
      let ended = 0;
      for (let step = 0; step < 9; step++) {
        const tokens = Int32Array.from({ length: B }, (_, b) => (b * 3 + step * 11) % 13);
        const token = gpu.upload(tokens, [B], 'i32', 'token');
        advanceStep(gpu, s, token);
        want = advanceRef(want, tokens, plen, limit, [...stops], Tp);
        const [st, len, pos, kept] = await gpu.readMany([s.step, s.len, s.pos, s.kept]);
        expect([st[0], len[0]]).toEqual([want.step, want.len]);
        expect(Array.from(pos)).toEqual(Array.from(want.pos));
        expect(Array.from(kept)).toEqual(Array.from(want.kept));
        gpu.release(token);
        ended = Array.from(want.kept.slice(0, B)).filter((k) => k > 0).length;
      }
      expect(want.kept[B]).toBe(0); // every limit is under 9 steps
      expect(ended).toBeGreaterThan(0);
      gpu.release(s.step, s.len, s.pos, s.kept, s.plen, s.limit, s.stops);
    });
  }

  it('refuses mismatched shapes before dispatch', async () => {
    const gpu = await testGpu();
    const t = (n: number) => gpu.zeros([n], 'i32', 'x');
    const s: StepTensors = { step: t(1), len: t(1), pos: t(2), kept: t(2), plen: t(2), limit: t(2), stops: t(1), NS: 0, Tp: 3 };
    const before = gpu.dispatchCount;
    expect(() => advanceStep(gpu, s, t(2))).toThrow(/advanceStep: kept must be \(3\) i32/);
    expect(gpu.dispatchCount).toBe(before);
  });
});
