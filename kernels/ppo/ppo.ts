// Launchers for the clipped PPO policy loss (ppo.wgsl) over one micro-batch of log-prob head rows: token
// level (a unit per row) and action level (a unit per action, a span of rows). Each writes dlogp and
// dentropy (N) for the head's backward and adds the micro-batch's sums into `sums` (8), so the caller
// reads one small tensor per minibatch instead of the log-probs of every micro-batch.

import type { Gpu } from '../../src/gpu/gpu.ts';
import { shapeError } from '../../src/gpu/errors.ts';
import { type Tensor, shapeStr } from '../../src/gpu/tensor.ts';
import { fillTemplate, noAlias, rowThreads } from '../common.ts';
import { type EntryOf, defineKernel } from '../program.ts';
import source from './ppo.wgsl';

const ppo = defineKernel({
  name: 'ppo',
  bindings: ['logp', 'entropy', 'tok', 'spans', 'acts', 'dlogp', 'dentropy', 'sums'],
  uniforms: {
    N: 'u32',
    A: 'u32',
    clip: 'f32',
    entropyCoef: 'f32',
    klCoef: 'f32',
    invZ: 'f32',
    k3: 'u32',
    hasRef: 'u32',
    nanBits: 'u32',
  },
  entries: {
    token: ['logp', 'entropy', 'tok', 'dlogp', 'dentropy', 'sums'],
    action: ['logp', 'entropy', 'tok', 'spans', 'acts', 'dlogp', 'dentropy', 'sums'],
  },
});
const program = ppo.variants((wg: number) => ({ key: `ppo:wg${wg}`, code: () => fillTemplate(source, { WG: String(wg) }) }));
/**
 * Threads of the one workgroup, 256 at most (fewer on small batches: CPU adapters run every idle lane):
 * token level about 32 rows each; action level one per action (each walks its action's rows twice).
 */
const threads = (entry: EntryOf<typeof ppo>, units: number): number => rowThreads(units, entry === 'token' ? 32 : 1);

/** The slots of `sums`, in order (see ppo.wgsl). */
export const PPO_SUMS = ['loss', 'surrogate', 'entropy', 'kl', 'approxKl', 'approxKlK1', 'clipped', 'count'] as const;

export interface PpoLossOptions {
  /** PPO's epsilon: the ratio is clipped to [1 - clip, 1 + clip]. */
  clip: number;
  entropyCoef: number;
  /** The KL penalty's coefficient in the loss (0: the KL is only measured, when withRef). */
  klCoef: number;
  klEstimator: 'k1' | 'k3';
  /** Whether tok's ref column holds reference log-probs (KL measured and penalised); else kl = 0. */
  withRef: boolean;
  /** Z, the mean's denominator (the whole minibatch's unit count when it is split into micro-batches). */
  normalizer: number;
}

function expectShape(op: string, name: string, t: Tensor, want: number[], dtype = 'f32'): void {
  if (t.dtype !== dtype || t.shape.length !== want.length || want.some((d, i) => t.shape[i] !== d)) {
    shapeError(op, `${name} must be (${want.join(', ')}) ${dtype}, got ${shapeStr(t)}`);
  }
}

function checkCommon(
  op: string,
  dlogp: Tensor,
  dentropy: Tensor,
  sums: Tensor,
  logp: Tensor,
  entropy: Tensor,
  tok: Tensor,
  o: PpoLossOptions,
): number {
  if (logp.dtype !== 'f32' || logp.shape.length !== 1) shapeError(op, `logp must be (N) f32, got ${shapeStr(logp)}`);
  const N = logp.shape[0];
  expectShape(op, 'entropy', entropy, [N]);
  expectShape(op, 'tok (old, ref, adv, mask per row)', tok, [N, 4]);
  expectShape(op, 'dlogp', dlogp, [N]);
  expectShape(op, 'dentropy', dentropy, [N]);
  expectShape(op, 'sums', sums, [PPO_SUMS.length]);
  if (!(o.clip > 0)) shapeError(op, `clip must be > 0, got ${o.clip}`);
  if (!(o.normalizer > 0)) shapeError(op, `normalizer must be > 0, got ${o.normalizer}`);
  return N;
}

const uniforms = (N: number, A: number, o: PpoLossOptions) => ({
  N,
  A,
  clip: o.clip,
  entropyCoef: o.entropyCoef,
  klCoef: o.klCoef,
  invZ: 1 / o.normalizer,
  k3: o.klEstimator === 'k3' ? 1 : 0,
  hasRef: o.withRef ? 1 : 0,
  nanBits: 0x7fc00000,
});

/**
 * Token level: a unit per row. logp, entropy (N) the head's outputs; tok (N, 4) = (old, ref, adv, mask) per
 * row. dlogp, dentropy (N) written (=); sums (8) += the micro-batch's sums (PPO_SUMS).
 */
export function ppoTokenLoss(
  gpu: Gpu,
  dlogp: Tensor,
  dentropy: Tensor,
  sums: Tensor,
  logp: Tensor,
  entropy: Tensor,
  tok: Tensor,
  o: PpoLossOptions,
): void {
  const op = 'ppoTokenLoss';
  const N = checkCommon(op, dlogp, dentropy, sums, logp, entropy, tok, o);
  noAlias(op, { dlogp, dentropy, sums, logp, entropy, tok });
  const wg = threads('token', N);
  ppo.run(gpu, {
    program: program('token', wg),
    bindings: { logp, entropy, tok, dlogp, dentropy, sums },
    uniforms: uniforms(N, 0, o),
    workgroups: [1],
  });
}

/**
 * Action level: a unit per action. spans (A, 2) i32 = (first row, row count) of each action, disjoint;
 * acts (A, 4) = (advantage, scale, mask, unused), scale = 1, 1/tokens or 1/words (the log-prob
 * normalisation); tok as ppoTokenLoss's (old and ref columns read). Rows outside the actions get 0.
 */
export function ppoActionLoss(
  gpu: Gpu,
  dlogp: Tensor,
  dentropy: Tensor,
  sums: Tensor,
  logp: Tensor,
  entropy: Tensor,
  tok: Tensor,
  spans: Tensor,
  acts: Tensor,
  o: PpoLossOptions,
): void {
  const op = 'ppoActionLoss';
  const N = checkCommon(op, dlogp, dentropy, sums, logp, entropy, tok, o);
  if (spans.dtype !== 'i32' || spans.shape.length !== 2 || spans.shape[1] !== 2)
    shapeError(op, `spans must be (A, 2) i32, got ${shapeStr(spans)}`);
  const A = spans.shape[0];
  expectShape(op, 'acts (adv, scale, mask, -)', acts, [A, 4]);
  noAlias(op, { dlogp, dentropy, sums, logp, entropy, tok, spans, acts });
  const wg = threads('action', A);
  ppo.run(gpu, {
    program: program('action', wg),
    bindings: { logp, entropy, tok, spans, acts, dlogp, dentropy, sums },
    uniforms: uniforms(N, A, o),
    workgroups: [1],
  });
}
