// RMSNorm (Llama / Qwen2: y = x / sqrt(mean(x^2) + eps) * w, all in f32) and its backward.
//   forward:   x (N, C) f32, w (C) f32 or 16-bit packed two per u32 ($WEIGHT_DECL, read through loadW),
//              out (N, C) f32, rstd (N) f32 = 1 / sqrt(mean_c x[n, c]^2 + eps), saved for backward.
//              dispatch: grid1d(N) workgroups of WG = $WG threads, one workgroup per row; the sum of squares
//              is a fixed-order tree reduction in workgroup memory (deterministic). WG follows C (about 4
//              channels a thread, 256 at most): idle lanes and barrier levels cost real time on CPU
//              implementations (SwiftShader runs every invocation), and a narrow row needs few threads.
//   backward_dx: dx[n, j] = rstd * (w[j] dy[n, j] - x[n, j] rstd^2 / C * sum_c dy[n, c] w[c] x[n, c])  (assign)
//              dy, x, dx (N, C) f32, rstd (N). dispatch: as forward.
//   forward_row, backward_dx_row: the same outputs, one thread per row (CPU adapters, Gpu.cpu): no workgroup
//              memory and no barrier; the row's sum takes WG partials and the same tree, in a private array
//              (bit for bit the 'wg' result). dispatch grid1d(ceil(N / 16)),
//              workgroup 16. On SwiftShader a barrier switches between all the workgroup's invocations
//              and the tree takes log2(WG) of them per row, which cost more than the row's arithmetic.
//   backward_dw: dw[c] += sum_n dy[n, c] x[n, c] rstd[n]  (accumulate, f32; full-parameter mode only)
//              two stages, no atomics: dw_partial reduces rows [k*RC, (k+1)*RC) into part (K, C),
//              RC = u.rows_per_chunk, K = ceil(N / RC), dispatch (ceil(C/256), K); dw_final adds the K
//              partials in order into dw, dispatch (ceil(C/256)). Thread per channel: coalesced rows.

struct Params { N: u32, C: u32, eps: f32, rows_per_chunk: u32, K: u32, _p0: u32, _p1: u32, _p2: u32 }
@group(0) @binding(0) var<uniform> u: Params;

$WEIGHT_DECL
$UNPACK

@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<storage, read_write> rstd: array<f32>;

const WG: u32 = $WGu;
var<workgroup> red: array<f32, WG>;

// Tree reduction of `red` (fixed order); the sum ends in red[0]. Call from uniform control flow.
fn reduceSum(lid: u32) -> f32 {
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    workgroupBarrier();
    if (lid < s) { red[lid] += red[lid + s]; }
  }
  return workgroupUniformLoad(&red[0]);
}

@compute @workgroup_size($WG)
fn forward(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nw: vec3u, @builtin(local_invocation_index) lid: u32) {
  let n = wid.x + wid.y * nw.x;
  if (n >= u.N) { return; } // uniform: the whole workgroup leaves
  let base = n * u.C;
  var ss = 0.0;
  for (var c = lid; c < u.C; c += WG) { let v = x[base + c]; ss += v * v; }
  red[lid] = ss;
  let r = inverseSqrt(reduceSum(lid) / f32(u.C) + u.eps);
  for (var c = lid; c < u.C; c += WG) { out[base + c] = x[base + c] * r * loadW(c); }
  if (lid == 0u) { rstd[n] = r; }
}

@group(0) @binding(5) var<storage, read> dy: array<f32>;
@group(0) @binding(6) var<storage, read_write> dx: array<f32>;

@compute @workgroup_size($WG)
fn backward_dx(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nw: vec3u, @builtin(local_invocation_index) lid: u32) {
  let n = wid.x + wid.y * nw.x;
  if (n >= u.N) { return; }
  let base = n * u.C;
  let r = rstd[n];
  var acc = 0.0;
  for (var c = lid; c < u.C; c += WG) { acc += dy[base + c] * loadW(c) * x[base + c]; }
  red[lid] = acc;
  let k = reduceSum(lid) * r * r / f32(u.C);
  for (var c = lid; c < u.C; c += WG) { dx[base + c] = r * (loadW(c) * dy[base + c] - x[base + c] * k); }
}

fn rowOf(gid: vec3u, nw: vec3u) -> u32 { return gid.x + gid.y * nw.x * 16u; }

// The workgroup's sum, one thread: the WG lanes' partials p[t] (elements t, t+WG, ...), then the same
// tree as reduceSum. The same operations in the same order, so 'row' gives exactly the bits of 'wg' (the
// fused kernels, which fold this norm in with the tree's order, are checked bit for bit against it).
fn treeSum(p: ptr<function, array<f32, WG>>) -> f32 {
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    for (var l = 0u; l < s; l++) { (*p)[l] += (*p)[l + s]; }
  }
  return (*p)[0];
}

@compute @workgroup_size(16)
fn forward_row(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let n = rowOf(gid, nw);
  if (n >= u.N) { return; }
  let base = n * u.C;
  var p: array<f32, WG>;
  for (var t = 0u; t < WG; t++) {
    var ss = 0.0;
    for (var c = t; c < u.C; c += WG) { let v = x[base + c]; ss += v * v; }
    p[t] = ss;
  }
  let r = inverseSqrt(treeSum(&p) / f32(u.C) + u.eps);
  for (var c = 0u; c < u.C; c++) { out[base + c] = x[base + c] * r * loadW(c); }
  rstd[n] = r;
}

@compute @workgroup_size(16)
fn backward_dx_row(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let n = rowOf(gid, nw);
  if (n >= u.N) { return; }
  let base = n * u.C;
  let r = rstd[n];
  var p: array<f32, WG>;
  for (var t = 0u; t < WG; t++) {
    var acc = 0.0;
    for (var c = t; c < u.C; c += WG) { acc += dy[base + c] * loadW(c) * x[base + c]; }
    p[t] = acc;
  }
  let k = treeSum(&p) * r * r / f32(u.C);
  for (var c = 0u; c < u.C; c++) { dx[base + c] = r * (loadW(c) * dy[base + c] - x[base + c] * k); }
}

@group(0) @binding(7) var<storage, read_write> part: array<f32>;
@group(0) @binding(8) var<storage, read_write> dw: array<f32>;

@compute @workgroup_size(256)
fn dw_partial(@builtin(global_invocation_id) gid: vec3u) {
  let c = gid.x;
  let k = gid.y;
  if (c >= u.C) { return; }
  let n1 = min(u.N, (k + 1u) * u.rows_per_chunk);
  var acc = 0.0;
  for (var n = k * u.rows_per_chunk; n < n1; n++) { acc += dy[n * u.C + c] * x[n * u.C + c] * rstd[n]; }
  part[k * u.C + c] = acc;
}

@compute @workgroup_size(256)
fn dw_final(@builtin(global_invocation_id) gid: vec3u) {
  let c = gid.x;
  if (c >= u.C) { return; }
  var acc = 0.0;
  for (var k = 0u; k < u.K; k++) { acc += part[k * u.C + c]; }
  dw[c] += acc;
}
