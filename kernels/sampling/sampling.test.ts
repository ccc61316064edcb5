import { describe, expect, it } from 'vitest';
import { Rng } from '../../src/common/rng.ts';
import type { Gpu } from '../../src/gpu/gpu.ts';
import { expectClose, randn, testGpu } from '../testing.ts';
import { type SamplingRow, type SamplingWorkgroup, pcgHash, sampleTokens, samplingUniform, uploadSamplingSettings } from './sampling.ts';
import { sampleRowRef } from './sampling.ref.ts';

const ROW_SETTINGS: SamplingRow[] = [
  { temperature: 0 }, // greedy
  { temperature: 1 },
  { temperature: 0.6 },
  { temperature: 1.7 },
  { temperature: 1, topK: 1 },
  { temperature: 0.8, topK: 5 },
  { temperature: 1, topK: 40 },
  { temperature: 1, topP: 0.9 },
  { temperature: 0.7, topP: 0.5 },
  { temperature: 1.3, topP: 0.05 },
  { temperature: 0.9, topK: 20, topP: 0.8 },
  { temperature: 1, topK: 3, topP: 0.95 },
];

interface Run {
  tokens: Int32Array;
  logprobs: Float32Array;
}

async function sampleOnGpu(
  gpu: Gpu,
  logits: Float32Array,
  N: number,
  V: number,
  rows: SamplingRow[],
  seed: number,
  step: number,
  streams?: number[],
  wg: SamplingWorkgroup = 128,
  onGpu = false,
): Promise<Run> {
  const tl = gpu.upload(logits, [N, V], 'f32', 'logits');
  const settings = uploadSamplingSettings(gpu, rows, streams);
  const token = gpu.tensor([N], 'i32', 'token');
  const logprob = gpu.tensor([N], 'f32', 'logprob');
  const stepGpu = onGpu ? gpu.upload([step], [1], 'i32', 'step') : undefined;
  sampleTokens(gpu, token, logprob, tl, settings, seed, onGpu ? 0 : step, { workgroupSize: wg, stepGpu });
  const out = { tokens: (await gpu.read(token)) as Int32Array, logprobs: (await gpu.read(logprob)) as Float32Array };
  gpu.release(tl, token, logprob, stepGpu, settings.temperature, settings.topK, settings.topP, settings.streams);
  return out;
}

