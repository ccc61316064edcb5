// The heads that training puts on the decoder's outputs, shared by MARFT (policy log-probs, entropy, the
// critic's rows) and pretraining (next-token NLL): the fused log-softmax head over logits rows, forward and
// backward; the clipped policy loss on the head's rows (kernels/ppo), whose per-row gradients feed the
// head's backward on the GPU and whose sums accumulate there over a minibatch's micro-batches; and a gather
// of chosen rows of a (R, C) tensor (e.g. the hidden states the critic reads) with its backward (the critic
// LoRA's gradient on those hidden states, back into the decoder's (N, C)).
// Legend: N rows, V vocab, C channels, R rows gathered, A actions (one per batch row).

import { embeddingBackward, embeddingForward } from '../../kernels/embedding/embedding.ts';
import { logprobsBackward, logprobsForward } from '../../kernels/logprobs/logprobs.ts';
import { PPO_SUMS, type PpoLossOptions, ppoActionLoss, ppoTokenLoss } from '../../kernels/ppo/ppo.ts';
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
    targets,
    label,
  };
  logprobsForward(gpu, h.logp, h.entropy, h.lse, logits, targets);
  return h;
}

/**
 * Backpropagates the per-row gradients of a loss with respect to logp and entropy (dentropy null: the loss
 * has no entropy term) into the logits, overwriting them with dlogits (N, V) (assigned, no new (N, V) buffer).
 * The gradients are (N) arrays (uploaded here) or (N) f32 tensors already on the GPU (e.g. policyLoss's).
 */
export function tokenLogprobsBackward(
  gpu: Gpu,
  h: TokenLogprobs,
  logits: Tensor,
  dlogp: Float32Array | Tensor,
  dentropy: Float32Array | Tensor | null,
): void {
  const N = logits.shape[0];
  const onGpu = (x: Float32Array | Tensor, name: string): [Tensor, boolean] =>
    x instanceof Float32Array ? [gpu.upload(x, [N], 'f32', `${h.label}.${name}`), true] : [x, false];
  const [dl, ownDl] = onGpu(dlogp, 'dlogp');
  const [de, ownDe] = dentropy ? onGpu(dentropy, 'dentropy') : [null, false];
  logprobsBackward(gpu, logits, dl, de, logits, h.targets, h.entropy, h.lse, { inPlace: true });
  gpu.release(ownDl ? dl : undefined, ownDe && de ? de : undefined);
}

/** The clipped policy loss's options (kernels/ppo: clip, entropy and KL coefficients, estimator, normaliser Z). */
export type PolicyLossOptions = PpoLossOptions;

/**
 * What the policy loss reads per row of the head, known before the forward: rows (N, 4) f32 = (behaviour
 * log-prob, reference log-prob, advantage, mask); at action level also spans (A, 2) i32 = (first row, row
 * count) and actions (A, 4) f32 = (advantage, log-prob scale 1 / 1/tokens / 1/words, mask, unused), the rows'
 * advantage and mask columns then unused.
 */
export interface PolicyLossRows {
  rows: Tensor;
  actions?: { spans: Tensor; acts: Tensor };
}

/** A minibatch's policy-loss sums (PPO_SUMS), zeroed, for policyLoss to add into and the caller to read once. */
export function policyLossSums(gpu: Gpu, label: string): Tensor {
  return gpu.zeros([PPO_SUMS.length], 'f32', `${label}.sums`);
}

/**
 * The sums read back, by name: loss, surrogate, entropy, kl are already divided by Z; approxKl (k3),
 * approxKlK1, clipped and count are raw sums over the units (divide by the unit count for a mean).
 */
export function namePolicySums(x: ArrayLike<number>): Record<(typeof PPO_SUMS)[number], number> {
  return Object.fromEntries(PPO_SUMS.map((k, i) => [k, x[i]])) as Record<(typeof PPO_SUMS)[number], number>;
}

/**
 * The clipped PPO loss on the head's rows (token level, or action level with `r.actions`): adds its sums
 * into `sums` and returns dlogp and dentropy (N) for tokenLogprobsBackward (the caller releases them).
 */
export function policyLoss(
  gpu: Gpu,
  sums: Tensor,
  h: TokenLogprobs,
  r: PolicyLossRows,
  o: PolicyLossOptions,
): { dlogp: Tensor; dentropy: Tensor } {
  const N = h.logp.shape[0];
  const d = { dlogp: gpu.tensor([N], 'f32', `${h.label}.dlogp`), dentropy: gpu.tensor([N], 'f32', `${h.label}.dentropy`) };
  if (r.actions) ppoActionLoss(gpu, d.dlogp, d.dentropy, sums, h.logp, h.entropy, r.rows, r.actions.spans, r.actions.acts, o);
  else ppoTokenLoss(gpu, d.dlogp, d.dentropy, sums, h.logp, h.entropy, r.rows, o);
  return d;
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
