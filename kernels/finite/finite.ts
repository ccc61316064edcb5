// Launcher of the non-finite count (finite.wgsl): one dispatch that adds the NaN / ±Inf count of a tensor
// to one u32 slot of a flags tensor, so a caller can watch many tensors and read all the counts back with
// one small readback (src/model/finite-watch.ts).

import type { Gpu } from '../../src/gpu/gpu.ts';
import { shapeError } from '../../src/gpu/errors.ts';
import { type Tensor, numel, shapeStr } from '../../src/gpu/tensor.ts';
import { defineKernel } from '../program.ts';
import source from './finite.wgsl';

const finite = defineKernel({
  name: 'finite',
  bindings: ['x', 'flags', 'x1', 'x2', 'x3', 'x4', 'x5'],
  // more: the (n, slot) pairs of x1..x5, then 2 words of padding
  uniforms: { n: 'u32', slot: 'u32', stride: 'u32', _pad: 'u32', more: 'u32[12]' },
  entries: {
    count: ['x', 'flags'],
    countFew: ['x', 'flags'],
    countMany: ['x', 'flags', 'x1', 'x2', 'x3', 'x4', 'x5'],
    countManyFew: ['x', 'flags', 'x1', 'x2', 'x3', 'x4', 'x5'],
  },
});
const COUNT = finite.program('finite', () => source, 'count');
const COUNT_FEW = finite.program('finite:few', () => source, 'countFew');
const NO_MORE: readonly number[] = new Array<number>(12).fill(0);
/** Tensors one countMany dispatch counts (x, x1..x5: with the flags, 7 storage bindings of WebGPU's 8). */
export const MANY = 6;

/** finite.wgsl with the countMany entry points: the two loops once per tensor binding, then the entries. */
function manySource(): string {
  const name = (j: number) => (j === 0 ? 'x' : `x${j}`);
  const decls = Array.from({ length: MANY - 1 }, (_, j) => `@group(0) @binding(${j + 3}) var<storage, read> x${j + 1}: array<f32>;`);
  const loops = Array.from(
    { length: MANY },
    (_, j) => `
fn grid${j}(first: u32, n: u32) -> u32 {
  var c = 0u;
  for (var i = first; i < n; i += u.stride) { if (nonFinite(${name(j)}[i])) { c += 1u; } }
  return c;
}
fn few${j}(first: u32, n: u32) -> u32 {
  var c = 0u;
  let n4 = n / 4u;
  for (var q = first; q < n4; q += u.stride) {
    let i = 4u * q;
    c += bad4(vec4f(${name(j)}[i], ${name(j)}[i + 1u], ${name(j)}[i + 2u], ${name(j)}[i + 3u]));
  }
  let i = 4u * n4 + first;
  if (i < n && nonFinite(${name(j)}[i])) { c += 1u; }
  return c;
}`,
  );
  // tensor j's (n, slot): j = 0 in u.n / u.slot, j >= 1 in u.more[(j - 1) / 2], x/y for odd j, z/w for even
  const nSlot = (j: number): [string, string] => {
    if (j === 0) return ['u.n', 'u.slot'];
    const v = `u.more[${(j - 1) >> 1}]`;
    return (j - 1) % 2 === 0 ? [`${v}.x`, `${v}.y`] : [`${v}.z`, `${v}.w`];
  };
  const body = (kind: string) =>
    Array.from({ length: MANY }, (_, j) => `  addCount(${nSlot(j)[1]}, ${kind}${j}(g.x, ${nSlot(j)[0]}));`).join('\n');
  return `${source}\n${decls.join('\n')}\n${loops.join('\n')}

@compute @workgroup_size(256)
fn countMany(@builtin(global_invocation_id) g: vec3u) {
${body('grid')}
}

@compute @workgroup_size(64)
fn countManyFew(@builtin(global_invocation_id) g: vec3u) {
${body('few')}
}
`;
}
let manyCode: string | null = null;
const manyCodeOnce = (): string => (manyCode ??= manySource());
const COUNT_MANY = finite.program('finite:many', manyCodeOnce, 'countMany');
const COUNT_MANY_FEW = finite.program('finite:many', manyCodeOnce, 'countManyFew');
/** Workgroups of one dispatch at most: each thread strides, so a large tensor stays one dispatch. */
const MAX_GROUPS = 256;
/** The CPU form (countFew): workgroups of 64 threads, at most 16, each thread walking >= 256 values. */
const FEW = { threads: 64, maxGroups: 16, perThread: 256 } as const;

