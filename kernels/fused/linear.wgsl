// Fused linear layers of the decode path: one dispatch computes a group of projections that share their
// input (q/k/v, or gate/up) from their weights concatenated along the output rows, with each sequence's
// LoRA expand and the block's epilogue (bias, residual add, SwiGLU) in the same threads; one dispatch
// before it (`shrink`) computes the LoRA h of every adapted module of the group and, with NORM (the
// RMSNorm folded in), each row's rstd; the input is then x normed on the fly, x[m, k] * rstd[m] * gamma[k],
// as rmsnorm.wgsl writes it, its rstd summed in rmsnorm's order (WG lanes, then its tree), so the bits
// match. Both are barrier-free (a thread per output, no workgroup memory), so they also suit CPU adapters.
//   x (M, K) f32, rows m = b * T + t; slots (B) i32, -1 (any value outside [0, S)) = no adapter
//   w (NW, K) the group's weights, module j on rows [cols[j], cols[j+1]); bias (NW) f32
//   A the adapted modules' lora_A (S, R, K) one after another, block j' at element aOff[j']
//   h (G' * M * R [+ M]): h[j', m, :] = x[m] A_j'[slot]^T, the adapted modules in group order (0 for
//     slot -1), then with NORM rstd (M) at element rOff; gamma (K) f32 the RMSNorm weight
//   Bl the adapted modules' lora_B (S, OUT_j, R) one after another, module j's at element bOff[j]
//   value(m, n) = x[m] . w[n] (+ bias[n]) (+ scale * h[hIdx[j], m] . Bl_j[slot, n - cols[j]])
// Every sum runs in index order with fma, as the 'direct' matmul and the LoRA kernels do, so on a CPU
// adapter the fused path gives the unfused one's bits; the bias and LoRA terms are added in its order.
// Epilogues: store out (M, NW) = value; residual out (M, NW) = value + res; swiglu
// out (M, I) = silu(g) * u with g = value(m, i), u = value(m, I + i), NW = 2I, and with SAVE_GU gu
// (2, M, I) = g then u (the backward's saved inputs).
// Bindings 1..10 are declared once; each entry point's auto layout holds only those it uses (at most 8).
// dispatch: shrink grid1d(ceil((G' * M * R [+ M]) / 64)); linear (ceil(NOUT / 32), ceil(M / 32)), NOUT
// the out columns, workgroups of 8 x 8 threads, each computing a 4 x 4 block of outputs.

struct Params {
  M: u32, K: u32, T: u32, R: u32,
  S: u32, NW: u32, NOUT: u32, scale: f32,
  cols: vec4u, // module j's first row in w; cols[G] = NW
  hIdx: vec4u, // module j's block in h, NONE when it has no adapter
  aOff: vec4u,
  bOff: vec4u,
  rOff: u32, eps: f32, _p0: u32, _p1: u32,
}
@group(0) @binding(0) var<uniform> u: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> slots: array<i32>;
@group(0) @binding(3) var<storage, read> A: array<f32>;
@group(0) @binding(4) var<storage, read_write> h: array<f32>;
@group(0) @binding(5) var<storage, read> w: array<$W_ELEM>;
@group(0) @binding(6) var<storage, read> bias: array<f32>;
@group(0) @binding(7) var<storage, read> Bl: array<f32>;
@group(0) @binding(8) var<storage, read> res: array<f32>;
@group(0) @binding(9) var<storage, read_write> out: array<f32>;
@group(0) @binding(10) var<storage, read_write> gu: array<f32>;
@group(0) @binding(11) var<storage, read> gamma: array<f32>;

const NONE = 0xffffffffu;
const WG: u32 = $WGu;

fn slotOf(m: u32) -> i32 {
  let s = slots[m / u.T];
  if (s < 0 || u32(s) >= u.S) { return -1; }
  return s;
}

