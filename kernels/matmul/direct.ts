// The 'direct' matmul variant (direct.wgsl): a 4 x 4 block of outputs per thread from global memory, no
// workgroup memory and no barriers; the launcher in matmul.ts takes it when asked, and for 'block' past its grid.

import type { Gpu } from '../../src/gpu/gpu.ts';
import { programFactory } from '../../src/gpu/program.ts';
import { fillTemplate, loadFn } from '../common.ts';
import directSource from './direct.wgsl';
import { type MatmulCall, type ProductChoices, headerOf, product, productChoices, productKey, runProduct } from './kernel.ts';

const directKey = (c: ProductChoices): string => productKey(c, 'direct');

const directProgram = programFactory(directKey, (c: ProductChoices) =>
  product.program(
    directKey(c),
    () =>
      fillTemplate(directSource, {
        HEADER: headerOf(product, 'f32', c.bDtype === 'f32' ? 'f32' : 'u32'),
        LOAD_B: loadFn('ldB', 'b', c.bDtype),
        A_INDEX: c.transA ? 'aBase + k * u.M + m' : 'aBase + m * u.K + k',
        B_INDEX: c.transB ? 'bBase + n * u.K + k' : 'bBase + k * u.N + n',
        EPILOGUE: [...(c.bias ? ['x += bias[col + q];'] : []), ...(c.accumulate ? ['x += c[i];'] : [])].map((l) => `      ${l}`).join('\n'),
      }),
    'forward',
  ),
);

/** Records a direct dispatch: 8 x 8 threads of 4 x 4 outputs per workgroup. */
export function launchDirect(gpu: Gpu, c: MatmulCall): string {
  const { d } = c;
  return runProduct(gpu, directProgram(productChoices(c)), c, [Math.ceil(d.N / 32), Math.ceil(d.M / 32), d.batch]);
}