describe('sampling', () => {
  it('the TS RNG is the PCG hash and gives multiples of 2^-24 in [0, 1)', () => {
    expect(pcgHash(0)).toBe(129708002); // pcg_hash(0) from the reference C: state 2891336453
    const r = new Rng(1);
    for (let i = 0; i < 1000; i++) {
      const v = samplingUniform(Math.floor(r.next() * 2 ** 32), i, i * 7);
      expect(v).toBeGreaterThanOrEqual(0);
      expect(v).toBeLessThan(1);
      expect(Number.isInteger(v * 2 ** 24)).toBe(true);
    }
  });

  for (const [V, wgs] of [
    [1, [128, 32]],
    [7, [128, 32]],
    [64, [128, 32]],
    [65, [128, 32]],
    [1000, [128, 32, 256]],
    [50000, [128, 256]],
  ] as const) {
    for (const wg of wgs) {
      it(`matches the reference token for token, V=${V}, workgroup ${wg}`, async () => {
        const gpu = await testGpu();
        const N = ROW_SETTINGS.length * (V > 1000 ? 2 : 4);
        const rows = Array.from({ length: N }, (_, i) => ROW_SETTINGS[i % ROW_SETTINGS.length]);
        const logits = Float32Array.from(randn(N * V, 1000 + V, 3));
        // the second half has ties: logits rounded to 0.5, so thresholds and argmax meet equal values
        for (let i = (N / 2) * V; i < N * V; i++) logits[i] = Math.round(logits[i] * 2) / 2;
        const streams = Array.from({ length: N }, (_, i) => 1000 + 3 * i);
        const [seed, step] = [12345, 17];
        const got = await sampleOnGpu(gpu, logits, N, V, rows, seed, step, streams, wg);
        let borderline = 0;
        const refLp: number[] = [];
        const gotLp: number[] = [];
        for (let n = 0; n < N; n++) {
          const s = rows[n];
          const ref = sampleRowRef(
            logits.subarray(n * V, (n + 1) * V),
            s.temperature,
            s.topK ?? 0,
            s.topP ?? 1,
            samplingUniform(seed, streams[n], step),
          );
          // f32 rounding (relative ~1e-7 on the masses and their sums) may legitimately go either way here
          if (ref.margin < 1e-6) {
            borderline++;
            continue;
          }
          expect(got.tokens[n], `row ${n} (${JSON.stringify(s)})`).toBe(ref.token);
          refLp.push(ref.logprob);
          gotLp.push(got.logprobs[n]);
        }
        expect(borderline).toBeLessThanOrEqual(1);
        expectClose('logprob', gotLp, refLp, { atol: 2e-5, rtol: 1e-5 });
      });
    }
  }

  it('greedy takes the lowest index among equal maxima; top-k=1 too', async () => {
    const gpu = await testGpu();
    const V = 300;
    const logits = new Float32Array(4 * V).fill(-2);
    logits[0 * V + 200] = 5;
    logits[0 * V + 7] = 5;
    logits[0 * V + 299] = 5;
    logits[1 * V + 130] = 1;
    logits[1 * V + 129] = 1;
    logits[2 * V + 299] = 3;
    logits[3 * V + 250] = 4;
    logits[3 * V + 251] = 3.5;
    const rows = [{ temperature: 0 }, { temperature: 0 }, { temperature: 0 }, { temperature: 2, topK: 1 }];
    const got = await sampleOnGpu(gpu, logits, 4, V, rows, 1, 0);
    expect(Array.from(got.tokens)).toEqual([7, 129, 299, 250]);
    expect(Array.from(got.logprobs)).toEqual([0, 0, 0, 0]);
  });

  it('is reproducible and follows the row streams, not the row positions', async () => {
    const gpu = await testGpu();
    const [N, V] = [16, 65];
    const row = Float32Array.from(randn(V, 5, 1));
    const logits = new Float32Array(N * V);
    for (let n = 0; n < N; n++) logits.set(row, n * V);
    const rows = Array.from({ length: N }, () => ({ temperature: 1, topP: 0.95 }));
    const streams = Array.from({ length: N }, (_, i) => 40 + i);
    const a = await sampleOnGpu(gpu, logits, N, V, rows, 9, 3, streams, 64);
    const b = await sampleOnGpu(gpu, logits, N, V, rows, 9, 3, [...streams].reverse(), 64);
    expect(Array.from(b.tokens)).toEqual(Array.from(a.tokens).reverse());
    const c = await sampleOnGpu(gpu, logits, N, V, rows, 9, 4, streams, 64);
    expect(Array.from(c.tokens)).not.toEqual(Array.from(a.tokens)); // another step draws other numbers
    // the step read on the GPU (a recorded generation step) draws the same numbers
    for (const [step, want] of [
      [3, a],
      [4, c],
    ] as const) {
      const d = await sampleOnGpu(gpu, logits, N, V, rows, 9, step, streams, 64, true);
      expect(Array.from(d.tokens)).toEqual(Array.from(want.tokens));
      expect(Array.from(d.logprobs)).toEqual(Array.from(want.logprobs));
    }
  });

  for (const [label, V, setting] of [
    ['temperature only', 20, { temperature: 0.8 }],
    ['top-k + top-p', 65, { temperature: 1.2, topK: 12, topP: 0.7 }],
  ] as const) {
    it(`frequencies follow the truncated distribution (${label})`, async () => {
      const gpu = await testGpu();
      const N = 3000; // workgroup 32: SwiftShader's cost per row grows with the workgroup size
      const row = Float32Array.from(randn(V, 77 + V, 2));
      const logits = new Float32Array(N * V);
      for (let n = 0; n < N; n++) logits.set(row, n * V);
      const got = await sampleOnGpu(gpu, logits, N, V, Array(N).fill(setting), 2024, 0, undefined, 32);
      const { q } = sampleRowRef(row, setting.temperature, 'topK' in setting ? setting.topK : 0, 'topP' in setting ? setting.topP : 1, 0.5);
      const counts = new Float64Array(V);
      for (const t of got.tokens) counts[t]++;
      let chi2 = 0;
      let df = -1;
      for (let i = 0; i < V; i++) {
        if (q[i] === 0) {
          expect(counts[i], `token ${i} is outside the kept set`).toBe(0);
          continue;
        }
        chi2 += (counts[i] - N * q[i]) ** 2 / (N * q[i]);
        df++;
      }
      // chi-square with df degrees of freedom: mean df, sd sqrt(2 df); 5 sd is a loose but real bound
      expect(chi2, `chi2 ${chi2.toFixed(1)} with ${df} dof`).toBeLessThan(df + 5 * Math.sqrt(2 * df) + 5);
      for (let n = 0; n < 50; n++) expect(got.logprobs[n]).toBeCloseTo(Math.log(q[got.tokens[n]]), 4);
    });
  }

  it('rejects mismatched shapes before dispatch', async () => {
    const gpu = await testGpu();
    const tl = gpu.upload(randn(12, 1), [3, 4], 'f32', 'logits');
    const settings = uploadSamplingSettings(gpu, [{ temperature: 1 }, { temperature: 1 }]);
    const token = gpu.tensor([3], 'i32', 'token');
    const logprob = gpu.tensor([3], 'f32', 'logprob');
    const before = gpu.dispatchCount;
    expect(() => sampleTokens(gpu, token, logprob, tl, settings, 1, 0)).toThrow(
      /sampleTokens: temperature must be \(3\) f32, got \[2\] f32/,
    );
    expect(gpu.dispatchCount).toBe(before);
    gpu.release(tl, token, logprob, settings.temperature, settings.topK, settings.topP);
  });
});
