// The second pass of a split-K matmul: sums the slices' partial products in a fixed order (slice 0 first,
// so the result is deterministic) and applies the epilogue the first pass left out:
//   C[b] (M, N) = alpha * sum_s W[b * splits + s] [+ bias (N)] [+ C[b] when ACCUMULATE]
// Buffers: w (binding 1) f32, the workspace of batch * splits (M, N) partials, slice-major within a batch;
// c (binding 2) f32, C[b] at offC + b*strideC; bias (binding 3) f32 (N), only when HAS_BIAS.
// Dispatch: grid1d(ceil(batch * M * N / 256)) workgroups of 256, one output element per thread.

struct Params {
  MN: u32, N: u32, splits: u32, batch: u32,
  strideC: u32, offC: u32, alpha: f32, _pad: u32,
}
@group(0) @binding(0) var<uniform> u: Params;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
$BIAS_DECL

@compute @workgroup_size(256)
fn reduce(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * 256u;
  if (i >= u.MN * u.batch) { return; }
  let b = i / u.MN;
  let e = i - b * u.MN;
  var s = 0.0;
  for (var j = 0u; j < u.splits; j++) { s += w[(b * u.splits + j) * u.MN + e]; }
  let ci = u.offC + b * u.strideC + e;
  var x = u.alpha * s;
$EPILOGUE
  c[ci] = x;
}
