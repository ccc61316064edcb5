// Launcher for a generation step's bookkeeping on the GPU (generation.wgsl): the next forward's positions
// and KV-cache length, the step counter the sampling and the token appends read, and stop detection.

import type { Gpu } from '../../src/gpu/gpu.ts';
import { shapeError } from '../../src/gpu/errors.ts';
import { type Tensor, shapeStr } from '../../src/gpu/tensor.ts';
import { defineKernel } from '../program.ts';
import source from './generation.wgsl';

const generation = defineKernel({
  name: 'generation',
  bindings: ['step', 'len', 'pos', 'token', 'plen', 'limit', 'stops', 'kept'],
  uniforms: { B: 'u32', NS: 'u32', Tp: 'u32' },
  entries: { advance: ['step', 'len', 'pos', 'token', 'plen', 'limit', 'stops', 'kept'] },
});
const ADVANCE = generation.program('generation:advance', () => source, 'advance');

/** A generation's step state on the GPU (see generation.wgsl for what each holds). */
export interface StepTensors {
  /** (1) i32 */
  step: Tensor;
  /** (1) i32: the KV cache's lengthGpu */
  len: Tensor;
  /** (B) i32 */
  pos: Tensor;
  /** (B + 1) i32 */
  kept: Tensor;
  /** (B) i32 each */
  plen: Tensor;
  limit: Tensor;
  /** (NS) i32, or (1) unused when NS = 0 */
  stops: Tensor;
  NS: number;
  Tp: number;
}

/** Records one `advance` after the tokens `token` (B) i32 of step `s.step` were sampled. */
export function advanceStep(gpu: Gpu, s: StepTensors, token: Tensor): void {
  const op = 'advanceStep';
  const B = token.shape[0];
  const want = (name: string, t: Tensor, n: number) => {
    if (t.dtype !== 'i32' || t.shape.length !== 1 || t.shape[0] !== n) shapeError(op, `${name} must be (${n}) i32, got ${shapeStr(t)}`);
  };
  if (token.shape.length !== 1) shapeError(op, `token must be (B) i32, got ${shapeStr(token)}`);
  want('token', token, B);
  for (const [name, t] of [
    ['step', s.step],
    ['len', s.len],
  ] as const)
    want(name, t, 1);
  for (const [name, t] of [
    ['pos', s.pos],
    ['plen', s.plen],
    ['limit', s.limit],
  ] as const)
    want(name, t, B);
  want('kept', s.kept, B + 1);
  want('stops', s.stops, Math.max(1, s.NS));
  if (!Number.isInteger(s.Tp) || s.Tp < 1) shapeError(op, `Tp must be a positive integer, got ${s.Tp}`);
  generation.run(gpu, {
    program: ADVANCE,
    bindings: { step: s.step, len: s.len, pos: s.pos, token, plen: s.plen, limit: s.limit, stops: s.stops, kept: s.kept },
    uniforms: { B, NS: s.NS, Tp: s.Tp },
    workgroups: [1],
  });
}
