// Split-K ("flash-decoding") attention forward for few query rows per kv head (decode: Tq = 1, or a short
// chunk), with the same inputs, outputs and semantics as attention.wgsl's forward (GQA, key padding mask,
// KV cache of capacity Tcap; lse = LSE_MASKED and out = 0 for a row that sees no key).
// The normal forward gives one workgroup per (row block, kv head, batch): 24 workgroups at B 8, NKV 3,
// each walking every key with 1 of its 32 rows in use. Here the keys are cut into NS = ceil(Tk / CH) chunks:
//   decodePartial: grid (NS, NKV, B), workgroup WG. One chunk of CH keys for the R = Tq * G rows (<= RMAX)
//                  of (b, kvh): q rows, K and V chunk staged in workgroup memory (coalesced), scores in
//                  the log2 domain, then per row its chunk max m, sum l = sum exp2(s - m) and unnormalised
//                  acc = sum exp2(s - m) v, written to the scratch pml (B, NKV, NS, R) vec2 and
//                  pacc (B, NKV, NS, R, HS) (m = -1e30, l = 0, acc = 0 where the row sees no key of the chunk).
//   decodeCombine: grid grid1d(ceil(B * Tq * NH * HS4 / 64)), workgroup 64: one vec4 of one output row per
//                  thread: M = max m, L = sum l exp2(m - M), out = sum acc exp2(m - M) / L,
//                  lse = (M + log2 L) ln 2 (LSE_MASKED and out 0 when L = 0).
// Layouts and the visibility rule as in attention.wgsl; keys past Tk or masked are zero rows, never read.
// With TK_GPU, Tk is read from klen (the KV cache's filled length before this step, + Tq) and the grid
// covers the cache's capacity: a chunk wholly past Tk writes (m, l, acc) = (-1e30, 0, 0), which the
// combination weighs 0, so the dispatch is the same at every step (Gpu recordings replay it).

// Uniforms (struct Params) and bindings: written by kernel.ts from its kernels' names and types.
$HEADER

const HS4 = $HS4u;
const CH = $CHu;            // keys per chunk (workgroup)
const RMAX = $RMAXu;        // rows per (b, kvh) at most
const WG = 64u;
const RS = HS4 + 1u;        // padded row stride of the K/V tiles (no bank conflicts)
const SS = CH + 1u;
const NEG = -1.0e30;
const NEG_HALF = -5.0e29;
const LSE_MASKED = -1.0e30;
const LN2 = 0.6931471805599453;

var<workgroup> qs: array<vec4f, RMAX * HS4>;
var<workgroup> ks: array<vec4f, CH * RS>;
var<workgroup> vs: array<vec4f, CH * RS>;
var<workgroup> ss: array<f32, RMAX * SS>;
var<workgroup> okf: array<u32, CH>;

fn tk() -> u32 { return $TK; }
fn keyOk(b: u32, j: u32) -> bool { return u.hasMask == 0u || mask[b * u.Tm + j] != 0; }
fn hsum(a: vec4f) -> f32 { return (a.x + a.y) + (a.z + a.w); }
fn qIndex(b: u32, kvh: u32, r: u32) -> u32 { return ((b * u.Tq + r / u.G) * u.NH + kvh * u.G + r % u.G) * HS4; }
fn kIndex(b: u32, kvh: u32, j: u32) -> u32 { return ((b * u.Tcap + j) * u.NKV + kvh) * HS4; }
fn pIndex(b: u32, kvh: u32, c: u32, r: u32) -> u32 { return ((b * u.NKV + kvh) * u.NS + c) * (u.Tq * u.G) + r; }

