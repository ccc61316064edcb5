// A base matrix too large for one storage binding, held as row chunks of at most one binding each: the
// token embedding (V, C) and an untied LM head of a large vocabulary (Qwen2.5-0.5B's 151936 x 896 bf16 is
// 272 MB, over WebGPU's default 128 MiB binding and 256 MiB buffer). Chunks split the rows evenly, in
// order: chunk i holds rows [first_i, first_i + rows_i). Frozen weights only: a chunked matrix has no
// gradient (lm-head.ts's ops take it chunk by chunk).

import { shapeError } from '../gpu/errors.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { DTYPE_BYTES, type TensorView } from './safetensors.ts';

/** A matrix's row chunks in order (one chunk: the whole matrix). */
export type RowChunks = readonly Tensor[];

/**
 * Rows per chunk of a (rows, cols) matrix of `bytesPerElement` under a byte budget: as many chunks as the
 * budget needs, of equal size (the last one smaller), or rows when the whole fits. Null when not even one
 * row fits.
 */
export function chunkRows(rows: number, cols: number, bytesPerElement: number, budget: number): number | null {
  const rowBytes = cols * bytesPerElement;
  if (rows * rowBytes <= budget) return rows;
  const most = Math.floor(budget / rowBytes);
  if (most < 1) return null;
  return Math.ceil(rows / Math.ceil(rows / most));
}

/** The first row of each chunk, and the total. */
export function chunkStarts(chunks: RowChunks): { first: number[]; total: number } {
  const first: number[] = [];
  let total = 0;
  for (const t of chunks) {
    first.push(total);
    total += t.shape[0];
  }
  return { first, total };
}

/** Rows [start, start + count) of a 2-D tensor view (no copy). */
export function viewRows(v: TensorView, start: number, count: number): TensorView {
  const rowBytes = v.shape[1] * DTYPE_BYTES[v.dtype];
  return { dtype: v.dtype, shape: [count, v.shape[1]], data: v.data.subarray(start * rowBytes, (start + count) * rowBytes) };
}

/** The one tensor of a matrix that is not split (a weight gradient's, full-parameter training's). */
export function whole(chunks: RowChunks, what: string): Tensor {
  if (chunks.length !== 1) shapeError(what, `the matrix is split into ${chunks.length} row chunks, not whole`);
  return chunks[0];
}
