// Launchers for the elementwise ops: residual add, ReLU and its backward, bias add.

import type { Gpu } from '../../src/gpu/gpu.ts';
import { shapeError } from '../../src/gpu/errors.ts';
import { grid1d } from '../../src/gpu/program.ts';
import { type Tensor, numel, shapeStr } from '../../src/gpu/tensor.ts';
import { defineKernel } from '../program.ts';
import source from './elementwise.wgsl';

// relu_backward writes dx into y; add_bias reads the bias from x.
const elementwise = defineKernel({
  name: 'elementwise',
  bindings: ['x', 'y', 'dy'],
  uniforms: { n: 'u32', C: 'u32', alpha: 'f32' },
  entries: { add: ['x', 'y'], relu: ['x', 'y'], relu_backward: ['x', 'y', 'dy'], add_bias: ['x', 'y'] },
});
const prog = elementwise.module('elementwise', () => source);
const ADD = prog('add');
const RELU = prog('relu');
const RELU_BWD = prog('relu_backward');
const ADD_BIAS = prog('add_bias');

function checkSame(op: string, a: Tensor, b: Tensor): number {
  if (a.dtype !== 'f32' || b.dtype !== 'f32') shapeError(op, `needs f32 tensors, got ${shapeStr(a)} and ${shapeStr(b)}`);
  const n = numel(a.shape);
  if (numel(b.shape) !== n) shapeError(op, `sizes differ: ${shapeStr(a)} vs ${shapeStr(b)}`);
  return n;
}

/** y += alpha * x */
export function addInto(gpu: Gpu, y: Tensor, x: Tensor, alpha = 1): void {
  const n = checkSame('addInto', y, x);
  elementwise.run(gpu, { program: ADD, bindings: { x, y }, uniforms: { n, C: 1, alpha }, workgroups: grid1d(Math.ceil(n / 256)) });
}

/** y = relu(x); y and x must be different tensors. */
export function reluForward(gpu: Gpu, y: Tensor, x: Tensor): void {
  const n = checkSame('reluForward', y, x);
  if (y.buffer === x.buffer) shapeError('reluForward', 'y and x must be different buffers');
  elementwise.run(gpu, { program: RELU, bindings: { x, y }, uniforms: { n, C: 1, alpha: 0 }, workgroups: grid1d(Math.ceil(n / 256)) });
}

/** dx = dy where x > 0, else 0 (x: relu's input or output). */
export function reluBackward(gpu: Gpu, dx: Tensor, dy: Tensor, x: Tensor): void {
  const n = checkSame('reluBackward', dx, dy);
  checkSame('reluBackward', dx, x);
  elementwise.run(gpu, {
    program: RELU_BWD,
    bindings: { x, y: dx, dy },
    uniforms: { n, C: 1, alpha: 0 },
    workgroups: grid1d(Math.ceil(n / 256)),
  });
}

/** y (R, C) += bias (C), broadcast over rows. */
export function addBias(gpu: Gpu, y: Tensor, bias: Tensor): void {
  const C = bias.shape[bias.shape.length - 1];
  const n = numel(y.shape);
  if (bias.dtype !== 'f32' || y.dtype !== 'f32' || numel(bias.shape) !== C || y.shape[y.shape.length - 1] !== C) {
    shapeError('addBias', `y ${shapeStr(y)} and bias ${shapeStr(bias)} must be f32 with the same last dim`);
  }
  elementwise.run(gpu, {
    program: ADD_BIAS,
    bindings: { x: bias, y },
    uniforms: { n, C, alpha: 0 },
    workgroups: grid1d(Math.ceil(n / 256)),
  });
}