@compute @workgroup_size(WG)
fn decodePartial(@builtin(local_invocation_index) tid: u32, @builtin(workgroup_id) wg: vec3u) {
  let chunk = wg.x;
  let kvh = wg.y;
  let b = wg.z;
  let R = u.Tq * u.G;
  let k0 = chunk * CH;
  let Tk = tk();
  if (k0 >= Tk) {
    for (var r = tid; r < R; r += WG) { pml[pIndex(b, kvh, chunk, r)] = vec2f(NEG, 0.0); }
    for (var e = tid; e < R * HS4; e += WG) { pacc[pIndex(b, kvh, chunk, e / HS4) * HS4 + e % HS4] = vec4f(0.0); }
    return;
  }
  for (var e = tid; e < R * HS4; e += WG) {
    qs[e] = q[qIndex(b, kvh, e / HS4) + e % HS4] * u.scale2;
  }
  for (var e = tid; e < CH * HS4; e += WG) {
    let kj = min(k0 + e / HS4, Tk - 1u);
    let ok = k0 + e / HS4 < Tk && keyOk(b, kj);
    let a = kIndex(b, kvh, kj) + e % HS4;
    ks[(e / HS4) * RS + e % HS4] = select(vec4f(0.0), k[a], ok);
    vs[(e / HS4) * RS + e % HS4] = select(vec4f(0.0), v[a], ok);
  }
  for (var j = tid; j < CH; j += WG) {
    okf[j] = select(0u, 1u, k0 + j < Tk && keyOk(b, min(k0 + j, Tk - 1u)));
  }
  workgroupBarrier();
  // scores: neighbouring threads take neighbouring keys of one row (q word broadcast, K rows padded)
  for (var e = tid; e < R * CH; e += WG) {
    let r = e / CH;
    let j = e % CH;
    var acc = vec4f(0.0);
    for (var d = 0u; d < HS4; d++) { acc = fma(qs[r * HS4 + d], ks[j * RS + d], acc); }
    let lim = Tk - u.Tq + r / u.G;
    ss[r * SS + j] = select(NEG, hsum(acc), okf[j] != 0u && k0 + j <= lim);
  }
  workgroupBarrier();
  // one thread per row: chunk max and sum; scores become probabilities (relative to the chunk max)
  if (tid < R) {
    var m = NEG;
    for (var j = 0u; j < CH; j++) { m = max(m, ss[tid * SS + j]); }
    var l = 0.0;
    for (var j = 0u; j < CH; j++) {
      let s = ss[tid * SS + j];
      let p = select(0.0, exp2(s - m), s > NEG_HALF);
      ss[tid * SS + j] = p;
      l += p;
    }
    pml[pIndex(b, kvh, chunk, tid)] = vec2f(m, l);
  }
  workgroupBarrier();
  for (var e = tid; e < R * HS4; e += WG) {
    let r = e / HS4;
    let c = e % HS4;
    var o = vec4f(0.0);
    for (var j = 0u; j < CH; j++) { o = fma(vec4f(ss[r * SS + j]), vs[j * RS + c], o); }
    pacc[pIndex(b, kvh, chunk, r) * HS4 + c] = o;
  }
}

@compute @workgroup_size(64)
fn decodeCombine(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let g = gid.x + gid.y * nwg.x * 64u;
  if (g >= u.B * u.Tq * u.NH * HS4) { return; }
  let c = g % HS4;
  let n = g / HS4;                 // row (b, i, h) of q's layout
  let h = n % u.NH;
  let bi = n / u.NH;
  let i = bi % u.Tq;
  let b = bi / u.Tq;
  let kvh = h / u.G;
  let r = i * u.G + h % u.G;
  var M = NEG;
  for (var s = 0u; s < u.NS; s++) { M = max(M, pml[pIndex(b, kvh, s, r)].x); }
  var L = 0.0;
  var o = vec4f(0.0);
  for (var s = 0u; s < u.NS; s++) {
    let p = pIndex(b, kvh, s, r);
    let ml = pml[p];
    let w = exp2(ml.x - M);
    L += ml.y * w;
    o = fma(vec4f(w), pacc[p * HS4 + c], o);
  }
  out[n * HS4 + c] = select(vec4f(0.0), o / L, L > 0.0);
  if (c == 0u) { lse[(b * u.NH + h) * u.Tq + i] = select(LSE_MASKED, (M + log2(L)) * LN2, L > 0.0); }
}
