import { describe, expect, it } from 'vitest';
import { dot, expectClose, finiteDiff, randn, testGpu } from '../testing.ts';
import { loraBackward, loraForward } from './lora.ts';
import { type GroupTuning, loraBackwardGroups, loraForwardGroups } from './groups.ts';
import { type LoraDims, loraBackwardRef, loraForwardRef } from './lora.ref.ts';

// [B, T, S, R, IN, OUT]: rows, ranks, inputs and outputs at and off the 16x16 tile.
const SHAPES: Array<[number, number, number, number, number, number]> = [
  [1, 1, 3, 1, 1, 1],
  [2, 7, 3, 4, 7, 5],
  [3, 64, 3, 8, 64, 64],
  [4, 65, 3, 16, 65, 130],
  [2, 130, 3, 17, 130, 7],
  [5, 3, 3, 64, 33, 65],
  // decode (T = 1): the 'rows' forward by default on a GPU
  [7, 1, 3, 8, 65, 130],
  [130, 1, 3, 4, 64, 7],
  [64, 1, 3, 16, 130, 65],
  // 'groups': R = 1 and 9 (rank bounds 8 and 16), T off its row groups (4 or 2 rows) and 32-row chunks
  [3, 37, 2, 9, 67, 70],
  [6, 33, 2, 1, 66, 129],
];
const f32 = (a: Float64Array) => Float64Array.from(Float32Array.from(a));
/** Sequence b's slot: a mix of slots 0 and 2 and no adapter (-1); slot 1 is never used. */
const slotPattern = (B: number) => Int32Array.from({ length: B }, (_, b) => (B === 1 ? 2 : [0, -1, 2, 0, -1][b % 5]));

function rowsOf(a: ArrayLike<number>, rows: number[], width: number): number[] {
  return rows.flatMap((m) => Array.from({ length: width }, (_, j) => a[m * width + j]));
}

