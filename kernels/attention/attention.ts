// Launchers for causal flash attention (forward saving the log-sum-exp, and its deterministic backward)
// with grouped-query heads, a key padding mask and KV caches of larger capacity: each call checks the
// shapes, then takes one path. Layouts in attention.wgsl. The paths, a file each:
//   tiled.ts    attention.wgsl's tiles per head size; its forward variants (variants.ts) by sequence length
//   blocked.ts  the register-blocked backward variants (backward.wgsl), picked by BACKWARD_CHOICE
//   decode.ts   the split-K decode forward (decode.wgsl) for a few query positions
//   direct.ts   the barrier-free 'direct' and 'regs' kernels for CPU adapters
// kernel.ts holds what they share: the options, the uniforms and bindings, and the shape checks.

import type { Gpu } from '../../src/gpu/gpu.ts';
import { shapeError } from '../../src/gpu/errors.ts';
import { grid1d } from '../../src/gpu/program.ts';
import { type Tensor, shapeStr } from '../../src/gpu/tensor.ts';
import { blockedBackward, settleBackward } from './blocked.ts';
import { DECODE_RMAX, DECODE_TQ, decodeForward, decodeProgramsFor } from './decode.ts';
import { directBackward, directForward } from './direct.ts';
import { type AttentionOptions, attentionDims, backwardPath, defaultPath, expectShape, main, maskOf, uniforms } from './kernel.ts';
import { attentionPrograms, forwardPrograms } from './tiled.ts';
import { backwardChoice, forwardChoice, forwardUnfit, parseBackward, parseForward } from './variants.ts';

export { LSE_MASKED } from './attention.ref.ts';
export { DS_SCRATCH_MAX, backwardScratch } from './blocked.ts';
export { DECODE_RMAX, DECODE_TQ, decodeChunk, decodeSharedBytes } from './decode.ts';
export { regsSourceOf } from './direct.ts';
export type { AttentionOptions, AttentionPath } from './kernel.ts';
export { type AttentionTiles, attentionSharedBytes, attentionTiles } from './tiled.ts';
export * from './variants.ts';

/**
 * out (B, Tq, NH, HS) = softmax(q k^T * scale, causal + padding mask) v, and lse (B, NH, Tq) its log-sum-exp
 * (LSE_MASKED for a row that sees no key; its out is 0). q (B, Tq, NH, HS), k and v (B, Tcap, NKV, HS).
 */
export function attentionForward(gpu: Gpu, out: Tensor, lse: Tensor, q: Tensor, k: Tensor, v: Tensor, opts: AttentionOptions = {}): void {
  const op = 'attentionForward';
  const d = attentionDims(op, q, k, v, opts);
  expectShape(op, 'out', out, [d.B, d.Tq, d.NH, d.HS]);
  expectShape(op, 'lse', lse, [d.B, d.NH, d.Tq]);
  const R = d.Tq * (d.NH / d.NKV);
  const fits = d.Tq <= DECODE_TQ && R <= DECODE_RMAX;
  const path = opts.path ?? defaultPath(gpu);
  const tkGpu = opts.TkGpu;
  if (tkGpu && (tkGpu.dtype !== 'i32' || tkGpu.shape.length !== 1 || tkGpu.shape[0] !== 1))
    shapeError(op, `TkGpu must be (1) i32, got ${shapeStr(tkGpu)}`);
  if (opts.split ?? (fits && path === 'tiled')) {
    if (!fits)
      shapeError(
        op,
        `split: the decode path takes Tq <= ${DECODE_TQ} and Tq * NH / NKV <= ${DECODE_RMAX} rows per kv head, got Tq = ${d.Tq}, ${R} rows`,
      );
    const dp = decodeProgramsFor(gpu, d.HS, Boolean(tkGpu));
    if (dp) {
      decodeForward(gpu, dp, out, lse, q, k, v, opts, d);
      return;
    }
  }
  if (tkGpu) shapeError(op, 'TkGpu needs the split decode path (a GPU adapter, Tq <= 4, and its tiles fitting the device)');
  if (path !== 'tiled') {
    directForward(gpu, path, d, { q, k, v, mask: maskOf(gpu, opts), out, lse });
    return;
  }
  const p = attentionPrograms(gpu, d.HS);
  const asked = opts.forward ?? forwardChoice(d.Tq, d.HS);
  const fv = typeof asked === 'string' ? parseForward(asked) : asked;
  const own = fv !== null && forwardUnfit(d.HS, p.tiles.lanes, fv, gpu.limits) === null ? fv : null;
  main.run(gpu, {
    program: own ? forwardPrograms(gpu, d.HS, own) : p.fwd,
    bindings: { q, k, v, mask: maskOf(gpu, opts), out, lse },
    uniforms: uniforms(d),
    workgroups: [Math.ceil(R / (own ? own.fBR : p.tiles.fBR)), d.NKV, d.B],
  });
}

