// The ops on the token embedding and the LM head, for a matrix whole or in row chunks (row-chunks.ts):
// the gather of token rows, the logits and their gradient to the hidden state. A chunk's logits are its
// columns of the (M, V) logits, written through an (M, rows) scratch; the gradient sums the chunks'
// products over the same columns of dlogits. A chunked matrix is frozen: it takes no weight gradient.
// Legend: M rows, C channels, V vocab.

import { copyColumns } from '../../kernels/columns/columns.ts';
import { embeddingForward } from '../../kernels/embedding/embedding.ts';
import { matmul, matmulBackward } from '../../kernels/matmul/matmul.ts';
import type { Gpu } from '../gpu/gpu.ts';
import { shapeError } from '../gpu/errors.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { type RowChunks, chunkStarts } from './row-chunks.ts';

/** x (N, C) = the embedding's rows at ids (N); ids outside it give zero rows. */
export function embedTokens(gpu: Gpu, x: Tensor, ids: Tensor, embed: RowChunks): void {
  if (embed.length === 1) return embeddingForward(gpu, x, ids, embed[0]);
  const { first, total } = chunkStarts(embed);
  embed.forEach((t, i) => embeddingForward(gpu, x, ids, t, { first: first[i], total }));
}

/** logits (M, V) = h (M, C) . head (V, C)^T. */
export function lmHeadForward(gpu: Gpu, logits: Tensor, h: Tensor, head: RowChunks): void {
  if (head.length === 1) {
    matmul(gpu, logits, h, head[0], { transB: true });
    return;
  }
  const { first } = chunkStarts(head);
  const M = h.shape[0];
  head.forEach((t, i) => {
    const part = gpu.tensor([M, t.shape[0]], 'f32', 'logits.chunk');
    matmul(gpu, part, h, t, { transB: true });
    copyColumns(gpu, logits, part, { srcCol: 0, dstCol: first[i], cols: t.shape[0] });
    gpu.release(part);
  });
}

/**
 * dh (M, C) = dlogits (M, V) . head (V, C), assigned; dHead (V, C) += dlogits^T . h where full-parameter
 * training asks for it (a whole head only).
 */
export function lmHeadBackward(gpu: Gpu, dh: Tensor, dHead: Tensor | null, dlogits: Tensor, h: Tensor, head: RowChunks): void {
  if (head.length === 1) {
    matmulBackward(gpu, dh, dHead, dlogits, h, head[0], { transB: true, accumulateDB: true });
    return;
  }
  if (dHead) shapeError('lmHeadBackward', `a head in ${head.length} row chunks is frozen: it takes no gradient`);
  const { first } = chunkStarts(head);
  const M = h.shape[0];
  head.forEach((t, i) => {
    const part = gpu.tensor([M, t.shape[0]], 'f32', 'dlogits.chunk');
    copyColumns(gpu, part, dlogits, { srcCol: first[i], dstCol: 0, cols: t.shape[0] });
    matmul(gpu, dh, part, t, { accumulate: i > 0 });
    gpu.release(part);
  });
}
