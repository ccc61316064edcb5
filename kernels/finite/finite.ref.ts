// Float64 reference of the non-finite count (finite.wgsl).

/** How many values of x are NaN or ±Infinity. */
export function countNonFiniteRef(x: ArrayLike<number>): number {
  let c = 0;
  for (let i = 0; i < x.length; i++) if (!Number.isFinite(x[i])) c++;
  return c;
}
