// Float64 CPU reference for the column-block copy.

export function copyColumnsRef(
  dst: ArrayLike<number>,
  dstC: number,
  src: ArrayLike<number>,
  srcC: number,
  at: { srcCol: number; dstCol: number; cols: number },
): Float64Array {
  const out = Float64Array.from(dst);
  const R = src.length / srcC;
  for (let r = 0; r < R; r++) for (let j = 0; j < at.cols; j++) out[r * dstC + at.dstCol + j] = src[r * srcC + at.srcCol + j];
  return out;
}
