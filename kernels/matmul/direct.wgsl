// Direct matmul ('direct' variant, for CPU WebGPU implementations such as SwiftShader):
//   C[z] (M, N) = alpha * op(A[z]) (M, K) . op(B[z]) (K, N)  [+ bias (N)]  [+ C[z] when ACCUMULATE].
// Same buffers, uniforms and semantics as matmul.wgsl (binding 1 a, 2 b, 3 c, 4 bias). Each thread computes
// a 4x4 block of C straight from global memory: no workgroup memory and no barriers. On a GPU the tiled
// kernel is far faster; on a CPU implementation every invocation runs as CPU code and every barrier is a
// switch between them, so the tiled kernel's 256 threads x 2 barriers per K step cost more than its
// arithmetic (measured on SwiftShader: about 1.3 us per invocation and barrier), and this one has neither.
// Dispatch: (ceil(N / 32), ceil(M / 32), batch), workgroup 8 x 8.

// Uniforms (struct Params) and bindings, the bias always declared: written by kernel.ts.
$HEADER

var<private> aBase: u32;
var<private> bBase: u32;

fn ldA(i: u32) -> f32 { return a[i]; }
$LOAD_B

// Buffer indices of element (m, k) of op(A) and (k, n) of op(B) (the transposes are compile-time).
fn iA(m: u32, k: u32) -> u32 { return $A_INDEX; }
fn iB(k: u32, n: u32) -> u32 { return $B_INDEX; }
// The same elements, zero outside the matrix (edge blocks; k < K always holds).
fn getA(m: u32, k: u32) -> f32 { if (m < u.M) { return ldA(iA(m, k)); } return 0.0; }
fn getB(k: u32, n: u32) -> f32 { if (n < u.N) { return ldB(iB(k, n)); } return 0.0; }

fn storeC(base: u32, row: u32, col: u32, v: vec4f) {
  if (row >= u.M) { return; }
  let i0 = base + row * u.N + col;
  for (var q = 0u; q < 4u; q++) {
    if (col + q < u.N) {
      let i = i0 + q;
      var x = u.alpha * v[q];
$EPILOGUE
      c[i] = x;
    }
  }
}

@compute @workgroup_size(8, 8)
fn forward(@builtin(global_invocation_id) gid: vec3u) {
  let n0 = gid.x * 4u;
  let m0 = gid.y * 4u;
  if (m0 >= u.M || n0 >= u.N) { return; }
  aBase = u.offA + gid.z * u.strideA;
  bBase = u.offB + gid.z * u.strideB;
  var c0 = vec4f(0.0);
  var c1 = vec4f(0.0);
  var c2 = vec4f(0.0);
  var c3 = vec4f(0.0);
  if (m0 + 4u <= u.M && n0 + 4u <= u.N) {
    for (var k = 0u; k < u.K; k++) {
      let bv = vec4f(ldB(iB(k, n0)), ldB(iB(k, n0 + 1u)), ldB(iB(k, n0 + 2u)), ldB(iB(k, n0 + 3u)));
      c0 = fma(vec4f(ldA(iA(m0, k))), bv, c0);
      c1 = fma(vec4f(ldA(iA(m0 + 1u, k))), bv, c1);
      c2 = fma(vec4f(ldA(iA(m0 + 2u, k))), bv, c2);
      c3 = fma(vec4f(ldA(iA(m0 + 3u, k))), bv, c3);
    }
  } else {
    for (var k = 0u; k < u.K; k++) {
      let bv = vec4f(getB(k, n0), getB(k, n0 + 1u), getB(k, n0 + 2u), getB(k, n0 + 3u));
      c0 = fma(vec4f(getA(m0, k)), bv, c0);
      c1 = fma(vec4f(getA(m0 + 1u, k)), bv, c1);
      c2 = fma(vec4f(getA(m0 + 2u, k)), bv, c2);
      c3 = fma(vec4f(getA(m0 + 3u, k)), bv, c3);
    }
  }
  let base = u.offC + gid.z * u.strideC;
  storeC(base, m0, n0, c0);
  storeC(base, m0 + 1u, n0, c1);
  storeC(base, m0 + 2u, n0, c2);
  storeC(base, m0 + 3u, n0, c3);
}
