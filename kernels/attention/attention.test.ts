import { describe, expect, it } from 'vitest';
import { dot, expectClose, finiteDiff, randn, testGpu } from '../testing.ts';
import {
  BACKWARD_CHOICE,
  FORWARD_CHOICE,
  LSE_MASKED,
  attentionBackward,
  attentionForward,
  attentionSharedBytes,
  attentionTiles,
  backwardName,
  blockedSharedBytes,
  blockedUnfit,
  forwardName,
  forwardUnfit,
  parseBackward,
  parseForward,
} from './attention.ts';
import { type AttnDims, attentionBackwardRef, attentionForwardRef } from './attention.ref.ts';
import type { Gpu } from '../../src/gpu/gpu.ts';

type MaskKind = 'none' | 'left' | 'right' | 'allpad';

interface Case {
  B: number;
  Tq: number;
  Tk: number;
  Tcap?: number;
  NH: number;
  NKV: number;
  HS: number;
  mask: MaskKind;
  scale?: number;
  /** NaN in k and v at padding and past Tk (stale cache): must not reach any output. */
  poison?: boolean;
}

/** (B, Tm) mask: batch row b gets a different amount of padding, so a batch mixes padded and full rows. */
function makeMask(kind: MaskKind, B: number, Tm: number, Tk: number): Int32Array | null {
  if (kind === 'none') return null;
  const m = new Int32Array(B * Tm).fill(1);
  for (let b = 0; b < B; b++) {
    const pad = kind === 'allpad' && b === 0 ? Tk : Math.floor((Tk * (b + 1)) / (2 * B + 1));
    for (let j = 0; j < pad; j++) m[b * Tm + (kind === 'right' ? Tk - 1 - j : j)] = 0;
  }
  return m;
}

const CASES: Case[] = [
  { B: 1, Tq: 1, Tk: 1, NH: 1, NKV: 1, HS: 8, mask: 'none' },
  { B: 2, Tq: 7, Tk: 7, NH: 4, NKV: 2, HS: 8, mask: 'none' },
  { B: 1, Tq: 64, Tk: 64, NH: 1, NKV: 1, HS: 64, mask: 'none' },
  { B: 1, Tq: 65, Tk: 65, NH: 6, NKV: 3, HS: 64, mask: 'none' },
  { B: 1, Tq: 130, Tk: 130, NH: 4, NKV: 2, HS: 8, mask: 'none', scale: 0.7 },
  { B: 2, Tq: 20, Tk: 20, NH: 4, NKV: 2, HS: 8, mask: 'left' },
  { B: 2, Tq: 65, Tk: 65, NH: 6, NKV: 3, HS: 64, mask: 'right' },
  // right padding of 14, 28 and 42 keys: whole key tiles and blocks of padding, skipped by the tiled kernels
  { B: 3, Tq: 100, Tk: 100, NH: 6, NKV: 3, HS: 8, mask: 'right' },
  { B: 3, Tq: 100, Tk: 100, NH: 6, NKV: 3, HS: 8, mask: 'left' }, // the same at the start: prompts of a batch
  { B: 2, Tq: 9, Tk: 9, NH: 6, NKV: 3, HS: 8, mask: 'allpad' },
  { B: 2, Tq: 1, Tk: 37, Tcap: 48, NH: 6, NKV: 3, HS: 64, mask: 'none' }, // decode, cache of capacity 48
  { B: 2, Tq: 1, Tk: 37, Tcap: 48, NH: 6, NKV: 3, HS: 64, mask: 'left', poison: true },
  { B: 1, Tq: 5, Tk: 70, Tcap: 72, NH: 4, NKV: 2, HS: 8, mask: 'right', poison: true }, // a chunk of new tokens after a cache
];
// HS = 128 (Llama-7B-class heads; its smaller tiles are a separate code path). SwiftShader compiles it in ~20 s.
CASES.push({ B: 1, Tq: 33, Tk: 130, NH: 1, NKV: 1, HS: 128, mask: 'left' });

