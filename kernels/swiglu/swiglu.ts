// Launchers for the SwiGLU activation (out = silu(gate) * up) and its backward (assigns dgate, dup).

import type { Gpu } from '../../src/gpu/gpu.ts';
import { shapeError } from '../../src/gpu/errors.ts';
import { grid1d } from '../../src/gpu/program.ts';
import { type Tensor, numel, shapeStr } from '../../src/gpu/tensor.ts';
import source from './swiglu.wgsl';
import { noAlias } from '../common.ts';
import { defineKernel } from '../program.ts';

const swiglu = defineKernel({
  name: 'swiglu',
  bindings: ['gate', 'up', 'out', 'dout', 'dgate', 'dup'],
  uniforms: { n: 'u32' },
  entries: { forward: ['gate', 'up', 'out'], backward: ['gate', 'up', 'dout', 'dgate', 'dup'] },
});
const code = () => source;
const FWD = swiglu.program('swiglu', code, 'forward');
const BWD = swiglu.program('swiglu', code, 'backward');

const sameShape = (a: Tensor, b: Tensor) => a.shape.length === b.shape.length && a.shape.every((d, i) => d === b.shape[i]);

function check(op: string, ref: Tensor, named: Record<string, Tensor>): void {
  if (ref.dtype !== 'f32' || ref.shape.length !== 2) shapeError(op, `gate must be (N, I) f32, got ${shapeStr(ref)}`);
  for (const [name, t] of Object.entries(named)) {
    if (t.dtype !== 'f32' || !sameShape(t, ref))
      shapeError(op, `${name} must be (${ref.shape.join(', ')}) f32 like gate, got ${shapeStr(t)}`);
  }
}

/** out (N, I) = silu(gate) * up, gate and up (N, I) f32. */
export function swigluForward(gpu: Gpu, out: Tensor, gate: Tensor, up: Tensor): void {
  check('swigluForward', gate, { up, out });
  noAlias('swigluForward', { out, gate, up });
  const n = numel(gate.shape);
  swiglu.run(gpu, { program: FWD, bindings: { gate, up, out }, uniforms: { n }, workgroups: grid1d(Math.ceil(n / 256)) });
}

/** dgate, dup (N, I) = the gradients of out = silu(gate) * up given dout (N, I); both assigned. */
export function swigluBackward(gpu: Gpu, dgate: Tensor, dup: Tensor, dout: Tensor, gate: Tensor, up: Tensor): void {
  check('swigluBackward', gate, { up, dout, dgate, dup });
  noAlias('swigluBackward', { dgate, dup, dout, gate, up });
  const n = numel(gate.shape);
  swiglu.run(gpu, {
    program: BWD,
    bindings: { gate, up, dout, dgate, dup },
    uniforms: { n },
    workgroups: grid1d(Math.ceil(n / 256)),
  });
}
