// Elementwise ops over flat f32 tensors of n elements (the residual stream and the value head's MLP).
//   add:          y[i] = y[i] + alpha * x[i]                       (residual accumulation)
//   relu:         y[i] = max(x[i], 0)                              (x and y are different buffers)
//   relu_backward dx[i] = select(0, dy[i], x[i] > 0)               x is relu's input (or output: same sign test)
//   addBias:      y[r, c] = y[r, c] + bias[c]                      y (n/C, C), bias (C)
// dispatch: grid1d(ceil(n / 256)) workgroups of 256; the flat index is x + y * (workgroups in x) * 256, so n
// may exceed 65535 * 256 (grid1d then spreads the workgroups evenly over y rows).

struct Params { n: u32, C: u32, alpha: f32, _pad: u32 }
@group(0) @binding(0) var<uniform> u: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<storage, read> dy: array<f32>;

fn index(g: vec3u, nw: vec3u) -> u32 { return g.x + g.y * nw.x * 256u; }

@compute @workgroup_size(256)
fn add(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw);
  if (i < u.n) { y[i] = y[i] + u.alpha * x[i]; }
}

@compute @workgroup_size(256)
fn relu(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw);
  if (i < u.n) { y[i] = max(x[i], 0.0); }
}

@compute @workgroup_size(256)
fn relu_backward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw);
  if (i < u.n) { y[i] = select(0.0, dy[i], x[i] > 0.0); }
}

@compute @workgroup_size(256)
fn add_bias(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw);
  if (i < u.n) { y[i] = y[i] + x[i % u.C]; }
}