describe('lora', () => {
  for (const [B, T, S, R, IN, OUT] of SHAPES) {
    it(`forward and backward B=${B} T=${T} S=${S} R=${R} IN=${IN} OUT=${OUT}`, async () => {
      const gpu = await testGpu();
      const d: LoraDims = { B, T, S, R, IN, OUT };
      const M = B * T;
      const scale = 16 / R;
      const slots = slotPattern(B);
      const x = f32(randn(M * IN, 1 + M));
      const A = f32(randn(S * R * IN, 2 + R, 1 / Math.sqrt(IN)));
      const Bw = f32(randn(S * OUT * R, 3 + OUT, 1 / R));
      const y0 = f32(randn(M * OUT, 4)); // the base projection's output
      const dy = f32(randn(M * OUT, 5 + M));
      const dx0 = f32(randn(M * IN, 6)); // the base projection's dx
      const dA0 = f32(randn(S * R * IN, 7, 0.1)); // gradients accumulate
      const dB0 = f32(randn(S * OUT * R, 8, 0.1));
      const tSlots = gpu.upload(slots, [B], 'i32', 'slots');
      const tX = gpu.upload(x, [M, IN], 'f32', 'x');
      const tA = gpu.upload(A, [S, R, IN], 'f32', 'A');
      const tBw = gpu.upload(Bw, [S, OUT, R], 'f32', 'Bw');
      const tY = gpu.upload(y0, [M, OUT], 'f32', 'y');
      const tDy = gpu.upload(dy, [M, OUT], 'f32', 'dy');
      const tDx = gpu.upload(dx0, [M, IN], 'f32', 'dx');
      const tDA = gpu.upload(dA0, [S, R, IN], 'f32', 'dA');
      const tDB = gpu.upload(dB0, [S, OUT, R], 'f32', 'dB');
      const tH = gpu.upload(new Float32Array(M * R).fill(7), [M, R], 'f32', 'h');
      // Every layout gives the same h, y and gradients (each on its own copies); 'wide' is the CPU default
      // ('direct', which it replaced there, runs beside it on the same inputs).
      const tol = { atol: 1e-5, rtol: 1e-4 };
      const fwd = loraForwardRef(x, slots, A, Bw, d, scale);
      const bwd = loraBackwardRef(dy, x, slots, A, Bw, d, scale);
      const forwards: Record<string, { h: Float32Array; y: Float32Array }> = {};
      for (const path of ['tiles', 'rows', 'direct', 'wide', 'groups'] as const) {
        const [tY2, tH2] = [gpu.upload(y0, [M, OUT], 'f32', 'y2'), gpu.upload(new Float32Array(M * R).fill(7), [M, R], 'f32', 'h2')];
        loraForward(gpu, tY2, tH2, tX, tSlots, tA, tBw, T, scale, path);
        expectClose(`h (${path})`, await gpu.read(tH2), fwd.h, tol);
        expectClose(
          `y (${path})`,
          await gpu.read(tY2),
          fwd.y.map((v, i) => v + y0[i]),
          tol,
        );
        forwards[path] = { h: (await gpu.read(tH2)) as Float32Array, y: (await gpu.read(tY2)) as Float32Array };
        gpu.release(tY2, tH2);
      }
      expectClose('h wide vs direct', forwards.wide.h, forwards.direct.h, tol);
      expectClose('y wide vs direct', forwards.wide.y, forwards.direct.y, tol);
      expectClose('h groups vs tiles', forwards.groups.h, forwards.tiles.h, tol); // the GPU path it replaced
      expectClose('y groups vs tiles', forwards.groups.y, forwards.tiles.y, tol);
      loraForward(gpu, tY, tH, tX, tSlots, tA, tBw, T, scale);
      const copies = () => [
        gpu.upload(dx0, [M, IN], 'f32', 'dx'),
        gpu.upload(dA0, [S, R, IN], 'f32', 'dA'),
        gpu.upload(dB0, [S, OUT, R], 'f32', 'dB'),
      ];
      const others = (['tiles', 'direct', 'wide', 'groups'] as const).map((path) => ({ path, ts: copies() }));
      for (const {
        path,
        ts: [tDx2, tDA2, tDB2],
      } of others)
        loraBackward(gpu, tDx2, tDA2, tDB2, tDy, tX, tH, tSlots, tA, tBw, T, scale, path);
      loraBackward(gpu, tDx, tDA, tDB, tDy, tX, tH, tSlots, tA, tBw, T, scale);
      const y = await gpu.read(tY);
      const dx = await gpu.read(tDx);
      const dA = await gpu.read(tDA);
      const dB = await gpu.read(tDB);
      expectClose('h', await gpu.read(tH), fwd.h, tol);
      expectClose(
        'y',
        y,
        fwd.y.map((v, i) => v + y0[i]),
        tol,
      );
      const grads: Record<string, Float32Array[]> = {};
      for (const {
        path,
        ts: [tDx2, tDA2, tDB2],
      } of others) {
        grads[path] = [];
        for (const [name, t, want] of [
          ['dx', tDx2, bwd.dx.map((v, i) => v + dx0[i])],
          ['dA', tDA2, bwd.dA.map((v, i) => v + dA0[i])],
          ['dB', tDB2, bwd.dB.map((v, i) => v + dB0[i])],
        ] as const) {
          const got = (await gpu.read(t)) as Float32Array;
          expectClose(`${name} (${path})`, got, want, tol);
          grads[path].push(got);
        }
        gpu.release(tDx2, tDA2, tDB2);
      }
      for (const [i, name] of ['dx', 'dA', 'dB'].entries()) {
        expectClose(`${name} wide vs direct`, grads.wide[i], grads.direct[i], tol);
        expectClose(`${name} groups vs tiles`, grads.groups[i], grads.tiles[i], tol);
      }
      expectClose(
        'dx',
        dx,
        bwd.dx.map((v, i) => v + dx0[i]),
        tol,
      );
      expectClose(
        'dA',
        dA,
        bwd.dA.map((v, i) => v + dA0[i]),
        tol,
      );
      expectClose(
        'dB',
        dB,
        bwd.dB.map((v, i) => v + dB0[i]),
        tol,
      );

      // Rows of slot -1 sequences and the gradients of unused slots are left exactly as they were.
      const bare = Array.from({ length: M }, (_, m) => m).filter((m) => slots[Math.floor(m / T)] < 0);
      expectClose('y of slot -1 rows', rowsOf(y, bare, OUT), rowsOf(y0, bare, OUT), { atol: 0, rtol: 0 });
      expectClose('dx of slot -1 rows', rowsOf(dx, bare, IN), rowsOf(dx0, bare, IN), { atol: 0, rtol: 0 });
      for (let s = 0; s < S; s++) {
        if (slots.includes(s)) continue;
        expectClose(`dA[${s}] (unused)`, dA.subarray(s * R * IN, (s + 1) * R * IN), dA0.subarray(s * R * IN, (s + 1) * R * IN), {
          atol: 0,
          rtol: 0,
        });
        expectClose(`dB[${s}] (unused)`, dB.subarray(s * OUT * R, (s + 1) * OUT * R), dB0.subarray(s * OUT * R, (s + 1) * OUT * R), {
          atol: 0,
          rtol: 0,
        });
      }
      gpu.release(tSlots, tX, tA, tBw, tY, tDy, tDx, tDA, tDB, tH);
    });
  }

  it('is deterministic and skips dx when not asked', async () => {
    const gpu = await testGpu();
    const [B, T, S, R, IN, OUT] = [6, 9, 3, 8, 40, 24];
    const M = B * T;
    const slots = Int32Array.from([1, 1, -1, 0, 1, 2]);
    const tSlots = gpu.upload(slots, [B], 'i32', 'slots');
    const tX = gpu.upload(randn(M * IN, 1), [M, IN], 'f32', 'x');
    const tA = gpu.upload(randn(S * R * IN, 2), [S, R, IN], 'f32', 'A');
    const tBw = gpu.upload(randn(S * OUT * R, 3), [S, OUT, R], 'f32', 'Bw');
    const tDy = gpu.upload(randn(M * OUT, 4), [M, OUT], 'f32', 'dy');
    const tH = gpu.tensor([M, R], 'f32', 'h');
    const tY = gpu.zeros([M, OUT], 'f32', 'y');
    loraForward(gpu, tY, tH, tX, tSlots, tA, tBw, T, 2);
    const runs: Float32Array[] = [];
    for (let i = 0; i < 2; i++) {
      const tDA = gpu.zeros([S, R, IN], 'f32', 'dA');
      const tDB = gpu.zeros([S, OUT, R], 'f32', 'dB');
      const before = gpu.dispatchCount;
      loraBackward(gpu, null, tDA, tDB, tDy, tX, tH, tSlots, tA, tBw, T, 2);
      expect(gpu.dispatchCount - before).toBe(3);
      runs.push(Float32Array.from([...(await gpu.read(tDA)), ...(await gpu.read(tDB))]));
      gpu.release(tDA, tDB);
    }
    expect(Buffer.from(runs[0].buffer).equals(Buffer.from(runs[1].buffer))).toBe(true);
    gpu.release(tSlots, tX, tA, tBw, tDy, tH, tY);
  });

  it('groups: every tuning matches the reference; deterministic; dx = null skips dx only', async () => {
    const gpu = await testGpu();
    // B = 1 and a mix of slots; T = 71 spans two 64-row staging blocks with chunk 70, and is off every row group
    for (const [B, T, S, R, IN, OUT, slotList] of [
      [1, 71, 2, 3, 20, 9, [1]],
      [4, 71, 3, 16, 9, 20, [2, -1, 0, 2]],
    ] as const) {
      const d: LoraDims = { B, T, S, R, IN, OUT };
      const M = B * T;
      const scale = 0.75;
      const slots = Int32Array.from(slotList);
      const x = f32(randn(M * IN, 11));
      const A = f32(randn(S * R * IN, 12, 0.3));
      const Bw = f32(randn(S * OUT * R, 13, 0.3));
      const dy = f32(randn(M * OUT, 14));
      const fwd = loraForwardRef(x, slots, A, Bw, d, scale);
      const bwd = loraBackwardRef(dy, x, slots, A, Bw, d, scale);
      const tSlots = gpu.upload(slots, [B], 'i32', 'slots');
      const tX = gpu.upload(x, [M, IN], 'f32', 'x');
      const tA = gpu.upload(A, [S, R, IN], 'f32', 'A');
      const tBw = gpu.upload(Bw, [S, OUT, R], 'f32', 'Bw');
      const tDy = gpu.upload(dy, [M, OUT], 'f32', 'dy');
      const tol = { atol: 1e-5, rtol: 1e-4 };
      // every row count and workgroup size (128 and 256 threads fold 64-lane slices), chunks past the 64 staged rows
      const tunings: GroupTuning[] =
        R <= 8
          ? [
              { rows: 1, threads: 256, chunk: 70 },
              { rows: 2, threads: 64, chunk: 1 },
              { rows: 4, threads: 128, chunk: 200 },
            ]
          : [
              { rows: 1, threads: 64, chunk: 70 },
              { rows: 2, threads: 256, chunk: 5 },
            ];
      for (const t of tunings) {
        const tY = gpu.zeros([M, OUT], 'f32', 'y');
        const tH = gpu.upload(new Float32Array(M * R).fill(7), [M, R], 'f32', 'h');
        loraForwardGroups(gpu, tY, tH, tX, tSlots, tA, tBw, d, scale, t);
        expectClose(`h rows=${t.rows} threads=${t.threads}`, await gpu.read(tH), fwd.h, tol);
        expectClose(`y rows=${t.rows} threads=${t.threads}`, await gpu.read(tY), fwd.y, tol);
        const runs: Float32Array[] = [];
        for (const withDx of [true, false]) {
          const tDx = gpu.zeros([M, IN], 'f32', 'dx');
          const tDA = gpu.zeros([S, R, IN], 'f32', 'dA');
          const tDB = gpu.zeros([S, OUT, R], 'f32', 'dB');
          const before = gpu.dispatchCount;
          loraBackwardGroups(gpu, withDx ? tDx : null, tDA, tDB, tDy, tX, tH, tSlots, tA, tBw, d, scale, t);
          expect(gpu.dispatchCount - before).toBe(3);
          expectClose(
            `dx chunk=${t.chunk}${withDx ? '' : ' (not asked: left zero)'}`,
            await gpu.read(tDx),
            withDx ? bwd.dx : new Float64Array(M * IN),
            withDx ? tol : { atol: 0, rtol: 0 },
          );
          expectClose(`dA chunk=${t.chunk}`, await gpu.read(tDA), bwd.dA, tol);
          expectClose(`dB chunk=${t.chunk}`, await gpu.read(tDB), bwd.dB, tol);
          runs.push(Float32Array.from([...(await gpu.read(tDA)), ...(await gpu.read(tDB))]));
          gpu.release(tDx, tDA, tDB);
        }
        expect(Buffer.from(runs[0].buffer).equals(Buffer.from(runs[1].buffer))).toBe(true); // same sums, same order
        gpu.release(tY, tH);
      }
      gpu.release(tSlots, tX, tA, tBw, tDy);
    }
  });

  it('backward reference matches finite differences of the forward', () => {
    const d: LoraDims = { B: 3, T: 2, S: 3, R: 2, IN: 3, OUT: 4 };
    const M = d.B * d.T;
    const slots = Int32Array.from([2, -1, 0]);
    const scale = 1.5;
    const x = randn(M * d.IN, 51);
    const A = randn(d.S * d.R * d.IN, 52);
    const Bw = randn(d.S * d.OUT * d.R, 53);
    const dy = randn(M * d.OUT, 54);
    const ref = loraBackwardRef(dy, x, slots, A, Bw, d, scale);
    const tol = { atol: 1e-8, rtol: 1e-6 };
    expectClose(
      'dx vs fd',
      ref.dx,
      finiteDiff((v) => dot(loraForwardRef(v, slots, A, Bw, d, scale).y, dy), x),
      tol,
    );
    expectClose(
      'dA vs fd',
      ref.dA,
      finiteDiff((v) => dot(loraForwardRef(x, slots, v, Bw, d, scale).y, dy), A),
      tol,
    );
    expectClose(
      'dB vs fd',
      ref.dB,
      finiteDiff((v) => dot(loraForwardRef(x, slots, A, v, d, scale).y, dy), Bw),
      tol,
    );
  });

  it('rejects mismatched shapes before dispatch', async () => {
    const gpu = await testGpu();
    const [B, T, S, R, IN, OUT] = [2, 3, 3, 4, 5, 6];
    const slots = gpu.upload([0, -1], [B], 'i32', 'slots');
    const x = gpu.tensor([B * T, IN], 'f32', 'x');
    const A = gpu.tensor([S, R, IN], 'f32', 'A');
    const Bw = gpu.tensor([S, OUT, R], 'f32', 'Bw');
    const BwBad = gpu.tensor([S, OUT, R + 1], 'f32', 'BwBad');
    const y = gpu.tensor([B * T, OUT], 'f32', 'y');
    const h = gpu.tensor([B * T, R], 'f32', 'h');
    const dA = gpu.tensor([S, R, IN], 'f32', 'dA');
    const before = gpu.dispatchCount;
    expect(() => loraForward(gpu, y, h, x, slots, A, BwBad, T, 1)).toThrow(
      /loraForward: Bw must be \(3, OUT, 4\) f32 to match A \[3, 4, 5\] f32, got \[3, 6, 5\] f32/,
    );
    expect(() => loraForward(gpu, y, h, x, slots, A, Bw, T + 1, 1)).toThrow(
      /loraForward: x \(B\*T = 2\*4 rows.*must be \(8, 5\) f32, got \[6, 5\] f32/,
    );
    expect(() => loraForward(gpu, h, y, x, slots, A, Bw, T, 1)).toThrow(/loraForward: y must be \(6, 6\) f32, got \[6, 4\] f32/);
    expect(() => loraBackward(gpu, x, dA, dA, y, x, h, slots, A, Bw, T, 1)).toThrow(
      /loraBackward: dB must be \(3, 6, 4\) f32, got \[3, 4, 5\] f32/,
    );
    expect(() => loraBackward(gpu, x, dA, Bw, y, x, h, slots, A, Bw, T, 1)).toThrow(/loraBackward: x and dx must be different buffers/);
    expect(gpu.dispatchCount).toBe(before);
    gpu.release(slots, x, A, Bw, BwBad, y, h, dA);
  });
});
