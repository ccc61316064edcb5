// Launchers for the elementwise ops: residual add, ReLU and its backward, bias add.

import type { Gpu } from '../../src/gpu/gpu.ts';
import { shapeError } from '../../src/gpu/errors.ts';
import { type Program, grid1d } from '../../src/gpu/program.ts';
import { type Tensor, numel, shapeStr } from '../../src/gpu/tensor.ts';
import source from './elementwise.wgsl';

const prog = (entryPoint: string): Program => ({ key: 'elementwise', code: () => source, entryPoint });
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
  gpu.run({ program: ADD, bindings: [x, y], uniforms: [n, 1, { f32: alpha }, 0], workgroups: grid1d(Math.ceil(n / 256)) });
}

/** y = relu(x); y and x must be different tensors. */
export function reluForward(gpu: Gpu, y: Tensor, x: Tensor): void {
  const n = checkSame('reluForward', y, x);
  if (y.buffer === x.buffer) shapeError('reluForward', 'y and x must be different buffers');
  gpu.run({ program: RELU, bindings: [x, y], uniforms: [n, 1, { f32: 0 }, 0], workgroups: grid1d(Math.ceil(n / 256)) });
}

/** dx = dy where x > 0, else 0 (x: relu's input or output). */
export function reluBackward(gpu: Gpu, dx: Tensor, dy: Tensor, x: Tensor): void {
  const n = checkSame('reluBackward', dx, dy);
  checkSame('reluBackward', dx, x);
  gpu.run({ program: RELU_BWD, bindings: [x, dx, dy], uniforms: [n, 1, { f32: 0 }, 0], workgroups: grid1d(Math.ceil(n / 256)) });
}

/** y (R, C) += bias (C), broadcast over rows. */
export function addBias(gpu: Gpu, y: Tensor, bias: Tensor): void {
  const C = bias.shape[bias.shape.length - 1];
  const n = numel(y.shape);
  if (bias.dtype !== 'f32' || y.dtype !== 'f32' || numel(bias.shape) !== C || y.shape[y.shape.length - 1] !== C) {
    shapeError('addBias', `y ${shapeStr(y)} and bias ${shapeStr(bias)} must be f32 with the same last dim`);
  }
  gpu.run({ program: ADD_BIAS, bindings: [bias, y], uniforms: [n, C, { f32: 0 }, 0], workgroups: grid1d(Math.ceil(n / 256)) });
}
