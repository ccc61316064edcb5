// Launcher for the KV-cache append used by generation.

import type { Gpu } from '../../src/gpu/gpu.ts';
import { shapeError } from '../../src/gpu/errors.ts';
import { type Tensor, shapeStr } from '../../src/gpu/tensor.ts';
import { fillTemplate } from '../common.ts';
import { defineKernel } from '../program.ts';
import source from './kvcache.wgsl';

// Integer data is copied as u32 words: moving ids through f32 registers could flush them as denormals.
const kvcache = defineKernel({
  name: 'kvcache',
  bindings: ['src', 'cache', 't0buf'],
  uniforms: { Tq: 'u32', W: 'u32', Tcap: 'u32', t0: 'u32' },
  entries: { append: ['src', 'cache', 't0buf?'] },
});
const APPEND = (elem: 'f32' | 'u32', t0Gpu: boolean) =>
  kvcache.program(
    `kvcache:${elem}${t0Gpu ? ':t0gpu' : ''}`,
    () => fillTemplate(source, { ELEM: elem, T0: t0Gpu ? 'u32(t0buf[0])' : 'u.t0' }),
    'append',
  );
const PROGRAMS = { f32: [APPEND('f32', false), APPEND('f32', true)], u32: [APPEND('u32', false), APPEND('u32', true)] };

/**
 * cache (B, Tcap, ...W) [b, t0 + i] = src (B, Tq, ...W) [b, i]; with t0Gpu ((1) i32, e.g. KvCache.lengthGpu)
 * t0 is read there on the GPU (t0 is still given, for the checks), the same dispatch at every step.
 */
export function kvAppend(gpu: Gpu, cache: Tensor, src: Tensor, t0: number, t0Gpu?: Tensor): void {
  const op = 'kvAppend';
  const [B, Tq] = src.shape;
  const [Bc, Tcap] = cache.shape;
  const W = src.shape.slice(2).reduce((a, b) => a * b, 1);
  const Wc = cache.shape.slice(2).reduce((a, b) => a * b, 1);
  const is32 = (d: string) => d === 'f32' || d === 'i32' || d === 'u32';
  if (src.dtype !== cache.dtype || !is32(src.dtype) || src.shape.length < 3 || Bc !== B || Wc !== W) {
    shapeError(op, `src ${shapeStr(src)} and cache ${shapeStr(cache)} must be (B, T, ...) of one 32-bit dtype with equal B and row size`);
  }
  if (!Number.isInteger(t0) || t0 < 0 || t0 + Tq > Tcap) shapeError(op, `positions ${t0}..${t0 + Tq} exceed the cache capacity ${Tcap}`);
  if (t0Gpu && (t0Gpu.dtype !== 'i32' || t0Gpu.shape.length !== 1 || t0Gpu.shape[0] !== 1))
    shapeError(op, `t0Gpu must be (1) i32, got ${shapeStr(t0Gpu)}`);
  const program = PROGRAMS[src.dtype === 'f32' ? 'f32' : 'u32'][t0Gpu ? 1 : 0];
  kvcache.run(gpu, {
    program,
    bindings: { src, cache, t0buf: t0Gpu },
    uniforms: { Tq, W, Tcap, t0: t0Gpu ? 0 : t0 },
    workgroups: [Math.ceil(W / 64), Tq, B],
  });
}
