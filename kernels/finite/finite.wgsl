// Non-finite count: adds the number of NaN / ±Inf values of a flat f32 tensor x (n) to flags[slot]
// (flags (K) u32, accumulated across calls until the caller clears it). The test is on the bit pattern
// (exponent all ones): compilers may fold x != x, and max(NaN, 0) may return 0 (SwiftShader), so a value
// cannot be trusted to show its own NaN. Dispatch: up to 256 workgroups of 256 (grid1d), each thread
// strides over the tensor and adds its count with one atomic, only when it is not zero: no workgroup
// memory and no barrier (CPU implementations pay for every barrier, and a count is rarely non-zero).

struct Params { n: u32, slot: u32, stride: u32, _pad: u32 }
@group(0) @binding(0) var<uniform> u: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> flags: array<atomic<u32>>;

fn nonFinite(v: f32) -> bool { return (bitcast<u32>(v) & 0x7f800000u) == 0x7f800000u; }

@compute @workgroup_size(256)
fn count(@builtin(global_invocation_id) g: vec3u) {
  var c = 0u;
  for (var i = g.x; i < u.n; i += u.stride) {
    if (nonFinite(x[i])) { c += 1u; }
  }
  if (c != 0u) { atomicAdd(&flags[u.slot], c); }
}
