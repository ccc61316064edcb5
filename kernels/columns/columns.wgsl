// A block of columns copied between two row-major f32 matrices with the same rows: the LM head's chunks
// of a vocabulary split by rows (a chunk's logits into the full row, the full row's gradient out of it).
//   copy: dst[r, dstCol + j] = src[r, srcCol + j]     src (R, srcC), dst (R, dstC), j < cols
// dispatch: (ceil(cols / 256), R), workgroup 256.

struct Params { cols: u32, srcC: u32, dstC: u32, srcCol: u32, dstCol: u32, R: u32, _p0: u32, _p1: u32 }
@group(0) @binding(0) var<uniform> u: Params;
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> dst: array<f32>;

@compute @workgroup_size(256)
fn copy(@builtin(global_invocation_id) g: vec3u) {
  let j = g.x;
  let r = g.y;
  if (j >= u.cols || r >= u.R) { return; }
  dst[r * u.dstC + u.dstCol + j] = src[r * u.srcC + u.srcCol + j];
}
