// Launchers for rotary position embedding (HF Llama / Qwen2 rotate_half convention) on q and k in one
// dispatch, in place or out of place, and its backward (the inverse rotation of the gradients).

import type { Gpu } from '../../src/gpu/gpu.ts';
import { shapeError } from '../../src/gpu/errors.ts';
import { grid1d } from '../../src/gpu/program.ts';
import { type Tensor, shapeStr } from '../../src/gpu/tensor.ts';
import { fillTemplate } from '../common.ts';
import { defineKernel } from '../program.ts';
import source from './rope.wgsl';

const IO_INPLACE = `@group(0) @binding(3) var<storage, read_write> qo: array<f32>;
@group(0) @binding(4) var<storage, read_write> ko: array<f32>;
fn loadQ(i: u32) -> f32 { return qo[i]; }
fn loadK(i: u32) -> f32 { return ko[i]; }`;
const IO_SEPARATE = `@group(0) @binding(3) var<storage, read_write> qo: array<f32>;
@group(0) @binding(4) var<storage, read_write> ko: array<f32>;
@group(0) @binding(5) var<storage, read> qi: array<f32>;
@group(0) @binding(6) var<storage, read> ki: array<f32>;
fn loadQ(i: u32) -> f32 { return qi[i]; }
fn loadK(i: u32) -> f32 { return ki[i]; }`;

const ropeKernel = defineKernel({
  name: 'rope',
  bindings: ['pos', 'inv_freq', 'qo', 'ko', 'qi', 'ki'],
  uniforms: { BT: 'u32', NH: 'u32', NKV: 'u32', HALF: 'u32', sign: 'f32' },
  entries: { rotate: ['pos', 'inv_freq', 'qo', 'ko', 'qi?', 'ki?'] }, // qi, ki: the separate module's inputs
});
const PROGRAMS = {
  inplace: ropeKernel.program('rope:inplace', () => fillTemplate(source, { IO: IO_INPLACE }), 'rotate'),
  separate: ropeKernel.program('rope:separate', () => fillTemplate(source, { IO: IO_SEPARATE }), 'rotate'),
};

/**
 * HF's default inv_freq in float32: 1 / theta ** (f32(2d) / HS), d < HS/2, each step rounded to f32. The one
 * implementation: src/model/config.ts ropeInvFreq starts from it and applies the config's rope_scaling.
 */
export function thetaInvFreq(HS: number, theta: number): Float32Array {
  const f = Math.fround;
  return Float32Array.from({ length: HS / 2 }, (_, d) => f(1 / f(Math.pow(f(theta), f(f(2 * d) / HS)))));
}

const invFreqCache = new WeakMap<Gpu, Map<string, Tensor>>();

/** The inv_freq table on the GPU for (HS, theta), uploaded once per device and kept. */
function invFreqTensor(gpu: Gpu, HS: number, theta: number): Tensor {
  let m = invFreqCache.get(gpu);
  if (!m) {
    m = new Map();
    invFreqCache.set(gpu, m);
  }
  const key = `${HS}:${theta}`;
  let t = m.get(key);
  if (!t) {
    t = gpu.upload(thetaInvFreq(HS, theta), [HS / 2], 'f32', `rope.inv_freq(${key})`);
    m.set(key, t);
  }
  return t;
}

/** rope_theta, or an inv_freq (HS/2) f32 tensor the caller built (for rope_scaling variants). */
export type RopeFreq = number | Tensor;

/** The inv_freq (HS/2) tensor of `freq`, checked (also for the fused RoPE of kernels/fused). */
export function invFreqOf(op: string, gpu: Gpu, HS: number, freq: RopeFreq): Tensor {
  if (typeof freq === 'number') {
    if (!(freq > 0)) shapeError(op, `rope theta must be positive, got ${freq}`);
    return invFreqTensor(gpu, HS, freq);
  }
  if (freq.dtype !== 'f32' || freq.shape.length !== 1 || freq.shape[0] !== HS / 2) {
    shapeError(op, `inv_freq must be (${HS / 2}) f32, got ${shapeStr(freq)}`);
  }
  return freq;
}

function rope(op: string, sign: 1 | -1, gpu: Gpu, qOut: Tensor, kOut: Tensor, q: Tensor, k: Tensor, pos: Tensor, freq: RopeFreq): void {
  if (q.dtype !== 'f32' || q.shape.length !== 4) shapeError(op, `q must be (B, T, NH, HS) f32, got ${shapeStr(q)}`);
  const [B, T, NH, HS] = q.shape;
  if (HS % 2 !== 0) shapeError(op, `head size must be even, got q ${shapeStr(q)}`);
  if (k.dtype !== 'f32' || k.shape.length !== 4 || k.shape[0] !== B || k.shape[1] !== T || k.shape[3] !== HS) {
    shapeError(op, `k must be (${B}, ${T}, NKV, ${HS}) f32 like q ${shapeStr(q)}, got ${shapeStr(k)}`);
  }
  const NKV = k.shape[2];
  for (const [name, out, src] of [
    ['q', qOut, q],
    ['k', kOut, k],
  ] as const) {
    if (out.dtype !== 'f32' || out.shape.length !== 4 || out.shape.some((d, i) => d !== src.shape[i])) {
      shapeError(op, `${name} output must be (${src.shape.join(', ')}) f32, got ${shapeStr(out)}`);
    }
  }
  const inplace = qOut.buffer === q.buffer;
  if (inplace !== (kOut.buffer === k.buffer)) shapeError(op, 'q and k must both be rotated in place or both out of place');
  if (!inplace && (qOut.buffer === k.buffer || kOut.buffer === q.buffer)) shapeError(op, 'outputs must not alias the other input');
  if (pos.dtype !== 'i32' || pos.shape.length !== 1 || pos.shape[0] !== B * T) {
    shapeError(op, `pos must be (${B * T}) i32 for q ${shapeStr(q)}, got ${shapeStr(pos)}`);
  }
  const invFreq = invFreqOf(op, gpu, HS, freq);
  const threads = B * T * (NH + NKV) * (HS / 2);
  ropeKernel.run(gpu, {
    program: inplace ? PROGRAMS.inplace : PROGRAMS.separate,
    bindings: inplace ? { pos, inv_freq: invFreq, qo: qOut, ko: kOut } : { pos, inv_freq: invFreq, qo: qOut, ko: kOut, qi: q, ki: k },
    uniforms: { BT: B * T, NH, NKV, HALF: HS / 2, sign },
    workgroups: grid1d(Math.ceil(threads / 256)),
  });
}

/**
 * qOut (B, T, NH, HS), kOut (B, T, NKV, HS) = q, k rotated by the angles of pos (B*T) i32. In place when
 * qOut is q and kOut is k. `freq` is rope_theta (inv_freq built as HF does) or an inv_freq (HS/2) tensor.
 */
export function ropeForward(gpu: Gpu, qOut: Tensor, kOut: Tensor, q: Tensor, k: Tensor, pos: Tensor, freq: RopeFreq): void {
  rope('ropeForward', 1, gpu, qOut, kOut, q, k, pos, freq);
}

/** dq, dk = the gradients dqOut, dkOut rotated back (inverse rotation); in place when dq is dqOut. */
export function ropeBackward(gpu: Gpu, dq: Tensor, dk: Tensor, dqOut: Tensor, dkOut: Tensor, pos: Tensor, freq: RopeFreq): void {
  rope('ropeBackward', -1, gpu, dq, dk, dqOut, dkOut, pos, freq);
}
