// The skinny-M form of linear.wgsl's `linear` (appended to it): decode on a GPU, the rows (the sequences)
// in blocks of MR (<= 16) along the grid's z. As matmul/gemv.wgsl, a workgroup of KT threads owns NC output columns for every row: thread t
// walks K in steps of KT, so neighbouring threads read neighbouring elements of a weight row (coalesced,
// each row read once), keeping MR x CW partial sums in registers; the KT partials of each output meet in
// workgroup memory (the upper half stores, the lower half adds, one thread per output sums the rest), and
// that thread runs `finish` (bias, LoRA expand) and the epilogue. A SwiGLU output needs two weight rows
// (gate n, up NOUT + n): there NC = 2 and CW = 4 rows a workgroup, else NC = CW = 4.
// The 'direct' 4x4 blocks of `linear` read w with a stride of K between neighbouring threads: uncoalesced,
// about twice the unfused path's decode step on an H200, so GPUs take this form for M <= MR.
// With INLINE (fused.ts's Inline) the same walk also sums the rows' squares and the LoRA h of the workgroup's
// module(s), met in `red` with the product; the epilogue then reads h and the rows' rstd from hS and rS.
// dispatch: (grid1d(ceil(NOUT / NC)), ceil(M / MR)), workgroup KT.

const KT = $KTu; // fused.ts's GEMV_KT
const NC = $NCu;
const CW = 4u;
const MR = $MRu;
const HALF = KT / 2u;
const NACC = $NACCu; // partial sums a thread keeps (MR * CW of the product, and the inline prologue's)
const RS = HALF + 1u; // padded rows: the adds below are conflict-free
var<workgroup> red: array<f32, NACC * RS>;
$INLINE_DECL

/** The sum of output o's KT partials (o = m * CW + c). */
fn redSum(o: u32) -> f32 {
  var s = 0.0;
  for (var j = 0u; j < HALF; j++) { s += red[o * RS + j]; }
  return s;
}

@compute @workgroup_size(KT)
fn gemv(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let o0 = (wg.x + wg.y * nwg.x) * NC;
  let mb = wg.z * MR; // the workgroup's first row: row blocks of MR along z
  if (o0 >= u.NOUT) { return; } // grid1d may round the grid up: whole workgroups leave together
$GEMV_BODY
  for (var o = t; o < MR * NC; o += KT) {
    let lm = o / NC;
    let m = mb + lm;
    let c = o % NC;
    let n = o0 + c;
    if (m < u.M && n < u.NOUT) {
$GEMV_OUT
    }
  }
}
