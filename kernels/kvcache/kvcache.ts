// Launcher for the KV-cache append used by generation.

import type { Gpu } from '../../src/gpu/context.ts';
import { shapeError } from '../../src/gpu/errors.ts';
import type { Program } from '../../src/gpu/program.ts';
import { type Tensor, shapeStr } from '../../src/gpu/tensor.ts';
import source from './kvcache.wgsl';

const APPEND: Program = { key: 'kvcache', code: () => source, entryPoint: 'append' };

/** cache (B, Tcap, ...W) [b, t0 + i] = src (B, Tq, ...W) [b, i]. */
export function kvAppend(gpu: Gpu, cache: Tensor, src: Tensor, t0: number): void {
  const op = 'kvAppend';
  const [B, Tq] = src.shape;
  const [Bc, Tcap] = cache.shape;
  const W = src.shape.slice(2).reduce((a, b) => a * b, 1);
  const Wc = cache.shape.slice(2).reduce((a, b) => a * b, 1);
  if (src.dtype !== 'f32' || cache.dtype !== 'f32' || src.shape.length < 3 || Bc !== B || Wc !== W) {
    shapeError(op, `src ${shapeStr(src)} and cache ${shapeStr(cache)} must be f32 (B, T, ...) with equal B and row size`);
  }
  if (!Number.isInteger(t0) || t0 < 0 || t0 + Tq > Tcap) shapeError(op, `positions ${t0}..${t0 + Tq} exceed the cache capacity ${Tcap}`);
  gpu.run({ program: APPEND, bindings: [src, cache], uniforms: [Tq, W, Tcap, t0], workgroups: [Math.ceil(W / 64), Tq, B] });
}
