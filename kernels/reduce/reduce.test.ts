import { describe, expect, it } from 'vitest';
import { Rng } from '../../src/common/rng.ts';
import { expectClose, randn, testGpu } from '../testing.ts';
import {
  type ReducePath,
  type ReduceOp,
  maskedMean,
  maskedMeanRows,
  reduceAll,
  reduceAllInto,
  reduceRows,
  reduceSlotsInto,
} from './reduce.ts';
import { maskedMeanRef, maskedMeanRowsRef, reduceRef, reduceRowsRef, reduceSlotsRef } from './reduce.ref.ts';

const OPS: ReduceOp[] = ['sum', 'mean', 'max', 'sumsq'];
const FLAT = [1, 7, 64, 65, 130, 256, 257, 4096, 4097, 50000];
const ROWS: Array<[N: number, C: number]> = [
  [1, 1],
  [7, 7],
  [3, 64],
  [5, 65],
  [2, 130],
  [65, 3],
  [2, 50000],
];
const f32 = (a: Float64Array) => Float64Array.from(Float32Array.from(a));
const tol = (op: ReduceOp, n: number) => ({
  atol: op === 'max' ? 0 : 1e-6 * Math.sqrt(n) * (op === 'sumsq' ? 4 : 2),
  rtol: op === 'max' ? 0 : 2e-6,
});
const mask01 = (n: number, seed: number) => {
  const r = new Rng(seed);
  return Float64Array.from({ length: n }, () => (r.next() < 0.6 ? 1 : 0));
};

// Both paths on every case of the four public forms below ('tree' for GPUs; 'one', the CPU adapters'
// default, which replaced 'tree' there), each against the reference, and 'one' against 'tree'.
const PATHS: ReducePath[] = ['tree', 'one'];

