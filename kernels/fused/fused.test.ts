import { describe, expect, it } from 'vitest';
import { pack16, round16 } from '../../src/gpu/half.ts';
import type { Tensor } from '../../src/gpu/tensor.ts';
import { addInto } from '../elementwise/elementwise.ts';
import { kvAppend } from '../kvcache/kvcache.ts';
import { loraForward } from '../lora/lora.ts';
import { matmul } from '../matmul/matmul.ts';
import { ropeAngles, ropeRef } from '../rope/rope.ref.ts';
import { ropeForward } from '../rope/rope.ts';
import { rmsnormForward } from '../rmsnorm/rmsnorm.ts';
import { swigluForwardRef } from '../swiglu/swiglu.ref.ts';
import { swigluForward } from '../swiglu/swiglu.ts';
import { expectClose, randn, testGpu } from '../testing.ts';
import {
  type Epilogue,
  type RowNorm,
  catLoraGroup,
  fusedLinear,
  groupPrologue,
  inlinePrologue,
  prologueSize,
  releaseLoraGroup,
  ropeKv,
} from './fused.ts';
import { fusedLinearRef } from './fused.ref.ts';

const f32 = (a: Float64Array) => Float64Array.from(Float32Array.from(a));
type Kind = 'store' | 'residual' | 'swiglu' | 'swiglu-save';
interface Case {
  B: number;
  T: number;
  K: number;
  outs: number[];
  R: number;
  dtype: 'f32' | 'bf16' | 'f16';
  bias: boolean;
  adapted: boolean[] | null;
  kind: Kind;
  norm?: boolean;
  /** whether inlinePrologue takes it (a norm, the cap) */ inline?: boolean;
}

// Decode (T = 1) and prefill rows, 1-3 modules, partial targets, no LoRA, 16-bit weights, rows off the 4-row block.
const CASES: Case[] = [
  { B: 3, T: 1, K: 8, outs: [8, 4, 4], R: 2, dtype: 'f32', bias: true, adapted: [true, true, true], kind: 'store', inline: false },
  { B: 2, T: 3, K: 5, outs: [6, 2, 2], R: 3, dtype: 'bf16', bias: true, adapted: [true, false, true], kind: 'store' },
  { B: 5, T: 1, K: 7, outs: [9], R: 2, dtype: 'f16', bias: false, adapted: [true], kind: 'residual', inline: false },
  { B: 2, T: 2, K: 6, outs: [70], R: 4, dtype: 'f32', bias: false, adapted: null, kind: 'residual' },
  { B: 4, T: 1, K: 9, outs: [5, 5], R: 2, dtype: 'f32', bias: false, adapted: [true, true], kind: 'swiglu', inline: false },
  { B: 3, T: 2, K: 4, outs: [66, 66], R: 1, dtype: 'bf16', bias: true, adapted: [false, true], kind: 'swiglu-save' },
  // the RMSNorm folded in (K past rmsnorm's 4 channels a lane: 2 and 64 lanes), with and without LoRA
  {
    B: 3,
    T: 1,
    K: 9,
    outs: [8, 4, 4],
    R: 2,
    dtype: 'f32',
    bias: true,
    adapted: [true, true, true],
    kind: 'store',
    norm: true,
    inline: true,
  },
  { B: 2, T: 3, K: 200, outs: [6, 6], R: 2, dtype: 'bf16', bias: false, adapted: [true, false], kind: 'swiglu', norm: true, inline: true },
  { B: 5, T: 1, K: 12, outs: [3, 5], R: 2, dtype: 'f16', bias: true, adapted: null, kind: 'store', norm: true, inline: true },
  // the inline prologue (groups with the norm folded in) at batch 8, rank 8 with a module without adapter between two with, one module, and gate and up
  {
    B: 8,
    T: 1,
    K: 70,
    outs: [16, 8, 8],
    R: 8,
    dtype: 'f32',
    bias: true,
    adapted: [true, false, true],
    kind: 'store',
    norm: true,
    inline: true,
  },
  { B: 2, T: 1, K: 40, outs: [12], R: 4, dtype: 'bf16', bias: false, adapted: [true], kind: 'residual', norm: true, inline: true },
  { B: 4, T: 1, K: 72, outs: [12, 12], R: 8, dtype: 'f32', bias: false, adapted: [true, true], kind: 'swiglu', norm: true, inline: true },
  // the gemv form's largest row bucket (16) and K past its 64 threads
  {
    B: 16,
    T: 1,
    K: 70,
    outs: [7, 7],
    R: 2,
    dtype: 'f32',
    bias: true,
    adapted: [true, true],
    kind: 'swiglu-save',
    norm: true,
    inline: true,
  }, // 9 storage buffers
  { B: 4, T: 3, K: 130, outs: [9, 3, 3], R: 5, dtype: 'bf16', bias: false, adapted: [true, true, true], kind: 'store', norm: true }, // 15 h outputs: 2 prologue workgroups a row
  // the gemv form's row blocks (16 rows a workgroup, the last one partial), with the prologue inline or its own dispatch
  {
    B: 40,
    T: 1,
    K: 24,
    outs: [8, 4, 4],
    R: 2,
    dtype: 'f32',
    bias: true,
    adapted: [true, false, true],
    kind: 'store',
    norm: true,
    inline: true,
  },
  { B: 37, T: 1, K: 20, outs: [6, 6], R: 2, dtype: 'bf16', bias: false, adapted: [true, true], kind: 'swiglu', norm: true, inline: true },
  { B: 33, T: 1, K: 12, outs: [10], R: 3, dtype: 'f32', bias: false, adapted: [true], kind: 'residual' },
];

