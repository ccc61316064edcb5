import { describe, expect, it } from 'vitest';
import { expectClose, randn, testGpu } from '../testing.ts';
import { copyColumns } from './columns.ts';
import { copyColumnsRef } from './columns.ref.ts';

// [R, srcC, dstC, srcCol, dstCol, cols]: a chunk into the middle of a row, out of it, a block wider than a workgroup
const CASES: Array<[number, number, number, number, number, number]> = [
  [1, 1, 1, 0, 0, 1],
  [3, 5, 13, 0, 4, 5],
  [4, 13, 6, 7, 0, 6],
  [2, 300, 700, 0, 390, 300],
];

describe('columns', () => {
  for (const [R, srcC, dstC, srcCol, dstCol, cols] of CASES) {
    it(`copy R=${R} ${srcC} -> ${dstC} cols [${srcCol}, +${cols}) -> [${dstCol}, +${cols})`, async () => {
      const gpu = await testGpu();
      const src = randn(R * srcC, 1 + R);
      const dst = randn(R * dstC, 2 + R); // columns outside the block keep their values
      const tSrc = gpu.upload(src, [R, srcC], 'f32', 'src');
      const tDst = gpu.upload(dst, [R, dstC], 'f32', 'dst');
      copyColumns(gpu, tDst, tSrc, { srcCol, dstCol, cols });
      const ref = copyColumnsRef(Float32Array.from(dst), dstC, Float32Array.from(src), srcC, { srcCol, dstCol, cols });
      expectClose('dst', await gpu.read(tDst), ref, { atol: 0, rtol: 0 });
      gpu.release(tSrc, tDst);
    });
  }

  it('rejects a block outside either matrix before dispatch', async () => {
    const gpu = await testGpu();
    const src = gpu.tensor([2, 4], 'f32', 'src');
    const dst = gpu.tensor([2, 6], 'f32', 'dst');
    const before = gpu.dispatchCount;
    expect(() => copyColumns(gpu, dst, src, { srcCol: 1, dstCol: 0, cols: 4 })).toThrow(/copyColumns: columns \[1, 5\)/);
    expect(gpu.dispatchCount).toBe(before);
    gpu.release(src, dst);
  });
});
