// The clipped PPO policy loss of one micro-batch on the GPU, writing its per-row gradients for the log-prob
// head's backward and adding its sums into a small accumulator, so a minibatch of micro-batches is recorded
// without a readback and the CPU reads one set of sums per minibatch. Same formulas as src/marft/losses.ts
// (ppoPolicyLoss, actionLevelPolicyLoss), in f32:
//   ratio = exp(logRatio); s1 = -ratio A; s2 = -clamp(ratio, 1 - clip, 1 + clip) A; surrogate term max(s1, s2)
//   dL/dlogRatio = s1 >= s2 ? -ratio A : 0;  KL to the reference: k1 = logp - ref (d = 1),
//   k3 = e^(ref - logp) - (ref - logp) - 1 (d = 1 - e^(ref - logp));  dL/dH = -c_H w.
//   token:  a unit is a row n with mask m = tok[n].w; w = m / Z, logRatio = logp[n] - old[n]; the row's
//           dlogp = w (dL/dlogRatio + c_KL dKL), dentropy = -c_H w; rows with m = 0 get 0.
//   action: a unit is an action a (one per batch row) over rows spans[a] = (start, count); with
//           (adv, scale, m) = acts[a].xyz, w = m / Z: logRatio = scale * sum_t (logp_t - old_t) (one sum of
//           differences: no cancellation of two long sums), and each of its rows gets dlogp = w scale
//           dL/dlogRatio + c_KL (w / count) dKL_t, dentropy = -c_H w / count (entropy and KL are the
//           action's token means). Rows outside every counted action get 0.
// Layouts (f32 unless said): logp, entropy (N) the head's outputs; tok (N) vec4 (old, ref, adv, mask) per
//   row (action level reads old and ref only); spans (A) vec2<i32>; acts (A) vec4 (adv, scale, mask, -);
//   dlogp, dentropy (N) written (=); sums (8) added to (+=): [loss, surrogate, entropy, kl] already / Z, then
//   raw sums over units of m ((ratio - 1) - logRatio), m (-logRatio), m [|ratio - 1| > clip], m.
//   loss = surrogate - c_H entropy + c_KL kl. hasRef 0: no KL term and kl = 0 (ref unread).
//   A non-finite logRatio, entropy or KL in a counted unit (or a span outside the rows) makes the added loss
//   NaN: tested on the bit pattern, since max / clamp may hide a NaN (SwiftShader), and the CPU's
//   "skip a non-finite loss" must see it.
// Dispatch: one workgroup of WG = $WG threads for the whole micro-batch (deterministic: each thread sums its
//   strided units in order, then a fixed tree); the sums are a few per unit, the dispatch count is what matters.

struct Params {
  N: u32, A: u32, clip: f32, entropyCoef: f32,
  klCoef: f32, invZ: f32, k3: u32, hasRef: u32,
  nanBits: u32, _p0: u32, _p1: u32, _p2: u32,
}
@group(0) @binding(0) var<uniform> u: Params;
@group(0) @binding(1) var<storage, read> logp: array<f32>;
@group(0) @binding(2) var<storage, read> entropy: array<f32>;
@group(0) @binding(3) var<storage, read> tok: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> spans: array<vec2<i32>>;
@group(0) @binding(5) var<storage, read> acts: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> dlogp: array<f32>;
@group(0) @binding(7) var<storage, read_write> dentropy: array<f32>;
@group(0) @binding(8) var<storage, read_write> sums: array<f32>;

const WG = $WGu;
// per thread: (surrogate, entropy, kl, approx k3) and (approx k1, clipped, mask, non-finite count)
var<workgroup> ra: array<vec4<f32>, WG>;
var<workgroup> rb: array<vec4<f32>, WG>;

fn finite(v: f32) -> bool { return (bitcast<u32>(v) & 0x7f800000u) != 0x7f800000u; }

// (KL estimate, its derivative in logp) against the reference log-prob r.
fn klTerm(lp: f32, r: f32) -> vec2<f32> {
  if (u.k3 == 0u) { return vec2<f32>(lp - r, 1.0); }
  let x = r - lp;
  let e = exp(x);
  return vec2<f32>(e - x - 1.0, 1.0 - e);
}

