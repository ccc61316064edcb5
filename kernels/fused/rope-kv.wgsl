// RoPE with the split of the fused q/k/v output and the KV-cache append, in one dispatch:
//   qkv (B*T, (NH + 2 NKV) * HS) f32, the fused projection's rows: q heads, then k heads, then v heads
//   q (B, T, NH, HS) = rope(q);  k, v (B, Tcap, NKV, HS) at positions t0 + t: rope(k) and v
//   (the KV cache with Tcap its capacity and t0 its filled length, or plain (B, T, NKV, HS) with t0 = 0).
// The rotation is rope.wgsl's, on the same f32 angle with the same cos/sin (its cosSin function is pasted in), so q
// and k carry the bits that ropeForward then kvAppend give.
// With T0_GPU, t0 is read from klen (the cache's filled length), so the dispatch is the same at every
// decode step (Gpu recordings replay it).
// dispatch: grid1d(ceil(B*T * (NH + 2 NKV) * HALF / 64)), one (d, d + HALF) pair per thread.

struct Params { BT: u32, T: u32, NH: u32, NKV: u32, HALF: u32, Tcap: u32, t0: u32, _p: u32 }
@group(0) @binding(0) var<uniform> u: Params;
@group(0) @binding(1) var<storage, read> pos: array<i32>;
@group(0) @binding(2) var<storage, read> inv_freq: array<f32>;
@group(0) @binding(3) var<storage, read> qkv: array<f32>;
@group(0) @binding(4) var<storage, read_write> qo: array<f32>;
@group(0) @binding(5) var<storage, read_write> ko: array<f32>;
@group(0) @binding(6) var<storage, read_write> vo: array<f32>;
@group(0) @binding(7) var<storage, read> klen: array<i32>;

$COS_SIN

@compute @workgroup_size(64)
fn rope_kv(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = gid.x + gid.y * nw.x * 64u;
  let heads = u.NH + 2u * u.NKV;
  if (i >= u.BT * heads * u.HALF) { return; }
  let d = i % u.HALF;
  let hd = (i / u.HALF) % heads;
  let n = i / (u.HALF * heads);
  let HS = 2u * u.HALF;
  let src = (n * heads + hd) * HS + d;
  let x1 = qkv[src];
  let x2 = qkv[src + u.HALF];
  // the cache row of token n = b * T + t
  let row = (n / u.T) * u.Tcap + $T0 + n % u.T;
  if (hd >= u.NH + u.NKV) {
    let j = (row * u.NKV + hd - u.NH - u.NKV) * HS + d;
    vo[j] = x1;
    vo[j + u.HALF] = x2;
    return;
  }
  let cs = cosSin(f32(pos[n]) * inv_freq[d]);
  let c = cs.x;
  let s = cs.y;
  if (hd < u.NH) {
    let j = (n * u.NH + hd) * HS + d;
    qo[j] = x1 * c - x2 * s;
    qo[j + u.HALF] = x2 * c + x1 * s;
  } else {
    let j = (row * u.NKV + hd - u.NH) * HS + d;
    ko[j] = x1 * c - x2 * s;
    ko[j + u.HALF] = x2 * c + x1 * s;
  }
}
