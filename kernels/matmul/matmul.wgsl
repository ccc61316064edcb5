// Tiled, register-blocked f32 matmul, batched:
//   C[z] (M, N) = alpha * op(A[z]) (M, K) . op(B[z]) (K, N)  [+ bias (N)]  [+ C[z] when ACCUMULATE]
// Buffers (all row-major, element offsets; z = batch index = workgroup_id.z):
//   a (binding 1) f32:   A[z] starts at offA + z*strideA; (M, K), or (K, M) when TRANS_A.
//   b (binding 2):       B[z] starts at offB + z*strideB; (K, N), or (N, K) when TRANS_B. f32, or 16-bit
//                        (bf16/f16) packed two per u32: element i in word i/2; indices are logical elements.
//   c (binding 3) f32:   C[z] starts at offC + z*strideC; (M, N).
//   bias (binding 4) f32 (N), only when HAS_BIAS.
// A stride of 0 broadcasts that operand over the batch (one weight for every batch).
// Tiles (compile-time, in the program key): a workgroup of WG = (BM/TM)*(BN/TN) threads computes a
// BM x BN block of C; each thread a TM x TN register block made of 4x4 sub-blocks strided by 4*BM/TM rows
// and 4*BN/TN columns, so neighbouring threads read neighbouring vec4s of the shared tiles (no bank conflicts).
// K advances in steps of BK through two shared buffers (double buffering): the next tile is fetched from
// global memory into registers while the current one is multiplied, then stored to the other buffer;
// one barrier per step. A step is unrolled; the loop holds two steps, one per buffer (constant indices) when a
// step is small, and one step with the buffer chosen at run time when it is large (see matmulSource).
// Shared A is stored transposed (As[k][m]) so both operands are read as vec4 along the output dimension;
// rows are padded by one vec4 so the transposing stores do not collide in banks.
// Edge tiles (M, N, K not multiples of the tile) load zeros and store only in-range elements.
// vec4 loads (compile-time, ':va' / ':vb' in the key): an f32 operand whose 4 elements per load run along
// its contiguous dim (A with TRANS_A, B without TRANS_B), 4-aligned, is bound as array<vec4f> and a full
// tile loads one vec4 instead of 4 scalars; edge tiles read single elements of it.
// Thread (tx, ty) of the (BM/TM) x (BN/TN) grid: li % NTX, li / NTX; with ':w' in the key, 8 x 4 threads a
// warp, so each warp reads fewer distinct shared vec4s per k (see warpLayout in tile.ts).
// Dispatch: (ceil(N/BN), ceil(M/BM), batch), workgroup WG.
// Split-K (compile-time, ':k' in the key): workgroup z = b * splits + s (batch b, slice s) multiplies only
// the K slice [s*kLen, min(K, (s+1)*kLen)) and writes its raw partial product (no alpha, bias or accumulate)
// to c = a workspace at z*M*N; splitk.wgsl then sums the slices in a fixed order (deterministic: no float
// atomics). The K_BEGIN / K_END placeholders are the slice bounds (0 and u.K without a split), K_LEN its
// length from values the uniformity analysis accepts (a barrier follows the loop on nt).
//
// Backward: for C = alpha*op(A).op(B), dop(A) = alpha*dC.op(B)^T and dop(B) = alpha*op(A)^T.dC, which are
// this same kernel with other transposes (matmulBackward in matmul.ts picks them); a gradient of an operand
// broadcast over the batch is summed over the batch by accumulating dispatches.

// Uniforms (struct Params) and bindings, the bias always declared: written by kernel.ts.
$HEADER

$CONSTS

// [buffer][k][m or n / 4]: the buffer index is the only one not known at compile time or bounded by the
// invocation index, so robustness clamps it once per step rather than every read
var<workgroup> As: array<array<array<vec4f, SA4>, BK>, 2>;
var<workgroup> Bs: array<array<array<vec4f, SB4>, BK>, 2>;

var<private> m0: u32;
var<private> n0: u32;
var<private> aBase: u32;
var<private> bBase: u32;
var<private> cBase: u32;
var<private> kBegin: u32;
var<private> kEnd: u32;
$REGS

$LOAD_A
$LOAD_B

// Element (m, k) of op(A) and (k, n) of op(B), zero outside the matrix.
fn getA(m: u32, k: u32) -> f32 { if (m < u.M && k < $K_END) { return ldA($A_INDEX); } return 0.0; }
fn getB(k: u32, n: u32) -> f32 { if (k < $K_END && n < u.N) { return ldB($B_INDEX); } return 0.0; }

// Global -> registers for the K step starting at k0 (unchecked when the whole tile is inside).
fn loadTiles(k0: u32) {
  if (m0 + BM <= u.M && k0 + BK <= $K_END) {
$LOAD_A_FULL
  } else {
$LOAD_A_EDGE
  }
  if (n0 + BN <= u.N && k0 + BK <= $K_END) {
$LOAD_B_FULL
  } else {
$LOAD_B_EDGE
  }
}

// Registers -> shared buffer p.
fn storeTiles(p: u32) {
$STORE_TILES
}

fn storeC(row: u32, col: u32, v: vec4f) {
  if (row >= u.M) { return; }
  let base = cBase + row * u.N + col;
  for (var q = 0u; q < 4u; q++) {
    if (col + q < u.N) {
      var x = u.alpha * v[q];
$EPILOGUE
      c[base + q] = x;
    }
  }
}

@compute @workgroup_size(WG)
fn forward(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wg: vec3u) {
  m0 = wg.y * BM;
  n0 = wg.x * BN;
$SETUP_Z
$LOAD_COORDS
$THREAD_XY
$ACC_DECL
  let nt = ($K_LEN + BK - 1u) / BK;
  loadTiles($K_BEGIN);
  storeTiles(0u);
  workgroupBarrier();
  var t = 0u;
  loop {
$STEPS
  }
$STORE_C
}
