// KV-cache append: writes the keys or values of Tq new positions into the cache at position t0.
//   src   (B, Tq, W)          W = NKV * HS, the new tokens' k or v (after RoPE for k); f32, or i32/u32
//                             (generation also collects sampled tokens this way), copied as raw words
//   cache (B, Tcap, W)        cache[b, t0 + i, :] = src[b, i, :] for i < Tq (t0 + Tq <= Tcap)
// With T0_GPU, t0 is read from t0buf (a KV cache's filled length), so the dispatch is the same at every
// decode step (Gpu recordings replay it).
// dispatch: (ceil(W / 64), Tq, B), workgroup 64.

struct Params { Tq: u32, W: u32, Tcap: u32, t0: u32 }
@group(0) @binding(0) var<uniform> u: Params;
@group(0) @binding(1) var<storage, read> src: array<$ELEM>;
@group(0) @binding(2) var<storage, read_write> cache: array<$ELEM>;
@group(0) @binding(3) var<storage, read> t0buf: array<i32>;

@compute @workgroup_size(64)
fn append(@builtin(global_invocation_id) g: vec3u) {
  let w = g.x;
  let i = g.y;
  let b = g.z;
  if (w >= u.W || i >= u.Tq) { return; }
  cache[(b * u.Tcap + $T0 + i) * u.W + w] = src[(b * u.Tq + i) * u.W + w];
}
