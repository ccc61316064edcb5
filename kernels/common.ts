// WGSL snippets shared by the kernels: reading weights stored as f32 or as 16-bit values packed two per
// u32 (bf16: the high half of an f32; f16: unpack2x16float), and the template substitution that puts them in.

import { shapeError } from '../src/gpu/errors.ts';
import type { Tensor } from '../src/gpu/tensor.ts';

export type WeightDType = 'f32' | 'bf16' | 'f16';

/** `fn <name>(i: u32) -> f32` reading element i of `buf` with the given storage dtype. */
export function loadFn(name: string, buf: string, dtype: WeightDType): string {
  if (dtype === 'f32') return `fn ${name}(i: u32) -> f32 { return ${buf}[i]; }`;
  if (dtype === 'bf16') {
    return `fn ${name}(i: u32) -> f32 { let w = ${buf}[i >> 1u]; return bitcast<f32>(select(w << 16u, w & 0xffff0000u, (i & 1u) == 1u)); }`;
  }
  return `fn ${name}(i: u32) -> f32 { let w = unpack2x16float(${buf}[i >> 1u]); return select(w.x, w.y, (i & 1u) == 1u); }`;
}

/**
 * Threads for a workgroup that reduces one row of n values: the power of two that gives each about
 * `perThread` values, at most 256. Idle lanes and extra tree levels are nearly free on a GPU but cost
 * real time on CPU implementations (SwiftShader runs every invocation, and every barrier).
 */
export const rowThreads = (n: number, perThread: number): number =>
  Math.min(256, 2 ** Math.ceil(Math.log2(Math.max(1, Math.ceil(n / perThread)))));

/** Replaces `$NAME` placeholders; throws on any left over, so a typo fails at pipeline build. */
export function fillTemplate(src: string, vars: Record<string, string>): string {
  const out = src.replace(/\$([A-Z_][A-Z0-9_]*)/g, (m, k: string) => (k in vars ? vars[k] : m));
  const left = out.match(/\$[A-Z_][A-Z0-9_]*/);
  if (left) throw new Error(`WGSL template: no value for ${left[0]}`);
  return out;
}

/** Throws when two of the named tensors share a buffer (a writable binding may not alias another). */
export function noAlias(op: string, named: Record<string, Tensor | null>): void {
  const seen = new Map<GPUBuffer, string>();
  for (const [name, t] of Object.entries(named)) {
    if (!t) continue;
    const other = seen.get(t.buffer);
    if (other) shapeError(op, `${name} and ${other} must be different buffers`);
    seen.set(t.buffer, name);
  }
}
