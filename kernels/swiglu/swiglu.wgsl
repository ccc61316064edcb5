// SwiGLU activation of the MLP (Llama / Qwen2: down_proj(silu(gate_proj(x)) * up_proj(x))) and its backward.
//   forward:  out[i] = silu(gate[i]) * up[i],  silu(g) = g * sigmoid(g)
//             gate, up, out (N, I) f32, flat index i < n = N*I.
//   backward: dgate[i] = dout[i] * up[i] * sigmoid(g) * (1 + g * (1 - sigmoid(g)))     (assign)
//             dup[i]   = dout[i] * silu(g)                                             (assign)
//             gate, up, dout, dgate, dup (N, I) f32.
//   dispatch: grid1d(ceil(n / 256)) workgroups of 256, one element per thread; the flat index is
//             x + y * (workgroups in x) * 256, so n may exceed 65535 * 256.

struct Params { n: u32, _p0: u32, _p1: u32, _p2: u32 }
@group(0) @binding(0) var<uniform> u: Params;

@group(0) @binding(1) var<storage, read> gate: array<f32>;
@group(0) @binding(2) var<storage, read> up: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

// exp(-g) overflows to +inf for g < -88: sigmoid is then 0 and silu 0, as in float64.
fn sigmoid(g: f32) -> f32 { return 1.0 / (1.0 + exp(-g)); }

@compute @workgroup_size(256)
fn forward(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = gid.x + gid.y * nw.x * 256u;
  if (i >= u.n) { return; }
  let g = gate[i];
  out[i] = g * sigmoid(g) * up[i];
}

@group(0) @binding(4) var<storage, read> dout: array<f32>;
@group(0) @binding(5) var<storage, read_write> dgate: array<f32>;
@group(0) @binding(6) var<storage, read_write> dup: array<f32>;

@compute @workgroup_size(256)
fn backward(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = gid.x + gid.y * nw.x * 256u;
  if (i >= u.n) { return; }
  let g = gate[i];
  let s = sigmoid(g);
  let d = dout[i];
  dgate[i] = d * up[i] * s * (1.0 + g * (1.0 - s));
  dup[i] = d * g * s;
}
