// Skinny-M matmul ('gemv' variant, for decode: M = a few rows, typically the batch of sequences):
//   C[z] (M, N) = alpha * op(A[z]) (M, K) . op(B[z]) (K, N)  [+ bias (N)]  [+ C[z] when ACCUMULATE], M <= MR.
// Same buffers, uniforms and semantics as matmul.wgsl (binding 1 a, 2 b, 3 c, 4 bias).
// A workgroup of KT threads owns NC output columns (for every row): thread t walks K in steps of KT, so
// neighbouring threads read neighbouring elements (or vec4s) of one row of B (N, K) when TRANS_B (a Linear
// weight): every row of B is read once, coalesced. Each thread keeps MR x NC partial sums in registers
// (one A element feeds NC columns, one B element MR rows), then the workgroup sums the KT partials of each
// of the MR*NC outputs through workgroup memory: the upper half of the threads store, the lower half add
// theirs, then one thread per output sums the KT/2 partials (padded rows: conflict-free; 8.4 KiB at MR 16).
// The vec4 form (VEC4) reads A and B four K-elements at a time; the launcher picks it only when
// !transA && transB and every row start is a multiple of 4 elements (K, offsets and strides).
// Dispatch: grid1d(ceil(N / NC)) x batch (z), workgroup KT.

// Uniforms (struct Params) and bindings, the bias always declared: written by kernel.ts.
$HEADER

const KT = $KTu;
const NC = $NCu;
const MR = $MRu;
const HALF = KT / 2u;
const RS = HALF + 1u;
var<workgroup> red: array<f32, MR * NC * RS>;

var<private> aBase: u32;
var<private> bBase: u32;

$LOADS

@compute @workgroup_size(KT)
fn forward(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let n0 = (wg.x + wg.y * nwg.x) * NC;
  if (n0 >= u.N) { return; }   // grid1d may round the grid up: whole workgroups leave together
  aBase = u.offA + wg.z * u.strideA;
  bBase = u.offB + wg.z * u.strideB;
  let cBase = u.offC + wg.z * u.strideC;
  // Rows past M and columns past N read row M-1 / column N-1 (in range) and are never stored.
$ROWS
$ACC_DECL
  for (var k = t; k < KV; k += KT) {
$BODY
  }
  let h = t % HALF;
  if (t >= HALF) {
$STORE_RED
  }
  workgroupBarrier();
  if (t < HALF) {
$ADD_RED
  }
  workgroupBarrier();
  for (var o = t; o < MR * NC; o += KT) {
    var s = 0.0;
    for (var j = 0u; j < HALF; j++) { s += red[o * RS + j]; }
    let m = o / NC;
    let n = n0 + o % NC;
    if (m < u.M && n < u.N) {
      let i = cBase + m * u.N + n;
      var x = u.alpha * s;
$EPILOGUE
      c[i] = x;
    }
  }
}