const name = (c: Case) =>
  `B=${c.B} Tq=${c.Tq} Tk=${c.Tk}${c.Tcap ? ` Tcap=${c.Tcap}` : ''} NH/NKV=${c.NH}/${c.NKV} HS=${c.HS} mask=${c.mask}${c.poison ? ' NaN-padding' : ''}`;

const f32 = (a: Float64Array) => Float64Array.from(Float32Array.from(a));

/** A case's q, k, v and mask on the GPU, with their shapes. */
function uploadCase(
  gpu: Gpu,
  c: Case,
  Tcap: number,
  q: ArrayLike<number>,
  k: ArrayLike<number>,
  v: ArrayLike<number>,
  mask: Int32Array | null,
) {
  const qShape = [c.B, c.Tq, c.NH, c.HS];
  const kShape = [c.B, Tcap, c.NKV, c.HS];
  return {
    qShape,
    kShape,
    tq: gpu.upload(q, qShape, 'f32', 'q'),
    tk: gpu.upload(k, kShape, 'f32', 'k'),
    tv: gpu.upload(v, kShape, 'f32', 'v'),
    tmask: mask ? gpu.upload(mask, [c.B, Tcap], 'i32', 'mask') : undefined,
  };
}

describe('attention', () => {
  // 'tiled' is the GPU path; 'regs' the default on CPU adapters (SwiftShader), and 'direct', which it
  // replaced there, are checked on every case too, and 'regs' against 'direct' (run before it).
  const directRuns = new Map<string, Float32Array[]>();
  const PATHS = ['tiled', 'direct', 'regs'] as const;
  // The register-blocked backwards of the tiled path (backward.wgsl), with tiles that fit SwiftShader's 32 KiB:
  // one without splits or fused prep, one with both (3 splits: uneven shares, some empty) and 2 columns a
  // thread, one with dq from the stored dS, and 64-key blocks (these fit 32 KiB only at small head sizes).
  // The ':pf' twins (next tile prefetched into registers) must give the same bits as the variant without.
  const BLOCKED = [
    'blocked:k32x16:q32x16:s1',
    'blocked:k16x32w2:q16x32w2:s3:fused',
    'blocked:k32x16:q64x32:s2:ds',
    'blocked:k64x8w2:q64x16w2:s2',
    'blocked:k32x16:q32x16:s1:pf',
    'blocked:k32x16:q64x32:s2:ds:pf',
    // BACKWARD_CHOICE's tiles (which fit 32 KiB at small head sizes only)
    'blocked:k32x32:q32x32:s4:ds',
    'blocked:k32x32:q32x32:s4:ds:pf',
    'blocked:k32x32:q32x32:s1:fused:pf',
  ];
  const twinRuns = new Map<string, Float32Array[]>();
  // Each on the cases whose head size it fits within the smallest device here (SwiftShader: 32 KiB of
  // workgroup memory, 256 threads, 12 storage buffers); the others are the fallback test's.
  const SMALL = {
    maxComputeWorkgroupStorageSize: 32768,
    maxComputeInvocationsPerWorkgroup: 256,
    maxComputeWorkgroupSizeX: 256,
    maxStorageBuffersPerShaderStage: 12,
  } as GPUSupportedLimits;
  const fits = (c: Case, b: string) =>
    blockedUnfit(c.HS, parseBackward(b) as Exclude<ReturnType<typeof parseBackward>, 'v1'>, SMALL) === null;
  const runs: Array<[Case, (typeof PATHS)[number], string | undefined]> = [
    ...PATHS.flatMap((p) => CASES.map((c) => [c, p, undefined] as [Case, (typeof PATHS)[number], undefined])),
    ...BLOCKED.flatMap((b) => CASES.filter((c) => fits(c, b)).map((c) => [c, 'tiled', b] as [Case, 'tiled', string])),
  ];
  it('every blocked variant runs on at least three cases here; a variant a device cannot fit is named with the reason', () => {
    for (const b of BLOCKED) expect(CASES.filter((c) => fits(c, b)).length, b).toBeGreaterThanOrEqual(3);
    expect(blockedUnfit(64, parseBackward('blocked:k64x16:q32x16:s1') as Exclude<ReturnType<typeof parseBackward>, 'v1'>, SMALL)).toMatch(
      /workgroup memory/,
    );
  });
  for (const [c, path, backward] of runs) {
    it(`forward + backward ${backward ?? path} ${name(c)}`, async () => {
      const gpu = await testGpu();
      if (backward)
        expect(blockedUnfit(c.HS, parseBackward(backward) as Exclude<ReturnType<typeof parseBackward>, 'v1'>, gpu.limits)).toBeNull();
      const Tcap = c.Tcap ?? c.Tk;
      const d: AttnDims = { ...c, Tcap };
      const nq = c.B * c.Tq * c.NH * c.HS;
      const nk = c.B * Tcap * c.NKV * c.HS;
      const seed = c.Tq * 31 + c.Tk * 7 + c.HS + c.NH;
      const q = f32(randn(nq, seed));
      const k = f32(randn(nk, seed + 1));
      const v = f32(randn(nk, seed + 2));
      const dout = f32(randn(nq, seed + 3));
      const mask = makeMask(c.mask, c.B, Tcap, c.Tk);
      if (c.poison) {
        for (let b = 0; b < c.B; b++) {
          for (let j = 0; j < Tcap; j++) {
            if (j < c.Tk && (!mask || mask[b * Tcap + j])) continue;
            const o = (b * Tcap + j) * c.NKV * c.HS;
            k.fill(NaN, o, o + c.NKV * c.HS);
            v.fill(NaN, o, o + c.NKV * c.HS);
          }
        }
      }
      const ref = attentionForwardRef(q, k, v, mask, d);
      const gref = attentionBackwardRef(dout, q, k, v, mask, d);

      const { qShape, kShape, tq, tk, tv, tmask } = uploadCase(gpu, c, Tcap, q, k, v, mask);
      const opts = { mask: tmask, Tk: c.Tk, scale: c.scale, path, backward: backward ?? 'v1' };
      const out = gpu.tensor(qShape, 'f32', 'out');
      const lse = gpu.tensor([c.B, c.NH, c.Tq], 'f32', 'lse');
      attentionForward(gpu, out, lse, tq, tk, tv, opts);
      expectClose('out', await gpu.read(out), ref.out, { atol: 2e-6, rtol: 1e-4 });
      expectClose('lse', await gpu.read(lse), ref.lse, { atol: 2e-6, rtol: 1e-5 });

      // Gradients are written, not accumulated: start them from garbage.
      const tdout = gpu.upload(dout, qShape, 'f32', 'dout');
      const dq = gpu.upload(randn(nq, 5), qShape, 'f32', 'dq');
      const dk = gpu.upload(randn(nk, 6), kShape, 'f32', 'dk');
      const dv = gpu.upload(randn(nk, 7), kShape, 'f32', 'dv');
      attentionBackward(gpu, dq, dk, dv, tdout, tq, tk, tv, out, lse, opts);
      const gq = await gpu.read(dq);
      expectClose('dq', gq, gref.dq, { atol: 1e-5, rtol: 1e-4 });
      expectClose('dk', await gpu.read(dk), gref.dk, { atol: 1e-5, rtol: 1e-4 });
      expectClose('dv', await gpu.read(dv), gref.dv, { atol: 1e-5, rtol: 1e-4 });
      if (c.mask === 'allpad') {
        // batch row 0 has no real key: every output and gradient of it is exactly 0, no NaN
        expect(Array.from((await gpu.read(out)).slice(0, nq / c.B)).every((x) => x === 0)).toBe(true);
        expect(Array.from((await gpu.read(lse)).slice(0, c.NH * c.Tq)).every((x) => x === Math.fround(LSE_MASKED))).toBe(true);
      }
      if (path !== 'tiled') {
        const got = [out, lse, dq, dk, dv];
        const runs = await Promise.all(got.map((t) => gpu.read(t) as Promise<Float32Array>));
        const other = directRuns.get(name(c));
        if (path === 'direct') directRuns.set(name(c), runs);
        else if (other)
          for (const [i, n] of ['out', 'lse', 'dq', 'dk', 'dv'].entries())
            expectClose(`${n} regs vs direct`, runs[i], other[i], { atol: 1e-6, rtol: 1e-5 });
      }
      if (backward) {
        const got = await Promise.all([dq, dk, dv].map((t) => gpu.read(t) as Promise<Float32Array>));
        const twin = twinRuns.get(`${name(c)} ${backward.replace(/:pf$/, '')}`);
        if (!backward.endsWith(':pf')) twinRuns.set(`${name(c)} ${backward}`, got);
        else if (twin)
          for (const [i, n] of ['dq', 'dk', 'dv'].entries())
            expect(Array.from(got[i]), `${n} ${backward} vs without pf`).toEqual(Array.from(twin[i]));
      }
      if (c.Tq === 65) {
        // deterministic: a second backward gives the same bits
        const gk = await gpu.read(dk);
        attentionBackward(gpu, dq, dk, dv, tdout, tq, tk, tv, out, lse, opts);
        expect(Array.from(await gpu.read(dq))).toEqual(Array.from(gq));
        expect(Array.from(await gpu.read(dk))).toEqual(Array.from(gk));
      }
      gpu.release(tq, tk, tv, tmask, out, lse, tdout, dq, dk, dv);
    });
  }

  // Forward variants of the tiled path (query rows per workgroup x keys per tile, prefetch) against the
  // reference and against f32x32 (the one FORWARD_CHOICE replaced) on the cases with padding, GQA and ragged
  // edges; each ':pf' twin bit for bit against its plain one.
  const FORWARDS = ['f32x32', 'f32x16', 'f32x16:pf', 'f16x16', 'f16x16:pf', 'f8x32', 'f64x8:pf', 'f32x32:pf'];
  for (const c of CASES.filter((x) => x.Tq > 4 && x.HS <= 64)) {
    it(`forward variants ${FORWARDS.join(' ')} ${name(c)}`, async () => {
      const gpu = await testGpu();
      const Tcap = c.Tcap ?? c.Tk;
      const d: AttnDims = { ...c, Tcap };
      const seed = c.Tq * 13 + c.Tk + c.HS;
      const q = f32(randn(c.B * c.Tq * c.NH * c.HS, seed));
      const k = f32(randn(c.B * Tcap * c.NKV * c.HS, seed + 1));
      const v = f32(randn(c.B * Tcap * c.NKV * c.HS, seed + 2));
      const mask = makeMask(c.mask, c.B, Tcap, c.Tk);
      const ref = attentionForwardRef(q, k, v, mask, d);
      const { qShape, tq, tk, tv, tmask } = uploadCase(gpu, c, Tcap, q, k, v, mask);
      const out = gpu.tensor(qShape, 'f32', 'out');
      const lse = gpu.tensor([c.B, c.NH, c.Tq], 'f32', 'lse');
      const plain = new Map<string, Float32Array[]>();
      let ran = 0;
      for (const f of FORWARDS) {
        const lanes = attentionTiles(c.HS, gpu.limits.maxComputeWorkgroupStorageSize)!.lanes;
        if (forwardUnfit(c.HS, lanes, parseForward(f), gpu.limits)) continue;
        attentionForward(gpu, out, lse, tq, tk, tv, { mask: tmask, Tk: c.Tk, scale: c.scale, path: 'tiled', split: false, forward: f });
        const got = [await gpu.read(out), await gpu.read(lse)] as Float32Array[];
        expectClose(`out ${f}`, got[0], ref.out, { atol: 2e-6, rtol: 1e-4 });
        expectClose(`lse ${f}`, got[1], ref.lse, { atol: 2e-6, rtol: 1e-5 });
        const first = plain.get('f32x32');
        if (first)
          for (const [i, n] of ['out', 'lse'].entries()) expectClose(`${n} ${f} vs f32x32`, got[i], first[i], { atol: 1e-6, rtol: 1e-5 });
        if (!f.endsWith(':pf')) plain.set(f, got);
        const twin = plain.get(f.replace(/:pf$/, ''));
        if (f.endsWith(':pf') && twin)
          for (const i of [0, 1]) expect(Array.from(got[i]), `${f} vs without pf`).toEqual(Array.from(twin[i]));
        ran++;
      }
      expect(ran).toBeGreaterThanOrEqual(3);
      gpu.release(tq, tk, tv, tmask, out, lse);
    });
  }

  it('backward reference matches finite differences of the forward (GQA, mask, cache, fully masked row)', () => {
    const d: AttnDims = { B: 2, Tq: 3, Tk: 5, Tcap: 6, NH: 4, NKV: 2, HS: 3, scale: 0.8 };
    const nq = d.B * d.Tq * d.NH * d.HS;
    const nk = d.B * 6 * d.NKV * d.HS;
    // batch 0: left padding that hides every key of query 0 (position 2); batch 1: right padding
    const mask = Int32Array.from([0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 0, 1]);
    const q = randn(nq, 11);
    const k = randn(nk, 12);
    const v = randn(nk, 13);
    const dout = randn(nq, 14);
    const g = attentionBackwardRef(dout, q, k, v, mask, d);
    const tol = { atol: 1e-8, rtol: 1e-6 };
    expectClose(
      'dq vs fd',
      g.dq,
      finiteDiff((x) => dot(attentionForwardRef(x, k, v, mask, d).out, dout), q),
      tol,
    );
    expectClose(
      'dk vs fd',
      g.dk,
      finiteDiff((x) => dot(attentionForwardRef(q, x, v, mask, d).out, dout), k),
      tol,
    );
    expectClose(
      'dv vs fd',
      g.dv,
      finiteDiff((x) => dot(attentionForwardRef(q, k, x, mask, d).out, dout), v),
      tol,
    );
    const { out, lse } = attentionForwardRef(q, k, v, mask, d);
    expect(lse[0]).toBe(LSE_MASKED); // (b 0, h 0, i 0) sees only padding
    expect(Array.from(out.slice(0, d.HS)).every((x) => x === 0)).toBe(true);
  });

  it('tiles fit the workgroup memory limit', () => {
    for (const HS of [4, 8, 64, 80, 128, 256]) {
      for (const limit of [16384, 32768]) {
        const t = attentionTiles(HS, limit);
        if (HS === 256 && limit === 16384) {
          expect(t).toBeNull();
          continue;
        }
        if (!t) throw new Error(`no tiles for HS=${HS} limit=${limit}`);
        const b = attentionSharedBytes(HS, t);
        expect(Math.max(b.fwd, b.dkdv, b.dq), `HS=${HS} limit=${limit}`).toBeLessThanOrEqual(limit);
      }
    }
  });

  it('backward variants: names round-trip, the choice table parses, blocked tiles fit a 48 KiB device', () => {
    for (const n of [
      'v1',
      'blocked:k32x32:q32x32:s2:fused',
      'blocked:k16x32w2:q64x16:s1',
      'blocked:k16x32:q64x16w4:s8',
      'blocked:k32x16:q64x32:s2:ds',
      'blocked:k32x32:q32x32:s2:ds:pf',
    ])
      expect(backwardName(parseBackward(n))).toBe(n);
    for (const r of BACKWARD_CHOICE) expect(() => parseBackward(r.variant)).not.toThrow();
    for (const n of ['f32x32', 'f16x64:pf']) expect(forwardName(parseForward(n))).toBe(n);
    for (const r of FORWARD_CHOICE) expect(() => parseForward(r.variant)).not.toThrow();
    expect(() => parseForward('f32')).toThrow(/unknown forward variant/);
    expect(() => parseBackward('blocked:k32')).toThrow(/unknown backward variant/);
    const lim = {
      maxComputeWorkgroupStorageSize: 49152,
      maxComputeInvocationsPerWorkgroup: 1024,
      maxComputeWorkgroupSizeX: 1024,
      maxStorageBuffersPerShaderStage: 16,
    };
    expect(forwardUnfit(64, 4, parseForward('f16x32'), lim)).toBeNull();
    expect(forwardUnfit(64, 4, parseForward('f64x64'), lim)).toMatch(/workgroup memory/);
    expect(forwardUnfit(64, 4, parseForward('f16x6'), lim)).toMatch(/multiple of the 4 threads/);
    const v = parseBackward('blocked:k32x32:q32x32:s1') as Exclude<ReturnType<typeof parseBackward>, 'v1'>;
    expect(blockedUnfit(64, v, lim)).toBeNull();
    expect(Math.max(blockedSharedBytes(64, v).dkdv, blockedSharedBytes(64, v).dq)).toBeLessThanOrEqual(49152);
    expect(blockedUnfit(64, v, { ...lim, maxComputeWorkgroupStorageSize: 32768 })).toMatch(/workgroup memory/);
    expect(
      blockedUnfit(64, parseBackward('blocked:k32x16:q32x16:s1:fused:ds') as Exclude<ReturnType<typeof parseBackward>, 'v1'>, lim),
    ).toMatch(/cannot be fused/);
    expect(blockedUnfit(80, v, lim)).toMatch(/multiples of HS \/ 4 \/ kW/);
  });

  it('rejects mismatched shapes and dtypes before dispatch', async () => {
    const gpu = await testGpu();
    const q = gpu.tensor([1, 4, 4, 8], 'f32', 'q');
    const k = gpu.tensor([1, 4, 2, 8], 'f32', 'k');
    const v = gpu.tensor([1, 4, 2, 8], 'f32', 'v');
    const out = gpu.tensor([1, 4, 4, 8], 'f32', 'out');
    const lse = gpu.tensor([1, 4, 4], 'f32', 'lse');
    const bad = gpu.tensor([1, 4, 3, 8], 'f32', 'bad');
    const fmask = gpu.tensor([1, 4], 'f32', 'mask');
    const before = gpu.dispatchCount;
    expect(() => attentionForward(gpu, out, lse, q, k, bad)).toThrow(
      /attentionForward: v must be \(1, 4, 2, 8\) f32, got \[1, 4, 3, 8\] f32/,
    );
    expect(() => attentionForward(gpu, out, lse, q, bad, bad)).toThrow(/NH = 4 query heads must be a multiple of NKV = 3/);
    expect(() => attentionForward(gpu, bad, lse, q, k, v)).toThrow(/attentionForward: out must be \(1, 4, 4, 8\) f32/);
    expect(() => attentionForward(gpu, out, lse, q, k, v, { mask: fmask })).toThrow(/mask must be \(1, Tm >= 4\) i32, got \[1, 4\] f32/);
    expect(() => attentionForward(gpu, out, lse, q, k, v, { Tk: 3 })).toThrow(/Tq = 4 positions, more than the Tk = 3 keys/);
    expect(() => attentionForward(gpu, out, lse, q, k, v, { Tk: 5 })).toThrow(/Tk = 5 must be in \[1, 4\]/);
    expect(() => attentionBackward(gpu, q, bad, v, out, q, k, v, out, lse)).toThrow(
      /attentionBackward: dk must be \(1, 4, 2, 8\) f32, got \[1, 4, 3, 8\] f32/,
    );
    expect(gpu.dispatchCount).toBe(before);
    gpu.release(q, k, v, out, lse, bad, fmask);
  });
});