describe('fused linear', () => {
  for (const c of CASES) {
    it(`${c.kind} B=${c.B} T=${c.T} K=${c.K} outs=[${c.outs.join(',')}] R=${c.R} ${c.dtype}${c.bias ? ' bias' : ''} lora=${c.adapted?.map(Number).join('') ?? 'none'}${c.norm ? ' norm' : ''}`, async () => {
      const gpu = await testGpu();
      const { B, T, K, outs, R } = c;
      const M = B * T;
      const S = 3;
      const NW = outs.reduce((a, b) => a + b, 0);
      const scale = 2;
      const slots = Int32Array.from({ length: B }, (_, b) => [0, -1, 2, 1][b % 4]);
      const x0 = f32(randn(M * K, 1));
      const gammaV = f32(randn(K, 2, 0.3).map((v) => 1 + v));
      const eps = 1e-5;
      // the group's input: x0, or x0 RMS-normed (float64) when the norm is folded in
      const x = c.norm
        ? Float64Array.from(x0, (v, i) => {
            const m = Math.floor(i / K);
            let ss = 0;
            for (let k = 0; k < K; k++) ss += x0[m * K + k] ** 2;
            return (v / Math.sqrt(ss / K + eps)) * gammaV[i % K];
          })
        : x0;
      const ws = outs.map((o, j) =>
        (c.dtype === 'f32' ? f32 : (a: Float64Array) => round16(a, c.dtype as 'bf16'))(randn(o * K, 10 + j, 0.5)),
      );
      const bs = outs.map((o, j) => f32(randn(o, 20 + j)));
      const mods = outs.map((o, j) =>
        c.adapted?.[j] ? { A: f32(randn(S * R * K, 30 + j, 0.5)), B: f32(randn(S * o * R, 40 + j, 0.5)) } : undefined,
      );
      const wCat = Float64Array.from(ws.flatMap((w) => [...w]));
      const bCat = Float64Array.from(bs.flatMap((b) => [...b]));
      const up = (a: ArrayLike<number>, shape: number[], label: string, dtype = c.dtype): Tensor =>
        dtype === 'f32' ? gpu.upload(a, shape, 'f32', label) : gpu.upload(pack16(a, dtype), shape, dtype, label);
      const tX = gpu.upload(x0, [M, K], 'f32', 'x');
      const norm: RowNorm | undefined = c.norm ? { gamma: gpu.upload(gammaV, [K], 'f32', 'gamma'), eps } : undefined;
      const tSlots = gpu.upload(slots, [B], 'i32', 'slots');
      const tW = up(wCat, [NW, K], 'w');
      const tBias = c.bias ? gpu.upload(bCat, [NW], 'f32', 'bias') : undefined;
      const tMods = mods.map(
        (p, j) => p && { A: gpu.upload(p.A, [S, R, K], 'f32', `A${j}`), B: gpu.upload(p.B, [S, outs[j], R], 'f32', `B${j}`) },
      );
      const group = catLoraGroup(gpu, tMods, 'group');
      const lora = group ? { group, slots: tSlots, T, scale } : undefined;
      const size = prologueSize(M, { lora, norm });
      const tH = size ? gpu.tensor([size], 'f32', 'h') : undefined;
      const ref = fusedLinearRef(x, wCat, M, K, outs, c.bias ? bCat : undefined, c.adapted ? { slots, T, S, R, scale, mods } : undefined);
      const swi = c.kind.startsWith('swiglu');
      const NOUT = swi ? NW / 2 : NW;
      const res = f32(randn(M * NOUT, 50));
      const tRes = gpu.upload(res, [M, NOUT], 'f32', 'res');
      const tOut = gpu.tensor([M, NOUT], 'f32', 'out');
      const tGu = c.kind === 'swiglu-save' ? gpu.tensor([2, M, NOUT], 'f32', 'gu') : undefined;
      const epilogue: Epilogue =
        c.kind === 'store' ? { kind: 'store' } : c.kind === 'residual' ? { kind: 'residual', res: tRes } : { kind: 'swiglu', gu: tGu };

      const before = gpu.dispatchCount;
      if (tH) groupPrologue(gpu, tH, tX, { lora, norm });
      fusedLinear(gpu, tOut, tX, tW, outs, { bias: tBias, lora, norm, h: tH, epilogue });
      expect(gpu.dispatchCount - before).toBe(tH ? 2 : 1);

      // against float64
      const tol = { atol: 1e-5, rtol: 1e-4 };
      const gate = ref.y.filter((_, i) => i % NW < NOUT);
      const upv = ref.y.filter((_, i) => i % NW >= NOUT);
      const want = c.kind === 'store' ? ref.y : c.kind === 'residual' ? ref.y.map((v, i) => v + res[i]) : swigluForwardRef(gate, upv);
      const got = await gpu.read(tOut);
      expectClose('out', got, want, tol);
      if (tH && lora)
        expectClose('h', (await gpu.read(tH)).slice(0, group!.GL * M * R), Float64Array.from(ref.h.flatMap((h) => [...h])), tol);
      if (tGu) expectClose('gu', await gpu.read(tGu), Float64Array.from([...gate, ...upv]), tol);

      // the gemv form (GPUs' decode, M <= 16), prologue and matmul: float64, and the direct form to rounding
      const tH2 = size ? gpu.tensor([size], 'f32', 'h.gemv') : undefined;
      if (tH2) {
        groupPrologue(gpu, tH2, tX, { lora, norm }, 'gemv');
        expectClose('gemv prologue vs direct', await gpu.read(tH2), await gpu.read(tH!), { atol: 1e-6, rtol: 1e-5 });
      }
      const tOut2 = gpu.tensor([M, NOUT], 'f32', 'out.gemv');
      const tGu2 = tGu && gpu.tensor([2, M, NOUT], 'f32', 'gu.gemv');
      fusedLinear(gpu, tOut2, tX, tW, outs, {
        bias: tBias,
        lora,
        norm,
        h: tH2,
        epilogue: epilogue.kind === 'swiglu' ? { kind: 'swiglu', gu: tGu2 } : epilogue,
        form: 'gemv',
      });
      const got2 = await gpu.read(tOut2);
      expectClose('gemv out', got2, want, tol);
      expectClose('gemv vs direct', got2, got, { atol: 1e-5, rtol: 1e-5 }); // another summation order
      if (tGu2) expectClose('gemv gu', await gpu.read(tGu2), Float64Array.from([...gate, ...upv]), tol);

      // the gemv form with the prologue inside its matmul (inlinePrologue): one dispatch, float64, and the two-dispatch gemv form
      const tGu3 = tGu && gpu.tensor([2, M, NOUT], 'f32', 'gu.inline');
      const lin = {
        bias: tBias,
        lora,
        norm,
        epilogue: epilogue.kind === 'swiglu' ? { kind: 'swiglu' as const, gu: tGu3 } : epilogue,
        form: 'gemv' as const,
      };
      const inl = inlinePrologue(gpu, M, outs, lin);
      expect(inl !== null).toBe(c.inline ?? false);
      if (inl) {
        const tOut3 = gpu.tensor([M, NOUT], 'f32', 'out.inline');
        const at = gpu.dispatchCount;
        fusedLinear(gpu, tOut3, tX, tW, outs, { ...lin, inline: true });
        expect(gpu.dispatchCount - at).toBe(1);
        const got3 = await gpu.read(tOut3);
        expectClose('inline out', got3, want, tol);
        expectClose('inline vs gemv', got3, got2, { atol: 1e-5, rtol: 1e-5 }); // the rstd applied after the sum
        if (tGu3) expectClose('inline gu', await gpu.read(tGu3), Float64Array.from([...gate, ...upv]), tol);
      }

      // against the unfused path it replaces: rmsnormForward, a matmul and a loraForward per module, then addInto / swigluForward
      const xIn = norm ? gpu.tensor([M, K], 'f32', 'xn') : tX;
      if (norm) {
        const rstd = gpu.tensor([M], 'f32', 'rstd');
        rmsnormForward(gpu, xIn, rstd, tX, norm.gamma, eps);
        expectClose('rstd vs rmsnormForward', (await gpu.read(tH!)).slice(size - M), await gpu.read(rstd), { atol: 0, rtol: 0 });
      }
      const parts = outs.map((o, j) => {
        const y = gpu.tensor([M, o], 'f32', `y${j}`);
        matmul(gpu, y, xIn, up(ws[j], [o, K], `w${j}`), {
          transB: true,
          bias: c.bias ? gpu.upload(bs[j], [o], 'f32', `b${j}`) : undefined,
        });
        const p = tMods[j];
        if (p) loraForward(gpu, y, gpu.tensor([M, R], 'f32', `h${j}`), xIn, tSlots, p.A, p.B, T, scale);
        return y;
      });
      let unfused: Float64Array;
      if (c.kind === 'residual') {
        addInto(gpu, parts[0], tRes);
        unfused = Float64Array.from(await gpu.read(parts[0]));
      } else if (swi) {
        const a = gpu.tensor([M, NOUT], 'f32', 'a');
        swigluForward(gpu, a, parts[0], parts[1]);
        unfused = Float64Array.from(await gpu.read(a));
      } else {
        const ys = await Promise.all(parts.map((p) => gpu.read(p)));
        unfused = Float64Array.from({ length: M * NW }, (_, i) => {
          const m = Math.floor(i / NW);
          let n = i % NW;
          let j = 0;
          while (n >= outs[j]) n -= outs[j++];
          return ys[j][m * outs[j] + n];
        });
      }
      // Same sums in the same order with fma: on CPU adapters (the 'direct' matmul) the bits match; the tiled GPU matmuls sum in another order.
      expectClose('out vs unfused', got, unfused, gpu.cpu ? { atol: 0, rtol: 0 } : { atol: 1e-6, rtol: 1e-6 });
      releaseLoraGroup(gpu, group);
    });
  }

  it('rejects mismatched shapes with the op named', async () => {
    const gpu = await testGpu();
    const x = gpu.tensor([2, 4], 'f32', 'x');
    const w = gpu.tensor([6, 4], 'f32', 'w');
    expect(() => fusedLinear(gpu, gpu.tensor([2, 5], 'f32', 'o'), x, w, [3, 3], { epilogue: { kind: 'store' } })).toThrow(
      /fusedLinear: out must be \(2, 6\)/,
    );
    expect(() => fusedLinear(gpu, gpu.tensor([2, 3], 'f32', 'o'), x, w, [4, 2], { epilogue: { kind: 'swiglu' } })).toThrow(
      /swiglu needs two modules of equal width/,
    );
    expect(() => fusedLinear(gpu, gpu.tensor([2, 6], 'f32', 'o'), x, w, [5], { epilogue: { kind: 'store' } })).toThrow(
      /w must be \(5, 4\)/,
    );
    const x129 = gpu.tensor([129, 4], 'f32', 'x129');
    expect(() =>
      fusedLinear(gpu, gpu.tensor([129, 6], 'f32', 'o'), x129, w, [3, 3], { epilogue: { kind: 'store' }, form: 'gemv' }),
    ).toThrow(/gemv form takes at most 128 rows, got 129/);
  });
});

