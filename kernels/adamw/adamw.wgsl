// AdamW with global-norm gradient clipping and a non-finite skip, with no readback inside the step, per
// slot: parameters may be slot-major (S, ...) (one LoRA adapter per agent), each slot with its own norm,
// clip scale and step count, as if each agent had its own optimiser; S = 1 is one global optimiser.
//   stats (S, 8) f32, kept on the GPU; slot s's 8 values at 8s:
//     [0] sum of squares of the slot's gradients (written by reduce's reduceSlotsInto before `begin`)
//     [1] the slot's L2 norm   [2] non-finite flag (1: norm is NaN/inf, the step is skipped; the squares are
//         summed in f32, so a gradient element beyond ~1.8e19 also overflows to inf and skips)
//     [3] clip scale = min(1, maxNorm / (norm + 1e-6)) (1 when maxNorm <= 0)
//     [4] step count t (steps taken; not advanced by a skipped step)   [5] skipped steps   [6], [7] unused
//   Slots not in the mask (4 u32 words, bit s = slot s; at most 128 slots) are left alone: no step, no
//   count, their params, moments and stats untouched but [0] (agent-by-agent training's frozen agents).
//   begin:  one thread: for each slot in the mask, stats[1..5] from stats[0]. Dispatch (1).
//   update: params, grads, m, v (n) f32, elementwise, element i in slot i / perSlot (perSlot = n / S);
//           returns at once when the slot is not in the mask or its [2] != 0. With g = grad * scale:
//             m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//             p = p (1 - lr wd) - lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps)   (PyTorch's AdamW)
//           bc = 1 - b^t = -expm1(t ln b): computed as a short series when |t ln b| is small, because
//           1 - pow(b, t) in f32 loses most digits for b2 = 0.999 and small t.
//           Dispatch: ceil(n / 256) workgroups split over (x, y), workgroup 256.

struct Params {
  n: u32, lr: f32, beta1: f32, beta2: f32, eps: f32, wd: f32, lnb1: f32, lnb2: f32, maxNorm: f32, slots: u32, perSlot: u32, _p0: u32,
  mask: vec4<u32>,
}
@group(0) @binding(0) var<uniform> u: Params;
@group(0) @binding(1) var<storage, read_write> stats: array<f32>;
@group(0) @binding(2) var<storage, read_write> params: array<f32>;
@group(0) @binding(3) var<storage, read> grads: array<f32>;
@group(0) @binding(4) var<storage, read_write> m: array<f32>;
@group(0) @binding(5) var<storage, read_write> v: array<f32>;

fn isFinite(x: f32) -> bool { return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u; }
fn inMask(s: u32) -> bool { return ((u.mask[s / 32u] >> (s % 32u)) & 1u) != 0u; }

@compute @workgroup_size(1)
fn begin() {
  for (var s = 0u; s < u.slots; s++) {
    if (!inMask(s)) { continue; }
    let b = 8u * s;
    let sumsq = stats[b];
    let norm = sqrt(sumsq);
    let bad = !isFinite(sumsq) || !isFinite(norm);
    stats[b + 1u] = norm;
    stats[b + 2u] = select(0.0, 1.0, bad);
    var scale = 1.0;
    if (u.maxNorm > 0.0 && !bad) { scale = min(1.0, u.maxNorm / (norm + 1e-6)); }
    stats[b + 3u] = select(scale, 0.0, bad);
    if (bad) { stats[b + 5u] = stats[b + 5u] + 1.0; } else { stats[b + 4u] = stats[b + 4u] + 1.0; }
  }
}

// 1 - b^t = -expm1(y), y = t ln b <= 0.
fn biasCorrection(y: f32) -> f32 {
  if (y > -0.2) {
    return -y * (1.0 + y * (1.0 / 2.0 + y * (1.0 / 6.0 + y * (1.0 / 24.0 + y * (1.0 / 120.0 + y * (1.0 / 720.0 + y / 5040.0))))));
  }
  return 1.0 - exp(y);
}

@compute @workgroup_size(256)
fn update(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * 256u;
  if (i >= u.n) { return; }
  let s = i / u.perSlot;
  let b = 8u * s;
  if (!inMask(s) || stats[b + 2u] != 0.0) { return; }
  let t = stats[b + 4u];
  let g = grads[i] * stats[b + 3u];
  let mi = u.beta1 * m[i] + (1.0 - u.beta1) * g;
  let vi = u.beta2 * v[i] + (1.0 - u.beta2) * g * g;
  m[i] = mi;
  v[i] = vi;
  let bc1 = biasCorrection(t * u.lnb1);
  let bc2 = biasCorrection(t * u.lnb2);
  params[i] = params[i] * (1.0 - u.lr * u.wd) - (u.lr / bc1) * mi / (sqrt(vi) / sqrt(bc2) + u.eps);
}