describe('reduce', () => {
  it.each(FLAT)('reduceAll n=%i', async (n) => {
    const gpu = await testGpu();
    const x = f32(randn(n, 10 + n));
    const tx = gpu.upload(x, [n], 'f32', 'x');
    const got: number[][] = [];
    for (const path of PATHS) {
      const outs = OPS.map((op) => {
        const o = gpu.tensor([1], 'f32', `out.${op}`);
        reduceAll(gpu, o, tx, op, path);
        return o;
      });
      got.push([]);
      for (const [k, op] of OPS.entries()) {
        const v = await gpu.read(outs[k]);
        expectClose(`${op}(${n}) ${path}`, v, [reduceRef(x, op)], tol(op, n));
        got[got.length - 1].push(v[0]);
      }
      gpu.release(...outs);
    }
    for (const [k, op] of OPS.entries()) expectClose(`${op}(${n}) one vs tree`, [got[1][k]], [got[0][k]], tol(op, n));
    gpu.release(tx);
  });

  it.each(ROWS)('reduceRows N=%i C=%i', async (N, C) => {
    const gpu = await testGpu();
    const x = f32(randn(N * C, N + 7 * C));
    const tx = gpu.upload(x, [N, C], 'f32', 'x');
    const got: Float32Array[][] = [];
    for (const path of PATHS) {
      const outs = OPS.map((op) => {
        const o = gpu.tensor([N], 'f32', `out.${op}`);
        reduceRows(gpu, o, tx, op, path);
        return o;
      });
      got.push([]);
      for (const [k, op] of OPS.entries()) {
        const v = (await gpu.read(outs[k])) as Float32Array;
        expectClose(`${op} rows ${path}`, v, reduceRowsRef(x, N, C, op), tol(op, C));
        got[got.length - 1].push(v);
      }
      gpu.release(...outs);
    }
    for (const [k, op] of OPS.entries()) expectClose(`${op} rows one vs tree`, got[1][k], got[0][k], tol(op, C));
    gpu.release(tx);
  });

  it.each(FLAT)('maskedMean n=%i', async (n) => {
    const gpu = await testGpu();
    const v = f32(randn(n, 20 + n));
    const m = mask01(n, 30 + n);
    const tv = gpu.upload(v, [n], 'f32', 'v');
    const tm = gpu.upload(m, [n], 'f32', 'm');
    const got: number[] = [];
    for (const path of PATHS) {
      const out = gpu.tensor([1], 'f32', 'out');
      maskedMean(gpu, out, tv, tm, path);
      const r = await gpu.read(out);
      expectClose(`maskedMean ${path}`, r, [maskedMeanRef(v, m)], { atol: 1e-6, rtol: 1e-5 });
      got.push(r[0]);
      gpu.release(out);
    }
    expectClose('maskedMean one vs tree', [got[1]], [got[0]], { atol: 1e-6, rtol: 1e-5 });
    gpu.release(tv, tm);
  });

  it.each(ROWS)('maskedMeanRows N=%i C=%i', async (N, C) => {
    const gpu = await testGpu();
    const v = f32(randn(N * C, 40 + N));
    const m = mask01(N * C, 50 + C);
    if (N > 1) m.fill(0, 0, C); // an all-masked row gives 0
    const tv = gpu.upload(v, [N, C], 'f32', 'v');
    const tm = gpu.upload(m, [N, C], 'f32', 'm');
    const got: Float32Array[] = [];
    for (const path of PATHS) {
      const out = gpu.tensor([N], 'f32', 'out');
      maskedMeanRows(gpu, out, tv, tm, path);
      const r = (await gpu.read(out)) as Float32Array;
      expectClose(`maskedMeanRows ${path}`, r, maskedMeanRowsRef(v, m, N, C), { atol: 1e-6, rtol: 1e-5 });
      got.push(r);
      gpu.release(out);
    }
    expectClose('maskedMeanRows one vs tree', got[1], got[0], { atol: 1e-6, rtol: 1e-5 });
    gpu.release(tv, tm);
  });

  it('reduceAllInto: one sum of squares over several tensors, at an offset, with three passes', async () => {
    const gpu = await testGpu();
    const sizes = [5, 4096 * 4096 + 3, 70000]; // 4099 first-pass partials: a second and a third pass
    // a cheap hash for the 16M values (randn would take seconds); f32 values, like every input here
    const xs = sizes.map((n, i) =>
      Float32Array.from({ length: n }, (_, j) => ((Math.imul(j + 1, 2654435761 + 2 * i) >>> 8) / 2 ** 24 - 0.5) * 0.02),
    );
    const ts = xs.map((x, i) => gpu.upload(x, [x.length], 'f32', `x${i}`));
    const out = gpu.upload([7, 7, 7], [3], 'f32', 'out');
    reduceAllInto(gpu, out, 1, ts, 'sumsq');
    const ref = xs.reduce((a, x) => a + reduceRef(x, 'sumsq'), 0);
    const got = await gpu.read(out);
    expectClose('sumsq list', got, [7, ref, 7], { atol: 1e-6, rtol: 1e-5 });
    gpu.release(...ts, out);
  });

  // Slot-major tensors as adamw's per-agent clipping reads them: one tensor of one segment per slot (one
  // pass), and lists whose slots span several segments (a first pass and a final one).
  for (const [S, sizes] of [
    [3, [3 * 7]],
    [2, [2 * 5, 2 * 4097, 2 * 130]],
    [4, [4 * 9000, 4]],
  ] as Array<[number, number[]]>) {
    it(`reduceSlotsInto: S=${S}, tensors of ${sizes.join(', ')}`, async () => {
      const gpu = await testGpu();
      const xs = sizes.map((n, i) => f32(randn(n, 40 + i)));
      const ts = xs.map((x, i) => gpu.upload(x, [S, x.length / S], 'f32', `x${i}`));
      for (const op of OPS) {
        const out = gpu.upload(new Float32Array(1 + 8 * S).fill(7), [1 + 8 * S], 'f32', 'out'); // stride 8 from offset 1
        reduceSlotsInto(gpu, out, 1, 8, ts, op, S);
        const got = await gpu.read(out);
        const ref = reduceSlotsRef(xs, S, op);
        const n = xs.reduce((a, x) => a + x.length / S, 0);
        expectClose(
          `${op} slots`,
          Array.from({ length: S }, (_, s) => got[1 + 8 * s]),
          ref,
          tol(op, n),
        );
        expect(
          Array.from(got)
            .filter((_, i) => (i - 1) % 8 !== 0 || i === 0)
            .every((v) => v === 7),
        ).toBe(true);
        gpu.release(out);
      }
      gpu.release(...ts);
    });
  }

  it("reduceSlotsInto with one slot gives exactly reduceAllInto's value", async () => {
    const gpu = await testGpu();
    const ts = [5000, 3, 9000].map((n, i) => gpu.upload(f32(randn(n, 60 + i)), [n], 'f32', `x${i}`));
    const a = gpu.tensor([8], 'f32', 'a');
    const b = gpu.tensor([1], 'f32', 'b');
    reduceSlotsInto(gpu, a, 0, 8, ts, 'sumsq', 1);
    reduceAllInto(gpu, b, 0, ts, 'sumsq');
    expect((await gpu.read(a))[0]).toBe((await gpu.read(b))[0]);
    gpu.release(...ts, a, b);
  });

  it.each(PATHS)('is deterministic and maps non-finite values to +inf in sumsq (%s)', async (path) => {
    const gpu = await testGpu();
    const x = f32(randn(9000, 3));
    const tx = gpu.upload(x, [9000], 'f32', 'x');
    const a = gpu.tensor([1], 'f32', 'a');
    const b = gpu.tensor([1], 'f32', 'b');
    reduceAll(gpu, a, tx, 'sum', path);
    reduceAll(gpu, b, tx, 'sum', path);
    expect((await gpu.read(a))[0]).toBe((await gpu.read(b))[0]);
    x[4321] = NaN;
    const tn = gpu.upload(x, [9000], 'f32', 'xnan');
    reduceAll(gpu, a, tn, 'sumsq', path);
    expect((await gpu.read(a))[0]).toBe(Infinity);
    gpu.release(tx, tn, a, b);
  });

  it('rejects mismatched shapes before dispatch', async () => {
    const gpu = await testGpu();
    const x = gpu.upload(randn(12, 1), [3, 4], 'f32', 'x');
    const m = gpu.upload(randn(12, 1), [4, 3], 'f32', 'm');
    const out = gpu.tensor([4], 'f32', 'out');
    const before = gpu.dispatchCount;
    expect(() => reduceRows(gpu, out, x, 'sum')).toThrow(/reduceRows: out must be \(3\) f32, got \[4\] f32/);
    expect(() => reduceAll(gpu, out, x, 'sum')).toThrow(/reduceAll: out must be \(1\) f32, got \[4\] f32/);
    expect(() => maskedMeanRows(gpu, out, x, m)).toThrow(/maskedMeanRows: mask must be \(3, 4\) f32, got \[4, 3\] f32/);
    expect(() => maskedMean(gpu, out, x, m)).toThrow(/maskedMean: out must be \(1\) f32, got \[4\] f32/);
    expect(() => reduceAllInto(gpu, out, 4, [x], 'sum')).toThrow(/reduceAll: out must be f32 with an element at offset 4, got \[4\] f32/);
    expect(() => reduceSlotsInto(gpu, out, 0, 2, [x], 'sum', 5)).toThrow(
      /reduceSlots: out must be f32 with an element at offset 8, got \[4\] f32/,
    );
    expect(() => reduceSlotsInto(gpu, out, 0, 0, [x], 'sum', 5)).toThrow(
      /reduceSlots: x\[0\] \[3, 4\] f32 does not split into 5 equal rows/,
    );
    expect(gpu.dispatchCount).toBe(before);
    gpu.release(x, m, out);
  });
});