describe('ropeKv', () => {
  for (const [B, T, NH, NKV, HS, Tcap, t0] of [
    [2, 1, 2, 1, 4, 5, 3],
    [1, 3, 3, 1, 6, 3, 0],
    [3, 2, 2, 2, 2, 6, 1],
  ]) {
    it(`B=${B} T=${T} NH=${NH} NKV=${NKV} HS=${HS} into ${Tcap} positions at ${t0}`, async () => {
      const gpu = await testGpu();
      const W = (NH + 2 * NKV) * HS;
      const qkv = f32(randn(B * T * W, 7));
      const pos = Int32Array.from({ length: B * T }, (_, n) => 5 * (n % T) + 17 * Math.floor(n / T) + 1900);
      const theta = 10000;
      const tQkv = gpu.upload(qkv, [B * T, W], 'f32', 'qkv');
      const tPos = gpu.upload(pos, [B * T], 'i32', 'pos');
      const cache0 = f32(randn(B * Tcap * NKV * HS, 8));
      const q = gpu.tensor([B, T, NH, HS], 'f32', 'q');
      const k = gpu.upload(cache0, [B, Tcap, NKV, HS], 'f32', 'k');
      const v = gpu.upload(cache0, [B, Tcap, NKV, HS], 'f32', 'v');
      ropeKv(gpu, q, k, v, tQkv, tPos, theta, t0);
      // float64: the split, rope of q and k, and the append at t0 (the rest of the cache untouched)
      const part = (o: number, H: number) =>
        Float64Array.from({ length: B * T * H * HS }, (_, i) => qkv[Math.floor(i / (H * HS)) * W + o + (i % (H * HS))]);
      const ang = ropeAngles(pos, HS, theta);
      const place = (src: Float64Array) => {
        const c = Float64Array.from(cache0);
        for (let n = 0; n < B * T; n++)
          for (let i = 0; i < NKV * HS; i++) c[(Math.floor(n / T) * Tcap + t0 + (n % T)) * NKV * HS + i] = src[n * NKV * HS + i];
        return c;
      };
      const tol = { atol: 1e-6, rtol: 1e-5 };
      const qGot = await gpu.read(q);
      const kGot = await gpu.read(k);
      const vGot = await gpu.read(v);
      expectClose('q', qGot, ropeRef(part(0, NH), ang, B * T, NH, HS), tol);
      expectClose('k', kGot, place(ropeRef(part(NH * HS, NKV), ang, B * T, NKV, HS)), tol);
      expectClose('v', vGot, place(part((NH + NKV) * HS, NKV)), { atol: 0, rtol: 0 });
      // against the unfused ropeForward + kvAppend: the same bits
      const uq = gpu.tensor([B, T, NH, HS], 'f32', 'uq');
      const uk = gpu.tensor([B, T, NKV, HS], 'f32', 'uk');
      const kc = gpu.upload(cache0, [B, Tcap, NKV, HS], 'f32', 'kc');
      ropeForward(
        gpu,
        uq,
        uk,
        gpu.upload(part(0, NH), [B, T, NH, HS], 'f32', 'q0'),
        gpu.upload(part(NH * HS, NKV), [B, T, NKV, HS], 'f32', 'k0'),
        tPos,
        theta,
      );
      kvAppend(gpu, kc, uk, t0);
      expectClose('q vs unfused', qGot, await gpu.read(uq), { atol: 0, rtol: 0 });
      expectClose('k vs unfused', kGot, await gpu.read(kc), { atol: 0, rtol: 0 });
      // t0 read on the GPU (a recorded decode step): the same bits, with a stale uniform t0 ignored
      const [q2, k2, v2] = [
        gpu.tensor([B, T, NH, HS], 'f32', 'q2'),
        gpu.upload(cache0, [B, Tcap, NKV, HS], 'f32', 'k2'),
        gpu.upload(cache0, [B, Tcap, NKV, HS], 'f32', 'v2'),
      ];
      ropeKv(gpu, q2, k2, v2, tQkv, tPos, theta, 0, gpu.upload([t0], [1], 'i32', 't0'));
      expectClose('q, t0 on the GPU', await gpu.read(q2), qGot, { atol: 0, rtol: 0 });
      expectClose('k, t0 on the GPU', await gpu.read(k2), kGot, { atol: 0, rtol: 0 });
      expectClose('v, t0 on the GPU', await gpu.read(v2), vGot, { atol: 0, rtol: 0 });
    });
  }
});
