// The split-K decode forward (decode.wgsl) against the float64 reference, at edge key counts, with GQA,
// padding, a KV cache of larger capacity holding NaN past Tk, fully masked rows, and a chunk of Tq <= 4.
import { describe, expect, it } from 'vitest';
import { expectClose, randn, testGpu } from '../testing.ts';
import { DECODE_RMAX, LSE_MASKED, attentionForward, decodeChunk, decodeSharedBytes } from './attention.ts';
import { type AttnDims, attentionForwardRef } from './attention.ref.ts';

interface Case {
  B: number;
  Tq: number;
  Tk: number;
  Tcap: number;
  NH: number;
  NKV: number;
  HS: number;
  pad: 'none' | 'left' | 'right' | 'allpad';
}

const CASES: Case[] = [
  ...[1, 7, 64, 65, 130].map((Tk): Case => ({ B: 2, Tq: 1, Tk, Tcap: Tk + 3, NH: 9, NKV: 3, HS: 64, pad: 'left' })),
  { B: 3, Tq: 1, Tk: 130, Tcap: 130, NH: 6, NKV: 3, HS: 64, pad: 'none' },
  { B: 2, Tq: 4, Tk: 130, Tcap: 131, NH: 4, NKV: 1, HS: 8, pad: 'right' }, // R = 16 rows per kv head
  { B: 2, Tq: 3, Tk: 7, Tcap: 9, NH: 4, NKV: 2, HS: 8, pad: 'allpad' }, // batch row 0 sees no key
];

/** (B, Tcap) mask: row b has a different amount of padding at the start ('left') or before Tk ('right'). */
function makeMask(c: Case): Int32Array | null {
  if (c.pad === 'none') return null;
  const m = new Int32Array(c.B * c.Tcap).fill(1);
  for (let b = 0; b < c.B; b++) {
    const n = c.pad === 'allpad' && b === 0 ? c.Tk : Math.floor((c.Tk * (b + 1)) / (2 * c.B + 1));
    for (let j = 0; j < n; j++) m[b * c.Tcap + (c.pad === 'right' ? c.Tk - 1 - j : j)] = 0;
  }
  return m;
}

const f32 = (a: Float64Array) => Float64Array.from(Float32Array.from(a));

describe('attention decode (split-K)', () => {
  for (const c of CASES) {
    it(`B=${c.B} Tq=${c.Tq} Tk=${c.Tk} Tcap=${c.Tcap} NH/NKV=${c.NH}/${c.NKV} HS=${c.HS} pad=${c.pad}`, async () => {
      const gpu = await testGpu();
      const d: AttnDims = { B: c.B, Tq: c.Tq, Tk: c.Tk, Tcap: c.Tcap, NH: c.NH, NKV: c.NKV, HS: c.HS };
      const nq = c.B * c.Tq * c.NH * c.HS;
      const nk = c.B * c.Tcap * c.NKV * c.HS;
      const seed = 3 * c.Tk + c.Tq + c.HS;
      const q = f32(randn(nq, seed));
      const k = f32(randn(nk, seed + 1));
      const v = f32(randn(nk, seed + 2));
      const mask = makeMask(c);
      for (let b = 0; b < c.B; b++) {
        for (let j = 0; j < c.Tcap; j++) {
          if (j < c.Tk && (!mask || mask[b * c.Tcap + j])) continue;
          const o = (b * c.Tcap + j) * c.NKV * c.HS; // padding and stale cache entries: NaN must not leak
          k.fill(NaN, o, o + c.NKV * c.HS);
          v.fill(NaN, o, o + c.NKV * c.HS);
        }
      }
      const ref = attentionForwardRef(q, k, v, mask, d);
      const qShape = [c.B, c.Tq, c.NH, c.HS];
      const kShape = [c.B, c.Tcap, c.NKV, c.HS];
      const tq = gpu.upload(q, qShape, 'f32', 'q');
      const tk = gpu.upload(k, kShape, 'f32', 'k');
      const tv = gpu.upload(v, kShape, 'f32', 'v');
      const tmask = mask ? gpu.upload(mask, [c.B, c.Tcap], 'i32', 'mask') : undefined;
      const out = gpu.upload(new Float32Array(nq).fill(NaN), qShape, 'f32', 'out');
      const lse = gpu.tensor([c.B, c.NH, c.Tq], 'f32', 'lse');
      const before = gpu.dispatchCount;
      attentionForward(gpu, out, lse, tq, tk, tv, { mask: tmask, Tk: c.Tk, path: 'tiled' }); // default on a GPU: split for Tq <= 4
      expect(gpu.dispatchCount - before).toBe(2);
      const gotOut = await gpu.read(out);
      expectClose('out', gotOut, ref.out, { atol: 2e-6, rtol: 1e-4 });
      expectClose('lse', await gpu.read(lse), ref.lse, { atol: 2e-6, rtol: 1e-5 });
      // Tk read on the GPU (a recorded decode step): the grid covers Tcap, chunks past Tk weigh nothing
      if (c.Tcap > c.Tk) {
        const out2 = gpu.upload(new Float32Array(nq).fill(NaN), qShape, 'f32', 'out2');
        const lse2 = gpu.tensor([c.B, c.NH, c.Tq], 'f32', 'lse2');
        const tkGpu = gpu.upload([c.Tk - c.Tq], [1], 'i32', 'tk');
        attentionForward(gpu, out2, lse2, tq, tk, tv, { mask: tmask, Tk: c.Tk, TkGpu: tkGpu, split: true });
        expectClose('out, Tk on the GPU', await gpu.read(out2), ref.out, { atol: 2e-6, rtol: 1e-4 });
        expectClose('lse, Tk on the GPU', await gpu.read(lse2), ref.lse, { atol: 2e-6, rtol: 1e-5 });
        gpu.release(out2, lse2, tkGpu);
      }
      if (c.pad === 'allpad') {
        expect(Array.from(gotOut.slice(0, nq / c.B)).every((x) => x === 0)).toBe(true);
        expect(Array.from((await gpu.read(lse)).slice(0, c.NH * c.Tq)).every((x) => x === Math.fround(LSE_MASKED))).toBe(true);
      }
      gpu.release(tq, tk, tv, tmask, out, lse);
    });
  }

  it('chunks fit the workgroup memory limit; too many rows are refused', async () => {
    for (const HS of [8, 64, 128]) {
      for (const limit of [16384, 32768]) {
        const ch = decodeChunk(HS, limit);
        if (ch !== null) expect(decodeSharedBytes(HS, ch)).toBeLessThanOrEqual(limit);
      }
    }
    expect(decodeChunk(64, 16384)).not.toBeNull();
    const gpu = await testGpu();
    const q = gpu.tensor([1, 5, DECODE_RMAX / 4, 8], 'f32', 'q');
    const k = gpu.tensor([1, 8, 1, 8], 'f32', 'k');
    const out = gpu.tensor([1, 5, DECODE_RMAX / 4, 8], 'f32', 'out');
    const lse = gpu.tensor([1, DECODE_RMAX / 4, 5], 'f32', 'lse');
    expect(() => attentionForward(gpu, out, lse, q, k, k, { split: true })).toThrow(/split: the decode path takes Tq <= 4/);
    gpu.release(q, k, out, lse);
  });
});
