// Launchers for the embedding gather (forward) and its deterministic scatter-add (backward).

import type { Gpu } from '../../src/gpu/gpu.ts';
import { shapeError } from '../../src/gpu/errors.ts';
import { type Tensor, shapeStr } from '../../src/gpu/tensor.ts';
import { type WeightDType, fillTemplate, loadFn } from '../common.ts';
import { defineKernel } from '../program.ts';
import source from './embedding.wgsl';

const embedding = defineKernel({
  name: 'embedding',
  bindings: ['ids', 'weight', 'out', 'rows', 'starts', 'order', 'dout', 'dweight'],
  uniforms: { N: 'u32', C: 'u32', V: 'u32', R: 'u32', first: 'u32', total: 'u32' },
  entries: { forward: ['ids', 'weight', 'out'], backward: ['rows', 'starts', 'order', 'dout', 'dweight'] },
});
const program = embedding.variants((dtype: WeightDType) => ({
  key: `embedding:${dtype}`,
  code: () =>
    fillTemplate(source, {
      WEIGHT_DECL: `@group(0) @binding(2) var<storage, read> weight: array<${dtype === 'f32' ? 'f32' : 'u32'}>;`,
      UNPACK: loadFn('loadWeight', 'weight', dtype),
    }),
}));

/**
 * out (N, C) = weight (V, C) rows picked by ids (N). Out-of-range ids give zero rows. `part` says that weight
 * holds rows [first, first + V) of a (total, C) table split by rows: only the ids in its range are written
 * (and the out-of-table ones zeroed), so one call per part fills out.
 */
export function embeddingForward(gpu: Gpu, out: Tensor, ids: Tensor, weight: Tensor, part?: { first: number; total: number }): void {
  const op = 'embeddingForward';
  if (ids.dtype !== 'i32' || ids.shape.length !== 1) shapeError(op, `ids must be 1-D i32, got ${shapeStr(ids)}`);
  if (weight.shape.length !== 2 || weight.dtype === 'i32' || weight.dtype === 'u32')
    shapeError(op, `weight must be (V, C) f32/bf16/f16, got ${shapeStr(weight)}`);
  const [N] = ids.shape;
  const [V, C] = weight.shape;
  if (out.dtype !== 'f32' || out.shape[0] !== N || out.shape[1] !== C || out.shape.length !== 2) {
    shapeError(op, `out must be (${N}, ${C}) f32, got ${shapeStr(out)}`);
  }
  const { first, total } = part ?? { first: 0, total: V };
  if (first < 0 || first + V > total) shapeError(op, `rows [${first}, ${first + V}) lie outside a table of ${total} rows`);
  embedding.run(gpu, {
    program: program('forward', weight.dtype),
    bindings: { ids, weight, out },
    uniforms: { N, C, V, R: 0, first, total },
    workgroups: [Math.ceil(C / 64), N],
  });
}

/** Groups token positions by row (CSR), on the CPU where the batch's ids already are. */
export function groupByRow(ids: Int32Array, V: number): { rows: Int32Array; starts: Int32Array; order: Int32Array } {
  const byRow = new Map<number, number[]>();
  ids.forEach((v, n) => {
    if (v < 0 || v >= V) return;
    const list = byRow.get(v);
    if (list) list.push(n);
    else byRow.set(v, [n]);
  });
  const rows = Int32Array.from([...byRow.keys()].sort((a, b) => a - b));
  const starts = new Int32Array(rows.length + 1);
  const order: number[] = [];
  rows.forEach((v, r) => {
    order.push(...byRow.get(v)!);
    starts[r + 1] = order.length;
  });
  return { rows, starts, order: Int32Array.from(order) };
}

/**
 * dweight (V, C) += scatter of dout (N, C) by ids. Takes the ids on the CPU (the caller built the batch),
 * so the sum over repeated tokens runs in a fixed order: the result is bitwise reproducible.
 */
export function embeddingBackward(gpu: Gpu, dweight: Tensor, dout: Tensor, idsHost: Int32Array): void {
  const op = 'embeddingBackward';
  const [V, C] = dweight.shape;
  const N = idsHost.length;
  if (dweight.dtype !== 'f32' || dweight.shape.length !== 2) shapeError(op, `dweight must be (V, C) f32, got ${shapeStr(dweight)}`);
  if (dout.dtype !== 'f32' || dout.shape.length !== 2 || dout.shape[0] !== N || dout.shape[1] !== C) {
    shapeError(op, `dout must be (${N}, ${C}) f32 for ${N} ids, got ${shapeStr(dout)}`);
  }
  const { rows, starts, order } = groupByRow(idsHost, V);
  if (rows.length === 0) return;
  const tRows = gpu.upload(rows, [rows.length], 'i32', 'embedding.rows');
  const tStarts = gpu.upload(starts, [starts.length], 'i32', 'embedding.starts');
  const tOrder = gpu.upload(order, [order.length], 'i32', 'embedding.order');
  embedding.run(gpu, {
    program: program('backward', 'f32'),
    bindings: { rows: tRows, starts: tStarts, order: tOrder, dout, dweight },
    uniforms: { N, C, V, R: rows.length, first: 0, total: V },
    workgroups: [Math.ceil(C / 64), rows.length],
  });
  // Back to the pool once this submit is recorded: later writes to these buffers are ordered after it.
  gpu.release(tRows, tStarts, tOrder);
}
