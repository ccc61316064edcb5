// Launchers for deterministic reductions: sum, mean, max, sum of squares over a whole tensor (or a list
// of tensors, as adamw's global gradient norm needs), per row of (N, C), per slot of a list of slot-major
// (S, ...) tensors (adamw's per-agent gradient norms), and the masked mean.
// Flat reductions run in passes of 4096-element segments; the partials live in two scratch buffers kept
// per device (never returned to the pool, so a later upload cannot overwrite them before the passes run).

import type { Gpu } from '../../src/gpu/gpu.ts';
import { shapeError } from '../../src/gpu/errors.ts';
import { grid1d } from '../../src/gpu/program.ts';
import { type Tensor, numel, shapeStr } from '../../src/gpu/tensor.ts';
import { fillTemplate } from '../common.ts';
import { defineKernel } from '../program.ts';
import source from './reduce.wgsl';

export type ReduceOp = 'sum' | 'mean' | 'max' | 'sumsq';
/**
 * 'tree': a workgroup of 256 per segment, a barrier tree in workgroup memory (GPUs); 'one': one thread per
 * segment, no barrier (CPU adapters: the default when Gpu.cpu).
 */
export type ReducePath = 'tree' | 'one';
const defaultPath = (gpu: Gpu): ReducePath => (gpu.cpu ? 'one' : 'tree');

/** Elements per segment of a flat pass (one workgroup each). */
export const REDUCE_SEGMENT = 4096;

type Load = 'sum' | 'sumsq' | 'max' | 'masked' | 'pairs';
type Store = 'value' | 'pair' | 'ratio';

const LOADS: Record<Load, { load: string; combine: string; identity: string }> = {
  sum: { load: 'return vec2<f32>(x[i], 0.0);', combine: 'return a + b;', identity: 'vec2<f32>(0.0)' },
  sumsq: {
    load: 'let v = x[i]; return vec2<f32>(select(posInf(), v * v, isFinite(v)), 0.0);',
    combine: 'return a + b;',
    identity: 'vec2<f32>(0.0)',
  },
  max: { load: 'return vec2<f32>(x[i], 0.0);', combine: 'return vec2<f32>(max(a.x, b.x), 0.0);', identity: 'vec2<f32>(negInf(), 0.0)' },
  masked: { load: 'let w = mask[i]; return vec2<f32>(x[i] * w, w);', combine: 'return a + b;', identity: 'vec2<f32>(0.0)' },
  pairs: { load: 'return vec2<f32>(x[2u * i], x[2u * i + 1u]);', combine: 'return a + b;', identity: 'vec2<f32>(0.0)' },
};

const STORES: Record<Store, string> = {
  value: 'out[o] = acc.x * u.scale;',
  pair: 'out[2u * o] = acc.x; out[2u * o + 1u] = acc.y;',
  ratio: 'out[o] = select(0.0, acc.x / acc.y, acc.y != 0.0);',
};

const reduce = defineKernel({
  name: 'reduce',
  bindings: ['x', 'mask', 'out'],
  uniforms: {
    segLen: 'u32',
    nSeg: 'u32',
    rowLen: 'u32',
    segsPerRow: 'u32',
    inOffset: 'u32',
    outOffset: 'u32',
    outRowStride: 'u32',
    scale: 'f32',
    posInfBits: 'u32',
    negInfBits: 'u32',
  },
  entries: { reduce: ['x', 'mask?', 'out'], reduceOne: ['x', 'mask?', 'out'] },
});
const reduceProgram = reduce.variants((load: Load, store: Store) => {
  const l = LOADS[load];
  return {
    key: `reduce:${load}:${store}`,
    code: () => fillTemplate(source, { LOAD: l.load, COMBINE: l.combine, IDENTITY: l.identity, STORE: STORES[store] }),
  };
});

/** One pass: `rows` rows of rowLen elements from inOffset, each cut into segments of segLen (see reduce.wgsl). */
interface Pass {
  load: Load;
  store: Store;
  x: Tensor;
  mask?: Tensor;
  inOffset: number;
  rows: number;
  rowLen: number;
  segLen: number;
  out: Tensor;
  outOffset: number;
  /** Distance in out between two rows' results (0 for one row). */
  outRowStride: number;
  scale?: number;
  path: ReducePath;
}

function runPass(gpu: Gpu, p: Pass): void {
  const segsPerRow = Math.ceil(p.rowLen / p.segLen);
  const nSeg = p.rows * segsPerRow;
  reduce.run(gpu, {
    program: reduceProgram(p.path === 'one' ? 'reduceOne' : 'reduce', p.load, p.store),
    bindings: { x: p.x, mask: p.mask, out: p.out },
    uniforms: {
      segLen: p.segLen,
      nSeg,
      rowLen: p.rowLen,
      segsPerRow,
      inOffset: p.inOffset,
      outOffset: p.outOffset,
      outRowStride: p.outRowStride,
      scale: p.scale ?? 1,
      posInfBits: 0x7f800000,
      negInfBits: 0xff800000,
    },
    workgroups: grid1d(p.path === 'one' ? Math.ceil(nSeg / 16) : nSeg),
  });
}

