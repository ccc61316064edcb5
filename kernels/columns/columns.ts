// Launcher for the column-block copy between f32 matrices of the same rows (columns.wgsl).

import type { Gpu } from '../../src/gpu/gpu.ts';
import { shapeError } from '../../src/gpu/errors.ts';
import { type Tensor, shapeStr } from '../../src/gpu/tensor.ts';
import { defineKernel } from '../program.ts';
import source from './columns.wgsl';

const columns = defineKernel({
  name: 'columns',
  bindings: ['src', 'dst'],
  uniforms: { cols: 'u32', srcC: 'u32', dstC: 'u32', srcCol: 'u32', dstCol: 'u32', R: 'u32' },
  entries: { copy: ['src', 'dst'] },
});
const COPY = columns.module('columns', () => source)('copy');

/** dst (R, dstC) [:, dstCol, dstCol + cols) = src (R, srcC) [:, srcCol, srcCol + cols). */
export function copyColumns(gpu: Gpu, dst: Tensor, src: Tensor, at: { srcCol: number; dstCol: number; cols: number }): void {
  const op = 'copyColumns';
  const { srcCol, dstCol, cols } = at;
  if (src.dtype !== 'f32' || dst.dtype !== 'f32' || src.shape.length !== 2 || dst.shape.length !== 2 || src.shape[0] !== dst.shape[0]) {
    shapeError(op, `src and dst must be 2-D f32 with the same rows, got ${shapeStr(src)} and ${shapeStr(dst)}`);
  }
  const [R, srcC] = src.shape;
  const dstC = dst.shape[1];
  if (srcCol < 0 || dstCol < 0 || srcCol + cols > srcC || dstCol + cols > dstC) {
    shapeError(op, `columns [${srcCol}, ${srcCol + cols}) of ${shapeStr(src)} into [${dstCol}, ${dstCol + cols}) of ${shapeStr(dst)}`);
  }
  if (R > gpu.limits.maxComputeWorkgroupsPerDimension)
    shapeError(op, `${R} rows, over the ${gpu.limits.maxComputeWorkgroupsPerDimension} a dispatch takes`);
  columns.run(gpu, {
    program: COPY,
    bindings: { src, dst },
    uniforms: { cols, srcC, dstC, srcCol, dstCol, R },
    workgroups: [Math.ceil(cols / 256), R],
  });
}
