// The prologue of the gemv form (appended to linear.wgsl): a workgroup per output o of the group's LoRA
// h and per row m (M <= 16, decode), like lora.wgsl's forward_h_rows, whose KT threads walk K together
// (coalesced reads of x and A) and meet in one tree. With the RMSNorm folded in, the same walk sums the
// row's squares: h = rstd * sum_k x gamma A (x normed on the fly, as the matmul then does), and the
// workgroup of o = 0 writes rstd at rOff. A norm-only prologue runs one workgroup a row.
// The earlier layout (a workgroup per row and 8 outputs, each thread carrying 8 partial sums) gave the
// whole GPU 8 to 24 workgroups and took 0.05-0.07 ms a call on an H200, most of a fused decode step.
// Same outputs as linear.wgsl's `shrink` (h, then rstd at rOff), another summation order.
// dispatch: (max(1, G' R), M), workgroup KT.

const KT = 128u;
var<workgroup> red: array<vec2f, KT>;

/** The workgroup's sum of every thread's v (a tree in workgroup memory). */
fn sumAll(t: u32, v: vec2f) -> vec2f {
  red[t] = v;
  workgroupBarrier();
  for (var w = KT / 2u; w > 0u; w >>= 1u) {
    if (t < w) { red[t] += red[t + w]; }
    workgroupBarrier();
  }
  return red[0];
}

@compute @workgroup_size(KT)
fn shrink_gemv(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) wg: vec3u) {
  let o = wg.x;
  let m = wg.y;
  if (m >= u.M) { return; }
$BODY
}