const scratches = new WeakMap<Gpu, Tensor[]>();

/** Scratch buffer `which` (0 or 1) of at least `words` f32, grown by doubling; the old one is left to the GC. */
function scratch(gpu: Gpu, which: 0 | 1, words: number): Tensor {
  let pair = scratches.get(gpu);
  if (!pair) {
    pair = [];
    scratches.set(gpu, pair);
  }
  const t = pair[which];
  if (t && numel(t.shape) >= words) return t;
  const size = Math.max(words, 2 * (t ? numel(t.shape) : 256));
  const fresh = gpu.tensor([size], 'f32', `reduce.scratch${which}`);
  pair[which] = { ...fresh, pooled: false };
  return pair[which];
}

function checkF32(op: string, name: string, t: Tensor): void {
  if (t.dtype !== 'f32') shapeError(op, `${name} must be f32, got ${shapeStr(t)}`);
  if (numel(t.shape) === 0) shapeError(op, `${name} is empty: ${shapeStr(t)}`);
}

function checkOut(op: string, out: Tensor, offset: number): void {
  if (out.dtype !== 'f32' || !Number.isInteger(offset) || offset < 0 || offset >= numel(out.shape)) {
    shapeError(op, `out must be f32 with an element at offset ${offset}, got ${shapeStr(out)}`);
  }
}

/**
 * out[outOffset + r*outStride] = op over row r of every tensor in xs, each read as R equal rows (R = 1: one
 * value for the whole list). Each row's first pass writes its partials into a slot-major scratch row, later
 * passes reduce each row of partials; for R = 1 this is exactly the flat reduction.
 */
function reduceListInto(
  gpu: Gpu,
  name: string,
  out: Tensor,
  outOffset: number,
  outStride: number,
  xs: readonly Tensor[],
  op: ReduceOp,
  R: number,
  masks: readonly Tensor[] | undefined,
  path: ReducePath,
): void {
  if (xs.length === 0) shapeError(name, 'no input tensors');
  if (!Number.isInteger(R) || R < 1) shapeError(name, `rows must be a positive integer, got ${R}`);
  checkOut(name, out, outOffset + (R - 1) * outStride);
  xs.forEach((x, i) => {
    checkF32(name, `x[${i}]`, x);
    if (x.buffer === out.buffer) shapeError(name, `x[${i}] and out are the same buffer`);
    if (numel(x.shape) % R !== 0) shapeError(name, `x[${i}] ${shapeStr(x)} does not split into ${R} equal rows`);
  });
  if (masks) {
    if (masks.length !== xs.length) shapeError(name, `${masks.length} masks for ${xs.length} tensors`);
    masks.forEach((m, i) => {
      if (m.dtype !== 'f32' || numel(m.shape) !== numel(xs[i].shape)) {
        shapeError(name, `mask must match values ${shapeStr(xs[i])} with f32, got ${shapeStr(m)}`);
      }
    });
  }
  const rowLens = xs.map((x) => numel(x.shape) / R);
  const total = rowLens.reduce((a, n) => a + n, 0);
  const first: Load = masks ? 'masked' : op === 'mean' ? 'sum' : op;
  const later: Load = masks ? 'pairs' : op === 'max' ? 'max' : 'sum';
  const finalStore: Store = masks ? 'ratio' : 'value';
  const midStore: Store = masks ? 'pair' : 'value';
  const width = masks ? 2 : 1;
  const scale = op === 'mean' && !masks ? 1 / total : 1;
  const S = REDUCE_SEGMENT;
  const final = { store: finalStore, rows: R, segLen: S, out, outOffset, outRowStride: outStride, scale, path };

  if (xs.length === 1 && total <= S) {
    runPass(gpu, { ...final, load: first, x: xs[0], mask: masks?.[0], inOffset: 0, rowLen: total });
    return;
  }
  let P = rowLens.reduce((a, n) => a + Math.ceil(n / S), 0); // partials per row
  let src = scratch(gpu, 0, R * P * width);
  let off = 0;
  xs.forEach((x, i) => {
    runPass(gpu, {
      load: first,
      store: midStore,
      x,
      mask: masks?.[i],
      inOffset: 0,
      rows: R,
      rowLen: rowLens[i],
      segLen: S,
      out: src,
      outOffset: off,
      outRowStride: P,
      path,
    });
    off += Math.ceil(rowLens[i] / S);
  });
  let which: 0 | 1 = 0;
  while (P > S) {
    const next = Math.ceil(P / S);
    which = which === 0 ? 1 : 0;
    const dst = scratch(gpu, which, R * next * width);
    runPass(gpu, {
      load: later,
      store: midStore,
      x: src,
      inOffset: 0,
      rows: R,
      rowLen: P,
      segLen: S,
      out: dst,
      outOffset: 0,
      outRowStride: next,
      path,
    });
    src = dst;
    P = next;
  }
  runPass(gpu, { ...final, load: later, x: src, inOffset: 0, rowLen: P });
}

