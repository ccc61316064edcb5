// Launchers for the fused log-softmax / target log-prob / entropy (forward) and its backward, which can
// overwrite the logits with their gradient to save a (N, V) buffer.

import type { Gpu } from '../../src/gpu/gpu.ts';
import { shapeError } from '../../src/gpu/errors.ts';
import { grid1d } from '../../src/gpu/program.ts';
import { type Tensor, shapeStr } from '../../src/gpu/tensor.ts';
import { fillTemplate, rowThreads } from '../common.ts';
import { defineKernel } from '../program.ts';
import source from './logprobs.wgsl';

const logprobs = defineKernel({
  name: 'logprobs',
  bindings: ['logits', 'targets', 'logp', 'entropy', 'lse', 'dlogp', 'dentropy', 'dlogits'],
  uniforms: { N: 'u32', V: 'u32', invT: 'f32', nanBits: 'u32' },
  entries: {
    forward: ['logits', 'targets', 'logp', 'entropy', 'lse'],
    // in place, the gradient overwrites logits (no dlogits)
    backward: ['logits', 'targets', 'entropy?', 'lse', 'dlogp?', 'dentropy?', 'dlogits?'],
  },
});

/** Threads per row: about 16 logits each. */
const threads = (V: number): number => rowThreads(V, 16);

const program = logprobs.variants((inPlace: boolean, hasDlogp: boolean, hasDent: boolean, wg: number) => ({
  key: `logprobs:${inPlace ? 'inplace' : 'out'}:${hasDlogp ? 'dlogp' : '-'}:${hasDent ? 'dent' : '-'}:wg${wg}`,
  code: () =>
    fillTemplate(source, {
      LOGITS_ACCESS: inPlace ? 'read_write' : 'read',
      DLOGP: hasDlogp ? 'dlogp[row]' : '0.0',
      DENT: hasDent ? 'dentropy[row]' : '0.0',
      ENTROPY: hasDent ? 'entropy[row]' : '0.0',
      GRAD_STORE: inPlace ? 'logits[i] = dlogit;' : 'dlogits[i] = dlogit;',
      WG: String(wg),
    }),
}));

export interface LogprobsOptions {
  /** Divides the logits before the softmax (the sampling temperature of the policy); default 1. */
  temperature?: number;
}

function checkTemperature(op: string, T: number): void {
  if (!(T > 0) || !Number.isFinite(T)) shapeError(op, `temperature must be a positive finite number, got ${T}`);
}

function checkRows(op: string, name: string, t: Tensor | undefined, N: number): void {
  if (t && (t.dtype !== 'f32' || t.shape.length !== 1 || t.shape[0] !== N))
    shapeError(op, `${name} must be (${N}) f32, got ${shapeStr(t)}`);
}

function checkLogits(op: string, logits: Tensor, targets: Tensor): [number, number] {
  if (logits.dtype !== 'f32' || logits.shape.length !== 2) shapeError(op, `logits must be (N, V) f32, got ${shapeStr(logits)}`);
  const [N, V] = logits.shape;
  if (V === 0) shapeError(op, `logits has an empty vocabulary: ${shapeStr(logits)}`);
  if (targets.dtype !== 'i32' || targets.shape.length !== 1 || targets.shape[0] !== N) {
    shapeError(op, `targets must be (${N}) i32, got ${shapeStr(targets)}`);
  }
  return [N, V];
}

/**
 * logp (N) = log softmax(logits / T)[target], entropy (N) = -sum p log p, lse (N) = logsumexp(logits / T)
 * (saved for the backward). logits (N, V) f32, targets (N) i32; target < 0 marks padding (logp = entropy = 0).
 */
export function logprobsForward(
  gpu: Gpu,
  logp: Tensor,
  entropy: Tensor,
  lse: Tensor,
  logits: Tensor,
  targets: Tensor,
  opts: LogprobsOptions = {},
): void {
  const op = 'logprobsForward';
  const [N, V] = checkLogits(op, logits, targets);
  checkRows(op, 'logp', logp, N);
  checkRows(op, 'entropy', entropy, N);
  checkRows(op, 'lse', lse, N);
  const T = opts.temperature ?? 1;
  checkTemperature(op, T);
  logprobs.run(gpu, {
    program: program('forward', false, false, false, threads(V)),
    bindings: { logits, targets, logp, entropy, lse },
    uniforms: { N, V, invT: 1 / T, nanBits: 0x7fc00000 },
    workgroups: grid1d(N),
  });
}

export interface LogprobsBackwardOptions extends LogprobsOptions {
  /** Write the gradient over the logits buffer (then pass dlogits = logits). */
  inPlace?: boolean;
}

/**
 * dlogits (N, V) = (dlogp (onehot - p) - dentropy p (log p + H)) / T, assigned (=). dlogp or dentropy may
 * be null (zero). With inPlace, dlogits must be the logits tensor itself and is overwritten. entropy and
 * lse are the forward's outputs (entropy may be null when dentropy is).
 */
export function logprobsBackward(
  gpu: Gpu,
  dlogits: Tensor,
  dlogp: Tensor | null,
  dentropy: Tensor | null,
  logits: Tensor,
  targets: Tensor,
  entropy: Tensor | null,
  lse: Tensor,
  opts: LogprobsBackwardOptions = {},
): void {
  const op = 'logprobsBackward';
  const [N, V] = checkLogits(op, logits, targets);
  const inPlace = opts.inPlace ?? false;
  if (dlogits.dtype !== 'f32' || dlogits.shape.length !== 2 || dlogits.shape[0] !== N || dlogits.shape[1] !== V) {
    shapeError(op, `dlogits must be (${N}, ${V}) f32, got ${shapeStr(dlogits)}`);
  }
  if (inPlace && dlogits.buffer !== logits.buffer) shapeError(op, 'inPlace needs dlogits to be the logits tensor');
  if (!inPlace && dlogits.buffer === logits.buffer) shapeError(op, 'dlogits is the logits buffer: pass { inPlace: true }');
  checkRows(op, 'dlogp', dlogp ?? undefined, N);
  checkRows(op, 'dentropy', dentropy ?? undefined, N);
  checkRows(op, 'lse', lse, N);
  if (dentropy && !entropy) shapeError(op, 'dentropy needs the forward entropy');
  checkRows(op, 'entropy', entropy ?? undefined, N);
  const T = opts.temperature ?? 1;
  checkTemperature(op, T);
  const hasDlogp = dlogp !== null;
  const hasDent = dentropy !== null;
  logprobs.run(gpu, {
    program: program('backward', inPlace, hasDlogp, hasDent, threads(V)),
    bindings: { logits, targets, entropy: hasDent ? entropy : null, lse, dlogp, dentropy, dlogits: inPlace ? null : dlogits },
    uniforms: { N, V, invT: 1 / T, nanBits: 0x7fc00000 },
    workgroups: grid1d(N),
  });
}
