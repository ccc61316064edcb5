// Causal attention for CPU WebGPU implementations (SwiftShader): the same contract, buffers, uniforms and
// masking rules as attention.wgsl (see its header), one thread per query row (forward, dq) or per key
// (dk, dv) reading q, k, v straight from global memory: no workgroup memory and no barriers. On a GPU the
// tiled kernels are far faster; on a CPU implementation every invocation runs as CPU code and every
// barrier switches between them, so the tiles' 2 barriers per key tile cost more than the arithmetic.
// Scores are in the log2 domain as there; sums run in key (or query) order: deterministic.
//   forward$PATH: thread n = (b, i, h) of q's layout; online softmax over the keys row i sees.
//   backwardDq$PATH: as forward; P recomputed from (lse * log2 e, D = rowsum(dout * out)), which each
//              thread derives itself: no prep pass.
//   backwardDkDv$PATH: thread n = (b, j, kvh) of k's layout (j < Tcap; rows >= Tk and masked keys get 0);
//              walks every query (all G heads of the group) that sees key j.
// Dispatch: grid1d(ceil(threads / 64)), workgroup 64.
// Two paths fill in the work on a row's HS4 vec4s (direct.ts), in the same order: 'direct' as loops over
// private arrays, 'regs' (the default on CPU adapters) unrolled into named values, with the thread's own
// rows loaded once and each key's k and v rows once. SwiftShader turns every access to a private array at
// a loop index into a gather or scatter (four scalar accesses behind branches), and the loops re-read the
// query (and dout) row for every key.

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
// (b, i, h) of thread n = query row n of q's layout (B, Tq, NH).
fn queryRow(n: u32) -> vec3u { return vec3u(n / (u.NH * u.Tq), (n / u.NH) % u.Tq, n % u.NH); }
// lse of query row (b, h, i) in log2 units; a row that saw no key keeps a huge lse (every p is 0).
fn lse2(b: u32, h: u32, i: u32) -> f32 {
  let L = lse[(b * u.NH + h) * u.Tq + i];
  return select(L * LOG2E, LSE_MASKED, L <= -5.0e29);
}
// The 'direct' path's loops over a row: q row at x . k row at y, dout row at x . v row at y, and
// D = rowsum(dout * out) of the query row at x.
fn dot4(x: u32, y: u32) -> f32 {
  var s = vec4f(0.0);
  for (var d = 0u; d < HS4; d++) { s = fma(q[x + d], k[y + d], s); }
  return hsum(s);
}
fn dotDv(x: u32, y: u32) -> f32 {
  var s = vec4f(0.0);
  for (var d = 0u; d < HS4; d++) { s = fma(dout[x + d], v[y + d], s); }
  return hsum(s);
}
fn rowD(x: u32) -> f32 {
  var D = vec4f(0.0);
  for (var d = 0u; d < HS4; d++) { D = fma(dout[x + d], out[x + d], D); }
  return hsum(D);
}

@compute @workgroup_size(64)
fn forward$PATH(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let n = gid.x + gid.y * nwg.x * 64u;
  if (n >= u.B * u.Tq * u.NH) { return; }
  let r = queryRow(n);
  let b = r.x;
  let i = r.y;
  let h = r.z;
  let kvh = h / u.G;
  let qb = n * HS4;
$FWD_INIT
  var m = NEG;
  var l = 0.0;
  for (var j = 0u; j <= u.Tk - u.Tq + i; j++) {
    if (!keyOk(b, j)) { continue; }
    let kb = kIndex(b, kvh, j);
$FWD_SCORE
    let mt = max(m, s);
    let alpha = exp2(m - mt);
    let p = exp2(s - mt);
    l = l * alpha + p;
$FWD_ACC
    m = mt;
  }
  let inv = select(0.0, 1.0 / l, l > 0.0);
$FWD_STORE
  lse[(b * u.NH + h) * u.Tq + i] = select(LSE_MASKED, (m + log2(l)) * LN2, l > 0.0);
}

@compute @workgroup_size(64)
fn backwardDq$PATH(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let n = gid.x + gid.y * nwg.x * 64u;
  if (n >= u.B * u.Tq * u.NH) { return; }
  let r = queryRow(n);
  let b = r.x;
  let i = r.y;
  let h = r.z;
  let kvh = h / u.G;
  let qb = n * HS4;
$DQ_INIT
  let L2 = lse2(b, h, i);
  for (var j = 0u; j <= u.Tk - u.Tq + i; j++) {
    if (!keyOk(b, j)) { continue; }
    let kb = kIndex(b, kvh, j);
$DQ_KEY
  }
$DQ_STORE
}

@compute @workgroup_size(64)
fn backwardDkDv$PATH(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let n = gid.x + gid.y * nwg.x * 64u;
  if (n >= u.B * u.Tcap * u.NKV) { return; }
  let kvh = n % u.NKV;
  let j = (n / u.NKV) % u.Tcap;
  let b = n / (u.NKV * u.Tcap);
  let kb = n * HS4;
$KV_INIT
  if (j < u.Tk && keyOk(b, j)) {
$KV_LOAD
    let off = u.Tk - u.Tq;
    // query i sees key j iff j <= off + i
    for (var i = select(0u, j - off, j > off); i < u.Tq; i++) {
      for (var g = 0u; g < u.G; g++) {
        let h = kvh * u.G + g;
        let qb = ((b * u.Tq + i) * u.NH + h) * HS4;
$KV_QUERY
      }
    }
  }
$KV_STORE
}