// The surrogate terms of one unit: (surrogate, dL/dlogRatio, approx k3, clipped).
fn surrogate(logRatio: f32, adv: f32) -> vec4<f32> {
  let ratio = exp(logRatio);
  let s1 = -ratio * adv;
  let s2 = -clamp(ratio, 1.0 - u.clip, 1.0 + u.clip) * adv;
  let unclipped = s1 >= s2;
  return vec4<f32>(select(s2, s1, unclipped), select(0.0, s1, unclipped), ratio - 1.0 - logRatio, select(0.0, 1.0, abs(ratio - 1.0) > u.clip));
}

// Tree-sums the threads' partials and adds them to sums (thread 0).
fn finish(t: u32, a: vec4<f32>, b: vec4<f32>) {
  ra[t] = a; rb[t] = b;
  workgroupBarrier();
  for (var k = WG / 2u; k > 0u; k >>= 1u) {
    if (t < k) { ra[t] += ra[t + k]; rb[t] += rb[t + k]; }
    workgroupBarrier();
  }
  if (t == 0u) {
    let s = ra[0];
    let r = rb[0];
    let loss = s.x - u.entropyCoef * s.y + u.klCoef * s.z;
    sums[0] += select(loss, bitcast<f32>(u.nanBits), r.w > 0.0);
    sums[1] += s.x; sums[2] += s.y; sums[3] += s.z; sums[4] += s.w;
    sums[5] += r.x; sums[6] += r.y; sums[7] += r.z;
  }
}

@compute @workgroup_size($WG)
fn token(@builtin(local_invocation_id) lid: vec3u) {
  let t = lid.x;
  var a = vec4<f32>(0.0);
  var b = vec4<f32>(0.0);
  for (var n = t; n < u.N; n += WG) {
    let x = tok[n];
    let m = x.w;
    if (m == 0.0) { dlogp[n] = 0.0; dentropy[n] = 0.0; continue; }
    let w = m * u.invZ;
    let lr = logp[n] - x.x;
    let s = surrogate(lr, x.z);
    var g = s.y;
    let h = entropy[n];
    var kl = 0.0;
    if (u.hasRef != 0u) {
      let k = klTerm(logp[n], x.y);
      kl = k.x;
      g += u.klCoef * k.y;
    }
    a += vec4<f32>(w * s.x, w * h, w * kl, m * s.z);
    b += vec4<f32>(-m * lr, m * s.w, m, select(1.0, 0.0, finite(lr) && finite(h) && finite(kl)));
    dlogp[n] = w * g;
    dentropy[n] = -u.entropyCoef * w;
  }
  finish(t, a, b);
}

@compute @workgroup_size($WG)
fn action(@builtin(local_invocation_id) lid: vec3u) {
  let t = lid.x;
  for (var n = t; n < u.N; n += WG) { dlogp[n] = 0.0; dentropy[n] = 0.0; }
  storageBarrier(); // the zeros land before any thread writes an action's rows
  var a = vec4<f32>(0.0);
  var b = vec4<f32>(0.0);
  for (var i = t; i < u.A; i += WG) {
    let ac = acts[i];
    let m = ac.z;
    if (m == 0.0) { continue; }
    let sp = spans[i];
    if (sp.x < 0 || sp.y <= 0 || u32(sp.x) + u32(sp.y) > u.N) { b.w += 1.0; continue; }
    let start = u32(sp.x);
    let end = start + u32(sp.y);
    let scale = ac.y;
    var d = 0.0;
    for (var n = start; n < end; n++) { d += logp[n] - tok[n].x; }
    let lr = scale * d;
    let s = surrogate(lr, ac.x);
    let w = m * u.invZ;
    let wt = w / f32(sp.y); // each row's share of the action's weight (token means)
    let gA = w * scale * s.y;
    var ent = 0.0;
    var kl = 0.0;
    var bad = select(1.0, 0.0, finite(lr));
    for (var n = start; n < end; n++) {
      var g = gA;
      let h = entropy[n];
      ent += h;
      if (u.hasRef != 0u) {
        let k = klTerm(logp[n], tok[n].y);
        kl += k.x;
        g += u.klCoef * wt * k.y;
      }
      dlogp[n] = g;
      dentropy[n] = -u.entropyCoef * wt;
    }
    if (!(finite(ent) && finite(kl))) { bad += 1.0; }
    a += vec4<f32>(w * s.x, wt * ent, wt * kl, m * s.z);
    b += vec4<f32>(-m * lr, m * s.w, m, bad);
  }
  finish(t, a, b);
}
