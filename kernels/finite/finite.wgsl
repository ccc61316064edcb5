// Non-finite count: adds the number of NaN / ±Inf values of a flat f32 tensor x (n) to flags[slot]
// (flags (K) u32, accumulated across calls until the caller clears it). The test is on the bit pattern
// (exponent all ones): compilers may fold x != x, and max(NaN, 0) may return 0 (SwiftShader), so a value
// cannot be trusted to show its own NaN. Two entry points, the same loop, no workgroup memory and no barrier
// (a count is rarely non-zero, so a thread adds its count with one atomic, only when it is not zero):
//   count:     up to 256 workgroups of 256 (grid1d), each thread strides over the tensor (GPUs: many threads
//              hide the memory latency);
//   countFew:  for CPU adapters (Gpu.cpu): 1 to 16 workgroups of 64, so every thread walks at least 256
//              elements. SwiftShader runs a workgroup's invocations four at a time as CPU code, and each
//              group of four costs about a microsecond to start, whatever it then does: `count` spent more
//              on starting its 65 536 invocations than on the values (~40 ns an element at n = 2^20).
// Both stride by u.stride = the dispatch's thread count, so neighbouring threads read neighbouring values.

struct Params { n: u32, slot: u32, stride: u32, _pad: u32 }
@group(0) @binding(0) var<uniform> u: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> flags: array<atomic<u32>>;

fn nonFinite(v: f32) -> bool { return (bitcast<u32>(v) & 0x7f800000u) == 0x7f800000u; }

fn countFrom(first: u32) {
  var c = 0u;
  for (var i = first; i < u.n; i += u.stride) {
    if (nonFinite(x[i])) { c += 1u; }
  }
  if (c != 0u) { atomicAdd(&flags[u.slot], c); }
}

@compute @workgroup_size(256)
fn count(@builtin(global_invocation_id) g: vec3u) { countFrom(g.x); }

fn bad4(v: vec4f) -> u32 {
  let e = vec4u(0x7f800000u);
  let hit = select(vec4u(0u), vec4u(1u), (bitcast<vec4u>(v) & e) == e);
  return hit.x + hit.y + hit.z + hit.w;
}

@compute @workgroup_size(64)
fn countFew(@builtin(global_invocation_id) g: vec3u) {
  // Thread t takes the 4 values 4*(t + j*stride) .. +3 per step (no branch per value), then the n % 4 tail.
  var c = 0u;
  let n4 = u.n / 4u;
  for (var q = g.x; q < n4; q += u.stride) {
    let i = 4u * q;
    c += bad4(vec4f(x[i], x[i + 1u], x[i + 2u], x[i + 3u]));
  }
  let i = 4u * n4 + g.x;
  if (i < u.n && nonFinite(x[i])) { c += 1u; }
  if (c != 0u) { atomicAdd(&flags[u.slot], c); }
}