/** 1 / sqrt(mean(x[m]^2) + eps), summed as rmsnorm.wgsl's workgroup of WG lanes does. */
fn rowRstd(m: u32) -> f32 {
  var red: array<f32, WG>;
  let base = m * u.K;
  for (var t = 0u; t < WG; t++) {
    var ss = 0.0;
    for (var c = t; c < u.K; c += WG) { let v = x[base + c]; ss += v * v; }
    red[t] = ss;
  }
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    for (var t = 0u; t < s; t++) { red[t] += red[t + s]; }
  }
  return inverseSqrt(red[0] / f32(u.K) + u.eps);
}

/** The group's input x[m, k]: with NORM, normed as rmsnorm.wgsl writes it (x * rstd * gamma). */
fn xIn(m: u32, k: u32, r: f32) -> f32 {
$X_IN
}

@compute @workgroup_size(64)
fn shrink(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * 64u;
  let per = u.M * u.R;
  let nh = u.NW * per; // NW: the adapted module count G' here
  if (i >= nh + $NORM_ROWS) { return; }
  if (i >= nh) { h[u.rOff + i - nh] = rowRstd(i - nh); return; }
$SHRINK_H
}

$LOAD_W

/** The saved rstd of row m (1 without NORM), and 0 past the last row. */
fn rowR(m: u32) -> f32 { if (m < u.M) { return $SAVED_RSTD; } return 0.0; }
/** The input x[m, k], 0 past the last row; w[n, k], 0 past the last row of w. */
fn getX(m: u32, k: u32, r: f32) -> f32 { if (m < u.M) { return xIn(m, k, r); } return 0.0; }
fn getW(n: u32, k: u32) -> f32 { if (n < u.NW) { return ldW(n * u.K + k); } return 0.0; }

/**
 * Rows m0..m0+3 of x against rows n0..n0+3 of w: element q of the result is row m0 + q, a vec4 over the
 * 4 columns (the 'direct' matmul's 4x4 block: 8 loads for 16 fma per k, the bounds checked only at edges).
 */
fn dot44(m0: u32, n0: u32) -> array<vec4f, 4> {
  let r = vec4f(rowR(m0), rowR(m0 + 1u), rowR(m0 + 2u), rowR(m0 + 3u));
  var c0 = vec4f(0.0);
  var c1 = vec4f(0.0);
  var c2 = vec4f(0.0);
  var c3 = vec4f(0.0);
  if (m0 + 4u <= u.M && n0 + 4u <= u.NW) {
    let w0 = n0 * u.K;
    for (var k = 0u; k < u.K; k++) {
      let wv = vec4f(ldW(w0 + k), ldW(w0 + u.K + k), ldW(w0 + 2u * u.K + k), ldW(w0 + 3u * u.K + k));
      c0 = fma(vec4f(xIn(m0, k, r.x)), wv, c0);
      c1 = fma(vec4f(xIn(m0 + 1u, k, r.y)), wv, c1);
      c2 = fma(vec4f(xIn(m0 + 2u, k, r.z)), wv, c2);
      c3 = fma(vec4f(xIn(m0 + 3u, k, r.w)), wv, c3);
    }
  } else {
    for (var k = 0u; k < u.K; k++) {
      let wv = vec4f(getW(n0, k), getW(n0 + 1u, k), getW(n0 + 2u, k), getW(n0 + 3u, k));
      c0 = fma(vec4f(getX(m0, k, r.x)), wv, c0);
      c1 = fma(vec4f(getX(m0 + 1u, k, r.y)), wv, c1);
      c2 = fma(vec4f(getX(m0 + 2u, k, r.z)), wv, c2);
      c3 = fma(vec4f(getX(m0 + 3u, k, r.w)), wv, c3);
    }
  }
  return array<vec4f, 4>(c0, c1, c2, c3);
}

/** The bias and LoRA terms of output column n (row n of w) added onto the product acc for row m. */
fn finish(m: u32, n: u32, acc: f32) -> f32 {
  var v = acc;
$FINISH
  return v;
}

@compute @workgroup_size(8, 8)
fn linear(@builtin(global_invocation_id) gid: vec3u) {
  let n0 = gid.x * 4u;
  let m0 = gid.y * 4u;
  if (n0 >= u.NOUT || m0 >= u.M) { return; }
$EPILOGUE
}
