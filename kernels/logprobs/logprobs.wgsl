// Fused log-softmax + gather of the target's log-prob + entropy, and its backward, without a softmax copy.
//   z = logits * invT (invT = 1 / temperature, a uniform; 1 by default)
//   forward:  logits (N, V) f32, targets (N) i32  ->  logp (N) = z[t] - lse, entropy (N) = -sum p log p,
//             lse (N) = log sum exp z (saved for backward). One read of the row: each thread keeps an
//             online (max m, s = sum e^(z-m), q = sum e^(z-m) (z-m)) over its strided elements, rescaled
//             when m grows; a fixed tree merges the WG triples. Then lse = m + log s, H = log s - q/s.
//   backward: dz_j = dlogp (onehot_j - p_j) - dentropy p_j (log p_j + H),   dlogits = dz / temperature
//             (d logp_t/dz_j = onehot - p_j; dH/dz_j = -sum_i p_i(onehot_ij - p_j)(log p_i + 1)
//              = -p_j (log p_j + H)). Written (=) into dlogits (N, V), or into the logits buffer itself
//             ($GRAD_STORE picks; logits is bound read_write for the in-place variant). dlogp / dentropy
//             may be absent ($DLOGP / $DENT are then 0.0 and the binding unused); entropy (N) and lse (N)
//             come from the forward.
//   Padding rows (target < 0): logp 0, entropy 0, zero gradient. target >= V: logp NaN (a visible error),
//             entropy 0, zero gradient.
//   Dispatch: one workgroup of WG = $WG threads per row (about 16 logits a thread, 256 at most: idle lanes
//   and tree levels cost real time on CPU implementations), rows split over (x, y) when N > 65535.

struct Params { N: u32, V: u32, invT: f32, nanBits: u32 }
@group(0) @binding(0) var<uniform> u: Params;
@group(0) @binding(1) var<storage, $LOGITS_ACCESS> logits: array<f32>;
@group(0) @binding(2) var<storage, read> targets: array<i32>;
@group(0) @binding(3) var<storage, read_write> logp: array<f32>;
@group(0) @binding(4) var<storage, read_write> entropy: array<f32>;
@group(0) @binding(5) var<storage, read_write> lse: array<f32>;
@group(0) @binding(6) var<storage, read> dlogp: array<f32>;
@group(0) @binding(7) var<storage, read> dentropy: array<f32>;
@group(0) @binding(8) var<storage, read_write> dlogits: array<f32>;

const WG = $WGu;
const NEG_BIG = -3.0e38; // "no element yet": finite, so 0 * (NEG_BIG - m) stays 0
var<workgroup> rm: array<f32, WG>;
var<workgroup> rs: array<f32, WG>;
var<workgroup> rq: array<f32, WG>;

// Merges (m2, s2, q2) into (m1, s1, q1): both rescaled to the larger max.
fn merge(m1: f32, s1: f32, q1: f32, m2: f32, s2: f32, q2: f32) -> vec3<f32> {
  let m = max(m1, m2);
  let a1 = exp(m1 - m);
  let a2 = exp(m2 - m);
  let q = a1 * (q1 + s1 * (m1 - m)) + a2 * (q2 + s2 * (m2 - m));
  return vec3<f32>(m, s1 * a1 + s2 * a2, q);
}

@compute @workgroup_size($WG)
fn forward(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let row = wid.x + wid.y * nwg.x;
  if (row >= u.N) { return; }
  let t = lid.x;
  let base = row * u.V;
  var m = NEG_BIG;
  var s = 0.0;
  var q = 0.0;
  for (var j = t; j < u.V; j += WG) {
    let z = logits[base + j] * u.invT;
    if (z > m) {
      let a = exp(m - z);
      q = a * (q + s * (m - z));
      s = s * a;
      m = z;
    }
    let d = z - m;
    let e = exp(d);
    s += e;
    q += select(0.0, e * d, e > 0.0); // a -inf logit adds nothing (and no 0 * inf)
  }
  rm[t] = m; rs[t] = s; rq[t] = q;
  workgroupBarrier();
  for (var k = WG / 2u; k > 0u; k >>= 1u) {
    if (t < k) {
      let r = merge(rm[t], rs[t], rq[t], rm[t + k], rs[t + k], rq[t + k]);
      rm[t] = r.x; rs[t] = r.y; rq[t] = r.z;
    }
    workgroupBarrier();
  }
  if (t == 0u) {
    let ls = log(rs[0]);
    let l = rm[0] + ls;
    lse[row] = l;
    let tgt = targets[row];
    if (tgt < 0) {
      logp[row] = 0.0;
      entropy[row] = 0.0;
    } else if (u32(tgt) >= u.V) {
      logp[row] = bitcast<f32>(u.nanBits);
      entropy[row] = 0.0;
    } else {
      logp[row] = logits[base + u32(tgt)] * u.invT - l;
      entropy[row] = max(ls - rq[0] / rs[0], 0.0);
    }
  }
}

@compute @workgroup_size($WG)
fn backward(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let row = wid.x + wid.y * nwg.x;
  if (row >= u.N) { return; }
  let base = row * u.V;
  let tgt = targets[row];
  let valid = tgt >= 0 && u32(tgt) < u.V;
  let gl = select(0.0, $DLOGP, valid);
  let gh = select(0.0, $DENT, valid);
  let H = $ENTROPY;
  let l = lse[row];
  for (var j = lid.x; j < u.V; j += WG) {
    let i = base + j;
    let lp = logits[i] * u.invT - l;
    let p = exp(lp);
    let onehot = select(0.0, 1.0, i32(j) == tgt);
    let g = gl * (onehot - p) - gh * select(0.0, p * (lp + H), p > 0.0);
    let dlogit = select(0.0, g * u.invT, valid);
    $GRAD_STORE
  }
}
