// Rotary position embedding, Hugging Face Llama / Qwen2 convention, and its backward.
//   Pairs (d, d + HALF) of each head, HALF = HS / 2, rotated by angle a = pos[n] * inv_freq[d]:
//     out[d]        = x[d] * cos(a) - x[d + HALF] * sin(a)        (x * cos + rotate_half(x) * sin)
//     out[d + HALF] = x[d + HALF] * cos(a) + x[d] * sin(a)
//   Backward is the inverse rotation of the gradient: the same kernel with sin negated (u.sign = -1).
//   q (B, T, NH, HS), k (B, T, NKV, HS) f32, token n = b * T + t; pos (B*T) i32 per-token positions
//   (left padding, KV-cache offsets); inv_freq (HALF) f32 = theta^(-2d/HS), built by the launcher the
//   way HF builds it in float32 (1 / theta ** (arange(0, HS, 2).float() / HS)) or given by the caller
//   (rope_scaling variants).
//   Precision, matching HF in float32: the angle is rounded to f32 once, a = f32(f32(pos) * inv_freq)
//   (HF: inv_freq @ position_ids in float32, autocast off), and cos/sin of that f32 value are then
//   evaluated accurately (Cody-Waite reduction by pi/2 in three parts + minimax polynomials, ~1e-7
//   absolute), not with WGSL's cos/sin, which promise only 2^-11 absolute error and only on [-pi, pi].
//   The f32 angle itself differs from the exact pos * theta^(-2d/HS) by up to pos * 2^-24 rad
//   (about 1.2e-4 at pos 2000): that is HF's float32 behaviour, reproduced, not an error of this kernel.
//   The IO template slot declares the outputs qo, ko (read_write, bindings 3, 4) and loadQ/loadK: in place they read
//   qo/ko, out of place the inputs qi, ki (bindings 5, 6).
//   dispatch: grid1d(ceil(B*T * (NH + NKV) * HALF / 256)) workgroups of 256, one pair per thread.

struct Params { BT: u32, NH: u32, NKV: u32, HALF: u32, sign: f32, _p0: u32, _p1: u32, _p2: u32 }
@group(0) @binding(0) var<uniform> u: Params;

@group(0) @binding(1) var<storage, read> pos: array<i32>;
@group(0) @binding(2) var<storage, read> inv_freq: array<f32>;
$IO

// (cos a, sin a) for an f32 angle: a = k * pi/2 + r, |r| <= pi/4 (k * C1 is exact for |k| < 2^16,
// i.e. |a| < ~1e5), then Cephes' sinf/cosf polynomials on r and the quadrant k mod 4.
fn cosSin(a: f32) -> vec2f {
  let kf = round(a * 0.636619772367581343);
  let r = ((a - kf * 1.5703125) - kf * 4.837512969970703125e-4) - kf * 7.54978995489188216e-8;
  let z = r * r;
  let s = r + r * z * (-1.6666654611e-1 + z * (8.3321608736e-3 + z * -1.9515295891e-4));
  let c = 1.0 - 0.5 * z + z * z * (4.166664568298827e-2 + z * (-1.388731625493765e-3 + z * 2.443315711809948e-5));
  switch (i32(kf) & 3) {
    case 0: { return vec2f(c, s); }
    case 1: { return vec2f(-s, c); }
    case 2: { return vec2f(-c, -s); }
    default: { return vec2f(s, -c); }
  }
}

@compute @workgroup_size(256)
fn rotate(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = gid.x + gid.y * nw.x * 256u;
  let heads = u.NH + u.NKV;
  if (i >= u.BT * heads * u.HALF) { return; }
  let d = i % u.HALF;
  let h = (i / u.HALF) % heads;
  let n = i / (u.HALF * heads);
  let cs = cosSin(f32(pos[n]) * inv_freq[d]);
  let c = cs.x;
  let s = cs.y * u.sign;
  if (h < u.NH) {
    let j = (n * u.NH + h) * 2u * u.HALF + d;
    let x1 = loadQ(j);
    let x2 = loadQ(j + u.HALF);
    qo[j] = x1 * c - x2 * s;
    qo[j + u.HALF] = x2 * c + x1 * s;
  } else {
    let j = (n * u.NKV + h - u.NH) * 2u * u.HALF + d;
    let x1 = loadK(j);
    let x2 = loadK(j + u.HALF);
    ko[j] = x1 * c - x2 * s;
    ko[j + u.HALF] = x2 * c + x1 * s;
  }
}
