// Causal attention for CPU WebGPU implementations (SwiftShader): the same contract, buffers, uniforms and
// masking rules as attention.wgsl (see its header), one thread per query row (forward, dq) or per key
// (dk, dv) reading q, k, v straight from global memory: no workgroup memory and no barriers. On a GPU the
// tiled kernels are far faster; on a CPU implementation every invocation runs as CPU code and every
// barrier switches between them, so the tiles' 2 barriers per key tile cost more than the arithmetic.
// Scores are in the log2 domain as there; sums run in key (or query) order: deterministic.
//   forwardDirect: thread n = (b, i, h) of q's layout; online softmax over the keys row i sees.
//   backwardDqDirect: as forward; P recomputed from (lse * log2 e, D = rowsum(dout * out)), which each
//              thread derives itself (rowLd): no prep pass.
//   backwardDkDvDirect: thread n = (b, j, kvh) of k's layout (j < Tcap; rows >= Tk and masked keys get 0);
//              walks every query (all G heads of the group) that sees key j.
// Dispatch: grid1d(ceil(threads / 64)), workgroup 64.

// Uniforms (struct Params) and bindings: written by kernel.ts from its kernels' names and types.
$HEADER

const HS4 = $HS4u;
const NEG = -1.0e30;
const LSE_MASKED = -1.0e30;
const LN2 = 0.6931471805599453;
const LOG2E = 1.4426950408889634;

fn keyOk(b: u32, j: u32) -> bool { return u.hasMask == 0u || mask[b * u.Tm + j] != 0; }
fn hsum(a: vec4f) -> f32 { return (a.x + a.y) + (a.z + a.w); }
fn kIndex(b: u32, kvh: u32, j: u32) -> u32 { return ((b * u.Tcap + j) * u.NKV + kvh) * HS4; }
fn dot4(x: u32, y: u32) -> f32 {   // q row at x . k row at y
  var s = vec4f(0.0);
  for (var d = 0u; d < HS4; d++) { s = fma(q[x + d], k[y + d], s); }
  return hsum(s);
}
fn dotDv(x: u32, y: u32) -> f32 {  // dout row at x . v row at y
  var s = vec4f(0.0);
  for (var d = 0u; d < HS4; d++) { s = fma(dout[x + d], v[y + d], s); }
  return hsum(s);
}

// (b, i, h) of thread n = query row n of q's layout (B, Tq, NH).
fn queryRow(n: u32) -> vec3u { return vec3u(n / (u.NH * u.Tq), (n / u.NH) % u.Tq, n % u.NH); }

// (lse in log2 units, D) of query row (b, i, h) whose first vec4 is at qb; a row that saw no key keeps a
// huge lse, so every p it gives is 0.
fn rowLd(b: u32, h: u32, i: u32, qb: u32) -> vec2f {
  let L = lse[(b * u.NH + h) * u.Tq + i];
  var D = vec4f(0.0);
  for (var d = 0u; d < HS4; d++) { D = fma(dout[qb + d], out[qb + d], D); }
  return vec2f(select(L * LOG2E, LSE_MASKED, L <= -5.0e29), hsum(D));
}

@compute @workgroup_size(64)
fn forwardDirect(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let n = gid.x + gid.y * nwg.x * 64u;
  if (n >= u.B * u.Tq * u.NH) { return; }
  let r = queryRow(n);
  let b = r.x;
  let i = r.y;
  let h = r.z;
  let kvh = h / u.G;
  let qb = n * HS4;
  var o: array<vec4f, HS4>;
  var m = NEG;
  var l = 0.0;
  for (var j = 0u; j <= u.Tk - u.Tq + i; j++) {
    if (!keyOk(b, j)) { continue; }
    let kb = kIndex(b, kvh, j);
    let s = dot4(qb, kb) * u.scale2;
    let mt = max(m, s);
    let alpha = exp2(m - mt);
    let p = exp2(s - mt);
    l = l * alpha + p;
    for (var d = 0u; d < HS4; d++) { o[d] = fma(vec4f(p), v[kb + d], o[d] * alpha); }
    m = mt;
  }
  let inv = select(0.0, 1.0 / l, l > 0.0);
  for (var d = 0u; d < HS4; d++) { out[qb + d] = o[d] * inv; }
  lse[(b * u.NH + h) * u.Tq + i] = select(LSE_MASKED, (m + log2(l)) * LN2, l > 0.0);
}

@compute @workgroup_size(64)
fn backwardDqDirect(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let n = gid.x + gid.y * nwg.x * 64u;
  if (n >= u.B * u.Tq * u.NH) { return; }
  let r = queryRow(n);
  let b = r.x;
  let i = r.y;
  let h = r.z;
  let kvh = h / u.G;
  let qb = n * HS4;
  let x = rowLd(b, h, i, qb);
  var g: array<vec4f, HS4>;
  for (var j = 0u; j <= u.Tk - u.Tq + i; j++) {
    if (!keyOk(b, j)) { continue; }
    let kb = kIndex(b, kvh, j);
    let p = exp2(dot4(qb, kb) * u.scale2 - x.x);
    let ds = p * (dotDv(qb, kb) - x.y);
    for (var d = 0u; d < HS4; d++) { g[d] = fma(vec4f(ds), k[kb + d], g[d]); }
  }
  for (var d = 0u; d < HS4; d++) { dq[qb + d] = g[d] * u.scale; }
}

@compute @workgroup_size(64)
fn backwardDkDvDirect(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let n = gid.x + gid.y * nwg.x * 64u;
  if (n >= u.B * u.Tcap * u.NKV) { return; }
  let kvh = n % u.NKV;
  let j = (n / u.NKV) % u.Tcap;
  let b = n / (u.NKV * u.Tcap);
  let kb = n * HS4;
  var gk: array<vec4f, HS4>;
  var gv: array<vec4f, HS4>;
  if (j < u.Tk && keyOk(b, j)) {
    let off = u.Tk - u.Tq;
    // query i sees key j iff j <= off + i
    for (var i = select(0u, j - off, j > off); i < u.Tq; i++) {
      for (var g = 0u; g < u.G; g++) {
        let h = kvh * u.G + g;
        let qb = ((b * u.Tq + i) * u.NH + h) * HS4;
        let x = rowLd(b, h, i, qb);
        let p = exp2(dot4(qb, kb) * u.scale2 - x.x);
        let ds = p * (dotDv(qb, kb) - x.y);
        for (var d = 0u; d < HS4; d++) {
          gv[d] = fma(vec4f(p), dout[qb + d], gv[d]);
          gk[d] = fma(vec4f(ds), q[qb + d], gk[d]);
        }
      }
    }
  }
  for (var d = 0u; d < HS4; d++) {
    dk[kb + d] = gk[d] * u.scale;
    dv[kb + d] = gv[d];
  }
}
