// The prologue of the gemv form (appended to linear.wgsl): a workgroup per row m (M <= 16, decode) and
// per P outputs of its LoRA h, whose KT threads walk K together, so the row's squares (rstd, summed again
// by each of the row's workgroups) and each h dot product are summed by all of them (coalesced reads of x
// and A) and meet in workgroup memory. linear.wgsl's `shrink` gives each output
// one thread that walks K alone and recomputes the row's rstd: on a GPU a chain of K dependent loads per
// thread, most of a fused decode step's time. Same outputs (h, then rstd at rOff), another summation order.
// dispatch: (M, max(1, ceil(G' R / P))), workgroup KT.

const KT = 64u;
const HALF = KT / 2u;
const RS = HALF + 1u;
const P = 8u; // outputs a workgroup sums (partial sums a thread carries)
var<workgroup> pr: array<f32, P * RS>;

/** Sums the KT threads' partials a[i] of each i into pr[i * RS + 0..HALF) (then read with prSum). */
fn meet(t: u32, a: array<f32, 8>) {
  let hh = t % HALF;
  if (t >= HALF) { for (var i = 0u; i < P; i++) { pr[i * RS + hh] = a[i]; } }
  workgroupBarrier();
  if (t < HALF) { for (var i = 0u; i < P; i++) { pr[i * RS + hh] += a[i]; } }
  workgroupBarrier();
}

fn prSum(i: u32) -> f32 {
  var s = 0.0;
  for (var j = 0u; j < HALF; j++) { s += pr[i * RS + j]; }
  return s;
}

@compute @workgroup_size(KT)
fn shrink_gemv(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) wg: vec3u) {
  let m = wg.x;
  if (m >= u.M) { return; }
  var r = 1.0;
$ROW_RSTD
$ROW_H
}