/**
 * 'grid': up to 256 workgroups of 256 (GPUs); 'few': 1 to 16 workgroups of 64 (CPU adapters, where every
 * invocation costs its start-up). Default: 'few' when Gpu.cpu.
 */
export type FinitePath = 'grid' | 'few';

function check(op: string, flags: Tensor, slot: number, x: Tensor): void {
  if (x.dtype !== 'f32') shapeError(op, `x must be f32, got ${shapeStr(x)}`);
  if (flags.dtype !== 'u32' || flags.shape.length !== 1) shapeError(op, `flags must be (K) u32, got ${shapeStr(flags)}`);
  if (!Number.isInteger(slot) || slot < 0 || slot >= flags.shape[0]) shapeError(op, `slot ${slot} is outside flags (${flags.shape[0]})`);
}

/**
 * flags[slot] += the number of non-finite values in x, for every (slot, x) of `items`, in one dispatch per
 * MANY tensors (a watch of an optimiser's state is three tensors a parameter: one dispatch each made the
 * watch the update's most frequent kernel). The counts equal countNonFinite's, one call per item.
 */
export function countNonFiniteMany(
  gpu: Gpu,
  flags: Tensor,
  items: ReadonlyArray<{ slot: number; x: Tensor }>,
  path: FinitePath = gpu.cpu ? 'few' : 'grid',
): void {
  for (const it of items) check('countNonFiniteMany', flags, it.slot, it.x);
  const todo = items.filter((it) => numel(it.x.shape) > 0);
  for (let at = 0; at < todo.length; at += MANY) {
    const part = todo.slice(at, at + MANY);
    const ns = part.map((it) => numel(it.x.shape));
    const most = Math.max(...ns);
    const ps = Array.from({ length: MANY }, (_, j) => (j < part.length ? [ns[j], part[j].slot] : [0, 0]));
    const threads =
      path === 'few'
        ? Math.min(FEW.maxGroups, Math.ceil(most / (FEW.threads * FEW.perThread))) * FEW.threads
        : Math.min(MAX_GROUPS, Math.ceil(most / 256)) * 256;
    const xs = Array.from({ length: MANY }, (_, j) => (j < part.length ? part[j].x : part[0].x)); // read-only: a repeat is allowed
    finite.run(gpu, {
      program: path === 'few' ? COUNT_MANY_FEW : COUNT_MANY,
      bindings: { x: xs[0], flags, x1: xs[1], x2: xs[2], x3: xs[3], x4: xs[4], x5: xs[5] },
      uniforms: { n: ps[0][0], slot: ps[0][1], stride: threads, more: [...ps.slice(1).flat(), 0, 0] },
      workgroups: [threads / (path === 'few' ? FEW.threads : 256), 1],
    });
  }
}

/** flags[slot] += the number of non-finite values in x (f32). */
export function countNonFinite(gpu: Gpu, flags: Tensor, slot: number, x: Tensor, path: FinitePath = gpu.cpu ? 'few' : 'grid'): void {
  check('countNonFinite', flags, slot, x);
  const n = numel(x.shape);
  if (n === 0) return;
  if (path === 'few') {
    const groups = Math.min(FEW.maxGroups, Math.ceil(n / (FEW.threads * FEW.perThread)));
    finite.run(gpu, {
      program: COUNT_FEW,
      bindings: { x, flags },
      uniforms: { n, slot, stride: groups * FEW.threads, more: NO_MORE },
      workgroups: [groups, 1],
    });
    return;
  }
  const groups = Math.min(MAX_GROUPS, Math.ceil(n / 256));
  finite.run(gpu, {
    program: COUNT,
    bindings: { x, flags },
    uniforms: { n, slot, stride: groups * 256, more: NO_MORE },
    workgroups: [groups, 1],
  });
}
