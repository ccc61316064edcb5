// The heads that training puts on the decoder's outputs, shared by MARFT (policy log-probs, entropy, the
// critic's rows) and pretraining (next-token NLL): the fused log-softmax head over logits rows, forward and
// backward, and a gather of chosen rows of a (R, C) tensor (e.g. the hidden states the critic reads) with
// its backward (the critic LoRA's gradient on those hidden states, back into the decoder's (N, C)).
// Legend: N rows, V vocab, C channels, R rows gathered.

import { embeddingBackward, embeddingForward } from '../../kernels/embedding/embedding.ts';
import { logprobsBackward, logprobsForward } from '../../kernels/logprobs/logprobs.ts';
import type { Gpu } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';

/** The head's outputs over N logits rows, each (N) f32; lse (and entropy) are kept for the backward. */
export interface TokenLogprobs {
  /** log softmax(logits)[target] per row; 0 where the target is -1 (prompt, padding). */
  logp: Tensor;
  /** -sum p log p per row; 0 where the target is -1. */
  entropy: Tensor;
  lse: Tensor;
  /** (N) i32 the targets the head was run with (the caller's tensor). */
  targets: Tensor;
  label: string;
}

/** Runs the head on logits (N, V) for targets (N) i32 (-1 = no target); `label` names its tensors. */
export function tokenLogprobs(gpu: Gpu, logits: Tensor, targets: Tensor, label: string): TokenLogprobs {
  const N = logits.shape[0];
  const h = {
    logp: gpu.tensor([N], 'f32', `${label}.logp`),
    entropy: gpu.tensor([N], 'f32', `${label}.entropy`),
    lse: gpu.tensor([N], 'f32', `${label}.lse`),
    targets, label,
  };
  logprobsForward(gpu, h.logp, h.entropy, h.lse, logits, targets);
  return h;
}

/**
 * Backpropagates the per-row gradients of a loss with respect to logp and entropy (dentropy null: the loss
 * has no entropy term) into the logits, overwriting them with dlogits (N, V) (assigned, no new (N, V) buffer).
 */
export function tokenLogprobsBackward(gpu: Gpu, h: TokenLogprobs, logits: Tensor, dlogp: Float32Array, dentropy: Float32Array | null): void {
  const N = logits.shape[0];
  const dl = gpu.upload(dlogp, [N], 'f32', `${h.label}.dlogp`);
  const de = dentropy && gpu.upload(dentropy, [N], 'f32', `${h.label}.dentropy`);
  logprobsBackward(gpu, logits, dl, de, logits, h.targets, h.entropy, h.lse, { inPlace: true });
  gpu.release(dl, de ?? undefined);
}

/** Releases logp, entropy and lse (not the caller's targets). */
export function releaseTokenLogprobs(gpu: Gpu, h: TokenLogprobs): void {
  gpu.release(h.logp, h.entropy, h.lse);
}

/** out (R, C) = rows `rows` of table (N, C), on the GPU (the embedding gather with `table` as the table). */
export function selectRows(gpu: Gpu, table: Tensor, rows: ArrayLike<number>, label: string): Tensor {
  const ids = gpu.upload(rows, [rows.length], 'i32', `${label}.rows`);
  const out = gpu.tensor([rows.length, table.shape[1]], 'f32', label);
  embeddingForward(gpu, out, ids, table);
  gpu.release(ids);
  return out;
}

/** dtable (N, C) += drows (R, C) at rows `rows`: selectRows' backward (the embedding scatter-add). */
export function selectRowsBackward(gpu: Gpu, dtable: Tensor, drows: Tensor, rows: ArrayLike<number>): void {
  embeddingBackward(gpu, dtable, drows, Int32Array.from(rows));
}