/**
 * out[outOffset] = op over every element of every tensor in xs (one value for the whole list). mean
 * divides by the total element count. No readback.
 */
export function reduceAllInto(
  gpu: Gpu,
  out: Tensor,
  outOffset: number,
  xs: readonly Tensor[],
  op: ReduceOp,
  masks?: readonly Tensor[],
  path = defaultPath(gpu),
): void {
  reduceListInto(gpu, masks ? 'maskedMean' : 'reduceAll', out, outOffset, 0, xs, op, 1, masks, path);
}

/**
 * Per slot of slot-major tensors: out[outOffset + s*outStride] = op over slot s of every tensor in xs, each
 * (S, ...) with its slots contiguous (e.g. the sum of squares of one agent's gradients, for per-agent
 * clipping). S = 1 gives exactly reduceAllInto's value. No readback.
 */
export function reduceSlotsInto(
  gpu: Gpu,
  out: Tensor,
  outOffset: number,
  outStride: number,
  xs: readonly Tensor[],
  op: ReduceOp,
  slots: number,
  path = defaultPath(gpu),
): void {
  reduceListInto(gpu, 'reduceSlots', out, outOffset, outStride, xs, op, slots, undefined, path);
}

/** out (1) f32 = op over all elements of x. */
export function reduceAll(gpu: Gpu, out: Tensor, x: Tensor, op: ReduceOp, path = defaultPath(gpu)): void {
  if (out.dtype !== 'f32' || numel(out.shape) !== 1) shapeError('reduceAll', `out must be (1) f32, got ${shapeStr(out)}`);
  reduceAllInto(gpu, out, 0, [x], op, undefined, path);
}

/** out (N) f32 = op over each row of x (N, C) f32. */
export function reduceRows(gpu: Gpu, out: Tensor, x: Tensor, op: ReduceOp, path = defaultPath(gpu)): void {
  const name = 'reduceRows';
  if (x.dtype !== 'f32' || x.shape.length !== 2) shapeError(name, `x must be (N, C) f32, got ${shapeStr(x)}`);
  const [N, C] = x.shape;
  if (N === 0 || C === 0) shapeError(name, `x is empty: ${shapeStr(x)}`);
  if (out.dtype !== 'f32' || out.shape.length !== 1 || out.shape[0] !== N) shapeError(name, `out must be (${N}) f32, got ${shapeStr(out)}`);
  const load: Load = op === 'mean' ? 'sum' : op;
  runPass(gpu, {
    load,
    store: 'value',
    x,
    inOffset: 0,
    rows: N,
    rowLen: C,
    segLen: C,
    out,
    outOffset: 0,
    outRowStride: 1,
    scale: op === 'mean' ? 1 / C : 1,
    path,
  });
}

/** out (1) f32 = sum(values * mask) / sum(mask), 0 when the mask sums to 0. values and mask (N) f32. */
export function maskedMean(gpu: Gpu, out: Tensor, values: Tensor, mask: Tensor, path = defaultPath(gpu)): void {
  const name = 'maskedMean';
  if (out.dtype !== 'f32' || numel(out.shape) !== 1) shapeError(name, `out must be (1) f32, got ${shapeStr(out)}`);
  if (values.shape.length !== 1 || values.dtype !== 'f32') shapeError(name, `values must be (N) f32, got ${shapeStr(values)}`);
  if (mask.dtype !== 'f32' || mask.shape.length !== 1 || mask.shape[0] !== values.shape[0]) {
    shapeError(name, `mask must be (${values.shape[0]}) f32, got ${shapeStr(mask)}`);
  }
  reduceAllInto(gpu, out, 0, [values], 'mean', [mask], path);
}

/** out (N) f32 = per row sum(values * mask) / sum(mask) (0 for an all-zero mask row); values, mask (N, C) f32. */
export function maskedMeanRows(gpu: Gpu, out: Tensor, values: Tensor, mask: Tensor, path = defaultPath(gpu)): void {
  const name = 'maskedMeanRows';
  if (values.dtype !== 'f32' || values.shape.length !== 2) shapeError(name, `values must be (N, C) f32, got ${shapeStr(values)}`);
  const [N, C] = values.shape;
  if (N === 0 || C === 0) shapeError(name, `values is empty: ${shapeStr(values)}`);
  if (mask.dtype !== 'f32' || mask.shape.length !== 2 || mask.shape[0] !== N || mask.shape[1] !== C) {
    shapeError(name, `mask must be (${N}, ${C}) f32, got ${shapeStr(mask)}`);
  }
  if (out.dtype !== 'f32' || out.shape.length !== 1 || out.shape[0] !== N) shapeError(name, `out must be (${N}) f32, got ${shapeStr(out)}`);
  runPass(gpu, {
    load: 'masked',
    store: 'ratio',
    x: values,
    mask,
    inOffset: 0,
    rows: N,
    rowLen: C,
    segLen: C,
    out,
    outOffset: 0,
    outRowStride: 1,
    path,
  });
}
