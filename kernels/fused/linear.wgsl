// Fused linear layers of the decode path: one dispatch computes a group of projections that share their
// input (q/k/v, or gate/up) from their weights concatenated along the output rows, with each sequence's
// LoRA expand and the block's epilogue (bias, residual add, SwiGLU) in the same threads; one dispatch
// before it (`shrink`) computes the LoRA h of every adapted module of the group. Both are barrier-free
// (a thread per output, no workgroup memory), so they also suit CPU adapters.
//   x (M, K) f32, rows m = b * T + t; slots (B) i32, -1 (any value outside [0, S)) = no adapter
//   w (NW, K) the group's weights, module j on rows [cols[j], cols[j+1]); bias (NW) f32
//   A the adapted modules' lora_A (S, R, K) one after another, block j' at element aOff[j']
//   h (G', M, R): h[j', m, :] = x[m] A_j'[slot]^T, the adapted modules in group order (0 for slot -1)
//   Bl the adapted modules' lora_B (S, OUT_j, R) one after another, module j's at element bOff[j]
//   value(m, n) = x[m] . w[n] (+ bias[n]) (+ scale * h[hIdx[j], m] . Bl_j[slot, n - cols[j]])
// Every sum runs in index order with fma, as the 'direct' matmul and the LoRA kernels do, so on a CPU
// adapter the fused path gives the unfused one's bits; the bias and LoRA terms are added in its order.
// Epilogues: store out (M, NW) = value; residual out (M, NW) = value + res; swiglu
// out (M, I) = silu(g) * u with g = value(m, i), u = value(m, I + i), NW = 2I, and with SAVE_GU gu
// (2, M, I) = g then u (the backward's saved inputs).
// Bindings 1..10 are declared once; each entry point's auto layout holds only those it uses (at most 8).
// dispatch: shrink grid1d(ceil(G' * M * R / 64)); linear (ceil(NOUT / 64), ceil(M / 4)), NOUT the
// out columns; each linear thread computes one column for 4 rows, reading each weight once.

struct Params {
  M: u32, K: u32, T: u32, R: u32,
  S: u32, NW: u32, NOUT: u32, scale: f32,
  cols: vec4u, // module j's first row in w; cols[G] = NW
  hIdx: vec4u, // module j's block in h, NONE when it has no adapter
  aOff: vec4u,
  bOff: vec4u,
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

const NONE = 0xffffffffu;

fn slotOf(m: u32) -> i32 {
  let s = slots[m / u.T];
  if (s < 0 || u32(s) >= u.S) { return -1; }
  return s;
}

@compute @workgroup_size(64)
fn shrink(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * 64u;
  let per = u.M * u.R;
  if (i >= u.NW * per) { return; } // NW: the adapted module count G' here
  let j = i / per;
  let m = (i / u.R) % u.M;
  let s = slotOf(m);
  if (s < 0) { h[i] = 0.0; return; }
  let aRow = u.aOff[j] + (u32(s) * u.R + i % u.R) * u.K;
  var acc = 0.0;
  for (var k = 0u; k < u.K; k++) { acc = fma(x[m * u.K + k], A[aRow + k], acc); }
  h[i] = acc;
}

$LOAD_W

/** x[m, k], 0 past the last row. */
fn getX(m: u32, k: u32) -> f32 { if (m < u.M) { return x[m * u.K + k]; } return 0.0; }

/** Row n of w against rows m0..m0+3 of x. */
fn dot4(m0: u32, n: u32) -> vec4f {
  var acc = vec4f(0.0);
  let wRow = n * u.K;
  for (var k = 0u; k < u.K; k++) {
    acc = fma(vec4f(getX(m0, k), getX(m0 + 1u, k), getX(m0 + 2u, k), getX(m0 + 3u, k)), vec4f(ldW(wRow + k)), acc);
  }
  return acc;
}

/** The bias and LoRA terms of output column n (row n of w) added onto the product acc for row m. */
fn finish(m: u32, n: u32, acc: f32) -> f32 {
  var v = acc;
$FINISH
  return v;
}

@compute @workgroup_size(64)
fn linear(@builtin(global_invocation_id) gid: vec3u) {
  let n = gid.x;
  let m0 = gid.y * 4u;
  if (n >= u.NOUT || m0 >= u.M) { return; }
$EPILOGUE
}
