// Launcher for GPU token sampling (temperature, top-k, top-p per row, seeded counter-based RNG), and the
// RNG itself in TS, so a CPU reference or a replay draws the same uniform numbers as the kernel.

import type { Gpu } from '../../src/gpu/gpu.ts';
import { shapeError } from '../../src/gpu/errors.ts';
import { grid1d } from '../../src/gpu/program.ts';
import { type Tensor, shapeStr } from '../../src/gpu/tensor.ts';
import { fillTemplate } from '../common.ts';
import { defineKernel } from '../program.ts';
import source from './sampling.wgsl';

/** The PCG hash (O'Neill's pcg32 output on one LCG step), as in the kernel. */
export function pcgHash(v: number): number {
  const s = (Math.imul(v >>> 0, 747796405) + 2891336453) >>> 0;
  const w = Math.imul(((s >>> ((s >>> 28) + 4)) ^ s) >>> 0, 277803737) >>> 0;
  return ((w >>> 22) ^ w) >>> 0;
}

/**
 * The uniform number in [0, 1) (a multiple of 2^-24, exact in f32) that row stream `stream` uses at
 * generation step `step` under `seed`: counter-based, so independent of batch layout and dispatch order.
 */
export function samplingUniform(seed: number, stream: number, step: number): number {
  const h = pcgHash((pcgHash((pcgHash(seed) + (stream >>> 0)) >>> 0) + (step >>> 0)) >>> 0);
  return (h >>> 8) / 16777216;
}

/** Per-row sampling settings, small tensors so one batch can mix agents with different settings. */
export interface SamplingSettings {
  /** (N) f32; <= 0 means greedy. */
  temperature: Tensor;
  /** (N) i32; <= 0 or >= V means off. */
  topK: Tensor;
  /** (N) f32; >= 1 means off. */
  topP: Tensor;
  /** (N) u32 or i32: each row's RNG stream (e.g. its episode index); default: the row index. */
  streams?: Tensor;
}

export interface SamplingRow {
  temperature: number;
  topK?: number;
  topP?: number;
}

/** Uploads per-row settings (release the tensors with gpu.release when done). */
export function uploadSamplingSettings(gpu: Gpu, rows: readonly SamplingRow[], streams?: ArrayLike<number>): SamplingSettings {
  const N = rows.length;
  return {
    temperature: gpu.upload(
      rows.map((r) => r.temperature),
      [N],
      'f32',
      'sampling.temperature',
    ),
    topK: gpu.upload(
      rows.map((r) => r.topK ?? 0),
      [N],
      'i32',
      'sampling.topK',
    ),
    topP: gpu.upload(
      rows.map((r) => r.topP ?? 1),
      [N],
      'f32',
      'sampling.topP',
    ),
    streams: streams ? gpu.upload(Uint32Array.from(streams), [N], 'u32', 'sampling.streams') : undefined,
  };
}

export type SamplingWorkgroup = 32 | 64 | 128 | 256;

/**
 * The default threads a row: 256 on GPUs for a large vocabulary where the device allows (each thread's
 * serial walks of its chunk, the longest part of a step at vocabulary 49 152, half as long as at 128), else 128.
 */
export function samplingWorkgroup(gpu: Gpu, V: number): SamplingWorkgroup {
  const fits =
    gpu.limits.maxComputeInvocationsPerWorkgroup >= 256 &&
    gpu.limits.maxComputeWorkgroupSizeX >= 256 &&
    18 * 256 * 4 + 64 <= gpu.limits.maxComputeWorkgroupStorageSize;
  return !gpu.cpu && V >= 4096 && fits ? 256 : 128;
}

const sampling = defineKernel({
  name: 'sampling',
  bindings: ['logits', 'temperature', 'topK', 'topP', 'streams', 'token', 'logprob', 'stepBuf'],
  uniforms: { N: 'u32', V: 'u32', seed: 'u32', step: 'u32' },
  entries: { sample: ['logits', 'temperature', 'topK', 'topP', 'streams?', 'token', 'logprob', 'stepBuf?'] },
});

