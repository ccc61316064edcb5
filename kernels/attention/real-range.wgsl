// Shared by attention.wgsl (forward) and backward.wgsl (blocked backward), appended to both by kernel.ts
// (withRealRange). Expects the module's uniforms u (hasMask, Tk, Tm) and its mask binding.

var<workgroup> rLo: atomic<u32>;
var<workgroup> rHi: atomic<u32>;
var<workgroup> rRange: vec2u;
/**
 * [first real key, last real key + 1) of batch b (empty: (Tk, 0)); (0, Tk) without a mask. Keys outside it
 * are padding, whose tiles are skipped (they add only zeros). Called by every thread of nt, uniformly.
 */
fn realRange(b: u32, tid: u32, nt: u32) -> vec2u {
  if (u.hasMask == 0u) { return vec2u(0u, u.Tk); }
  if (tid == 0u) { atomicStore(&rLo, u.Tk); atomicStore(&rHi, 0u); }
  workgroupBarrier();
  var lo = u.Tk;
  var hi = 0u;
  for (var j = tid; j < u.Tk; j += nt) {
    if (mask[b * u.Tm + j] != 0) { lo = min(lo, j); hi = j + 1u; }
  }
  atomicMin(&rLo, lo);
  atomicMax(&rHi, hi);
  workgroupBarrier();
  if (tid == 0u) { rRange = vec2u(atomicLoad(&rLo), atomicLoad(&rHi)); }
  return workgroupUniformLoad(&rRange);
}
