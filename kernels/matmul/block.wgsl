// Register-block matmul ('block' variant, for CPU WebGPU implementations such as SwiftShader):
//   C[z] (M, N) = alpha * op(A[z]) (M, K) . op(B[z]) (K, N)  [+ bias (N)]  [+ C[z] when ACCUMULATE].
// Same buffers, uniforms and semantics as matmul.wgsl (binding 1 a, 2 b, 3 c, 4 bias). Each thread computes
// a TM x TN block of C straight from global memory: no workgroup memory, no barriers (like direct.wgsl).
// Why another form: SwiftShader runs four invocations at once as SIMD lanes, and a storage load at a
// per-lane index is a gather (four scalar loads, each behind a branch), which costs far more than the
// multiply-adds; so the cost is the loads per multiply-add. The 4 x 4 direct block loads 8 values (4 of A,
// 4 of B) per 16 multiply-adds and, for a 16-bit B, a whole u32 word per element it keeps half of. Here:
//   - a 16-bit B is read a word (two elements) at a time, both halves used: along K when TRANS_B (a Linear
//     weight (N, K): 'kpair', K steps of 2) or along N otherwise ('npair', column pairs);
//   - TM and TN are compile-time (TM 1 for decode rows, so M = 1 wastes no rows; 4 for longer products),
//     so a 4 x 8 block loads 12 values per 32 multiply-adds (kpair: 16 per 64);
//   - rows past M and columns past N read row M-1 / column N-1 (in range, no branch in the loop) and are
//     never stored.
// Dispatch: (ceil(ceil(N / TN) / WG), ceil(M / TM), batch), workgroup WG (1-D, along the column blocks).

// Uniforms (struct Params) and bindings, the bias always declared: written by kernel.ts.
$HEADER

$LOADS

fn storeC(i: u32, col: u32, v: f32) {
  var x = u.alpha * v;
$EPILOGUE
  c[i] = x;
}

@compute @workgroup_size($WG)
fn forward(@builtin(global_invocation_id) gid: vec3u) {
  let n0 = gid.x * $TNu;
  let m0 = gid.y * $TMu;
  if (n0 >= u.N || m0 >= u.M) { return; }
  let aBase = u.offA + gid.z * u.strideA;
  let bBase = u.offB + gid.z * u.strideB;
$SETUP
$ACC_DECL
$LOOP
  let cBase = u.offC + gid.z * u.strideC;
$STORE
}
