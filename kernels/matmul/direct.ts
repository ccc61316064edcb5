// The 'direct' matmul variant (direct.wgsl): a 4 x 4 block of outputs per thread from global memory, no
// workgroup memory and no barriers; the launcher in matmul.ts takes it when asked, and for 'block' past its grid.

import type { Gpu } from '../../src/gpu/gpu.ts';
import { programFactory } from '../../src/gpu/program.ts';
import type { Tensor } from '../../src/gpu/tensor.ts';
import { type WeightDType, fillTemplate, loadFn } from '../common.ts';
import directSource from './direct.wgsl';
import { type MatmulDims, headerOf, product, productBindings, productUniforms } from './kernel.ts';

const directKey = (transA: boolean, transB: boolean, bDtype: WeightDType, accumulate: boolean, bias: boolean): string =>
  `matmul:${transA ? 't' : 'n'}${transB ? 't' : 'n'}:${bDtype}:direct${accumulate ? ':acc' : ''}${bias ? ':bias' : ''}`;

const directProgram = programFactory(
  directKey,
  (transA: boolean, transB: boolean, bDtype: WeightDType, accumulate: boolean, bias: boolean) =>
    product.program(
      directKey(transA, transB, bDtype, accumulate, bias),
      () =>
        fillTemplate(directSource, {
          HEADER: headerOf(product, 'f32', bDtype === 'f32' ? 'f32' : 'u32'),
          LOAD_B: loadFn('ldB', 'b', bDtype),
          A_INDEX: transA ? 'aBase + k * u.M + m' : 'aBase + m * u.K + k',
          B_INDEX: transB ? 'bBase + n * u.K + k' : 'bBase + k * u.N + n',
          EPILOGUE: [...(bias ? ['x += bias[col + q];'] : []), ...(accumulate ? ['x += c[i];'] : [])].map((l) => `      ${l}`).join('\n'),
        }),
      'forward',
    ),
);

/** Records a direct dispatch: 8 x 8 threads of 4 x 4 outputs per workgroup. */
export function launchDirect(gpu: Gpu, out: Tensor, a: Tensor, b: Tensor, bias: Tensor | undefined, d: MatmulDims): string {
  const program = directProgram(d.transA, d.transB, b.dtype as WeightDType, d.accumulate, Boolean(bias));
  if (d.M === 0 || d.N === 0 || d.batch === 0) return program.key;
  product.run(gpu, {
    program,
    bindings: productBindings(a, b, out, bias),
    uniforms: productUniforms(d),
    workgroups: [Math.ceil(d.N / 32), Math.ceil(d.M / 32), d.batch],
  });
  return program.key;
}