const samplingProgram = sampling.variants((hasStreams: boolean, wg: SamplingWorkgroup, stepGpu: boolean) => ({
  key: `sampling:${hasStreams ? 'streams' : 'rows'}:wg${wg}${stepGpu ? ':stepgpu' : ''}`,
  code: () =>
    fillTemplate(source, {
      STREAM: hasStreams ? 'streams[row]' : 'row',
      WG: String(wg),
      WF: String(16 * wg),
      STEP: stepGpu ? 'u32(stepBuf[0])' : 'u.step',
    }),
}));

/**
 * token (N) i32 and logprob (N) f32 (log-prob of the token under the distribution actually sampled
 * from: temperature, top-k and top-p applied and renormalised; 0 for greedy rows) from logits (N, V) f32.
 * Why that distribution: it is the behaviour policy that produced the token, so the value can weight or
 * check off-policy corrections; the policy log-prob PPO trains on (plain softmax at the training
 * temperature) comes from kernels/logprobs on the training forward, not from here.
 * seed and step (u32) pick the random numbers: row r uses samplingUniform(seed, streams[r] ?? r, step).
 * workgroupSize (threads per row, default samplingWorkgroup) changes speed only, not results beyond f32 rounding.
 * stepGpu ((1) i32): the step read on the GPU instead (`step` is then unused), so the dispatch is the same
 * at every generation step (a Gpu recording replays it).
 */
export function sampleTokens(
  gpu: Gpu,
  token: Tensor,
  logprob: Tensor,
  logits: Tensor,
  settings: SamplingSettings,
  seed: number,
  step: number,
  opts: { workgroupSize?: SamplingWorkgroup; stepGpu?: Tensor } = {},
): void {
  const op = 'sampleTokens';
  if (logits.dtype !== 'f32' || logits.shape.length !== 2 || logits.shape[1] === 0)
    shapeError(op, `logits must be (N, V) f32 with V > 0, got ${shapeStr(logits)}`);
  const [N, V] = logits.shape;
  const rows = (name: string, t: Tensor | undefined, dtypes: string[]) => {
    if (t && (!dtypes.includes(t.dtype) || t.shape.length !== 1 || t.shape[0] !== N)) {
      shapeError(op, `${name} must be (${N}) ${dtypes.join('/')}, got ${shapeStr(t)}`);
    }
  };
  rows('token', token, ['i32']);
  rows('logprob', logprob, ['f32']);
  rows('temperature', settings.temperature, ['f32']);
  rows('topK', settings.topK, ['i32']);
  rows('topP', settings.topP, ['f32']);
  rows('streams', settings.streams, ['u32', 'i32']);
  for (const [name, v] of [
    ['seed', seed],
    ['step', step],
  ] as const) {
    if (!Number.isInteger(v) || v < 0 || v > 0xffffffff) shapeError(op, `${name} must be a u32, got ${v}`);
  }
  if (opts.stepGpu && (opts.stepGpu.dtype !== 'i32' || opts.stepGpu.shape.length !== 1 || opts.stepGpu.shape[0] !== 1))
    shapeError(op, `stepGpu must be (1) i32, got ${shapeStr(opts.stepGpu)}`);
  const wg = opts.workgroupSize ?? samplingWorkgroup(gpu, V);
  if (wg !== 32 && wg !== 64 && wg !== 128 && wg !== 256) shapeError(op, `workgroupSize must be 32, 64, 128 or 256, got ${wg}`);
  sampling.run(gpu, {
    program: samplingProgram('sample', settings.streams !== undefined, wg, Boolean(opts.stepGpu)),
    bindings: {
      logits,
      temperature: settings.temperature,
      topK: settings.topK,
      topP: settings.topP,
      streams: settings.streams,
      token,
      logprob,
      stepBuf: opts.stepGpu,
    },
    uniforms: { N, V, seed, step: opts.stepGpu ? 0 : step },
    workgroups: grid1d(N),
  });
}