/**
 * dq (B, Tq, NH, HS), dk and dv (B, Tcap, NKV, HS) = gradients of sum(out * dout), written (=), not
 * accumulated; dk/dv rows >= Tk are 0. Uses the forward's out and lse; deterministic (no atomics).
 */
export function attentionBackward(
  gpu: Gpu,
  dq: Tensor,
  dk: Tensor,
  dv: Tensor,
  dout: Tensor,
  q: Tensor,
  k: Tensor,
  v: Tensor,
  out: Tensor,
  lse: Tensor,
  opts: AttentionOptions = {},
): void {
  const op = 'attentionBackward';
  const d = attentionDims(op, q, k, v, opts);
  const qShape = [d.B, d.Tq, d.NH, d.HS];
  const kShape = [d.B, d.Tcap, d.NKV, d.HS];
  expectShape(op, 'dout', dout, qShape);
  expectShape(op, 'out', out, qShape);
  expectShape(op, 'lse', lse, [d.B, d.NH, d.Tq]);
  expectShape(op, 'dq', dq, qShape);
  expectShape(op, 'dk', dk, kShape);
  expectShape(op, 'dv', dv, kShape);
  const u = uniforms(d);
  const path = backwardPath(opts.path ?? defaultPath(gpu), gpu.limits);
  if (path !== 'tiled') {
    directBackward(gpu, path, d, { dq, dk, dv, dout, q, k, v, out, lse, mask: maskOf(gpu, opts) });
    return;
  }
  const p = attentionPrograms(gpu, d.HS);
  const R = d.Tq * (d.NH / d.NKV);
  const ld = gpu.tensor([d.B, d.NH, d.Tq, 2], 'f32', 'attention.ld');
  const asked = opts.backward ?? backwardChoice(d.Tq, d.HS);
  const variant = settleBackward(typeof asked === 'string' ? parseBackward(asked) : asked, d.B * d.NH * d.Tq * d.Tk * 4, d.HS, gpu.limits);
  if (variant !== 'v1') {
    blockedBackward(gpu, p, variant, d, { dq, dk, dv, dout, q, k, v, out, lse, ld, mask: maskOf(gpu, opts) });
    gpu.release(ld);
    return;
  }
  main.run(gpu, {
    program: p.prep,
    bindings: { out, lse, dout, ld },
    uniforms: u,
    workgroups: grid1d(Math.ceil((d.B * d.Tq * d.NH) / 64)),
  });
  main.run(gpu, {
    program: p.dkdv,
    bindings: { q, k, v, mask: maskOf(gpu, opts), dout, ld, dk, dv },
    uniforms: u,
    workgroups: [Math.ceil(d.Tcap / p.tiles.kBK), d.NKV, d.B],
  });
  main.run(gpu, {
    program: p.dq,
    bindings: { q, k, v, mask: maskOf(gpu, opts), dout, ld, dq },
    uniforms: u,
    workgroups: [Math.ceil(R / p.tiles.qBR), d.NKV, d.B],
  });
  // Back to the pool once these dispatches are recorded: later writes to it are ordered after them.
  gpu.release(ld);
}
