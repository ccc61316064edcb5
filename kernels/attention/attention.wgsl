// Causal scaled-dot-product attention, flash-style (online softmax over key tiles, nothing T x T in global
// memory), with grouped-query heads (GQA), a key padding mask and a KV cache of larger capacity.
//
// Buffers (all f32, row-major; read as vec4, so HS % 4 == 0):
//   q, out, dout, dq  (B, Tq, NH, HS)
//   k, v, dk, dv      (B, Tcap, NKV, HS)    only keys 0..Tk-1 are used (Tk <= Tcap; dk, dv rows >= Tk are 0)
//   mask              (B, Tm) i32, Tm >= Tk  1 = real token, 0 = padding (read only when u.hasMask != 0)
//   lse               (B, NH, Tq)           logsumexp_j(q . k_j * scale) over the visible keys;
//                                           LSE_MASKED (-1e30) for a row that sees no key
//   ld                (B, NH, Tq, 2)        backward scratch: (lse * log2(e), D = rowsum(dout * out))
// Head h uses kv head h / G, G = NH / NKV. Query i sits at absolute position Tk - Tq + i and sees key j iff
// j <= Tk - Tq + i, j < Tk and mask[b, j] != 0. A row that sees no key outputs 0 and gets 0 gradients.
//
// Rows: the G query heads of one kv head are processed together, so a workgroup's K/V tiles serve all of
// them. For fixed (b, kvh) the "rows" are r = i * G + g (R = Tq * G of them); row r is query i of head
// kvh * G + g, and in memory the G heads of one position are adjacent.
//
// Threads: each row (forward, dq) or key (dkdv) is served by LANES threads; lane t owns the vec4 columns
// t, t + LANES, ... of the row's HS4 = HS / 4 (so neighbouring lanes read neighbouring shared words), and
// computes the dot products of keys (or rows) t, t + LANES, ... of a tile. Workgroup tiles have a padded
// row stride RS = HS4 + 1 vec4 (and score tiles BC + 1) to avoid shared-memory bank conflicts. Dot products
// run with the head dim outermost, so each shared word read feeds several keys (or rows) held in registers.
// Keys past Tk or masked are loaded as zero rows: stale cache entries, even NaN, never reach an output.
// Scores are kept in the log2 domain (q . k * scale * log2(e)) so softmax uses exp2.
//
// Entry points (tile sizes are compile-time, chosen by the launcher to fit the workgroup memory limit;
// HS = 64 on a 32 KiB device: forward 32 rows x 32 keys, dkdv 32 keys x 16 rows, dq 32 rows x 16 keys):
//   forward:   grid (ceil(R / F_BR), NKV, B), workgroup F_BR * LANES, the last row block (most keys) first.
//              Q tile in workgroup memory, K/V tiles of F_BC keys streamed from the batch's first real key to
//              the last key its rows see (or its last real key); running max m, sum l and the output
//              accumulator in registers. F_BR, F_BC and F_PF (prefetch) are the launcher's forward variant.
//   backwardPrep: grid grid1d(ceil(B * Tq * NH / 64)), workgroup 64: one row each; ld = (lse * log2 e, D).
//   backwardDkDv: grid (ceil(Tcap / K_BK), NKV, B), workgroup K_BK * LANES: K/V tile of K_BK keys fixed,
//              loops over all query rows (every head of the group, every query block that sees the tile)
//              in tiles of K_BQ: P = exp2(S - lse2), dP = dO V^T, dS = P (dP - D); dV += P^T dO,
//              dK += dS^T Q * scale. Each dk/dv element is written once by one thread: deterministic.
//   backwardDq: grid (ceil(R / Q_BR), NKV, B), workgroup Q_BR * LANES: Q/dO tile fixed, K/V tiles of Q_BC
//              streamed; dQ += dS K * scale (recomputes P and dS: no atomics, deterministic).

// Uniforms (struct Params) and bindings: written by kernel.ts from its kernels' names and types.
$HEADER

const HS4 = $HS4u;
const LANES = $LANESu;
const DPT4 = HS4 / LANES;   // vec4 columns per lane
const RS = HS4 + 1u;        // padded row stride of vec4 tiles
const NEG = -1.0e30;        // score of an invisible key (never a real score)
const NEG_HALF = -5.0e29;
const LSE_MASKED = -1.0e30; // lse of a row that sees no key
const LN2 = 0.6931471805599453;
const LOG2E = 1.4426950408889634;

// Whether key j of batch b is a real token.
fn keyOk(b: u32, j: u32) -> bool { return u.hasMask == 0u || mask[b * u.Tm + j] != 0; }

fn hsum(a: vec4f) -> f32 { return (a.x + a.y) + (a.z + a.w); }
fn qIndex(b: u32, kvh: u32, r: u32) -> u32 {   // first vec4 of row r = (i, g) of (b, kvh) in q/out/dout/dq
  let i = r / u.G;
  return ((b * u.Tq + i) * u.NH + kvh * u.G + r % u.G) * HS4;
}
fn kIndex(b: u32, kvh: u32, j: u32) -> u32 {   // first vec4 of key j of (b, kvh) in k/v/dk/dv
  return ((b * u.Tcap + j) * u.NKV + kvh) * HS4;
}
fn hIndex(b: u32, kvh: u32, r: u32) -> u32 {   // index of row r in lse (B, NH, Tq)
  return (b * u.NH + kvh * u.G + r % u.G) * u.Tq + r / u.G;
}

// ---- forward ------------------------------------------------------------------------------------------

const F_BR = $F_BRu;
const F_BC = $F_BCu;
const F_SS = F_BC + 1u;
const F_WG = F_BR * LANES;
var<workgroup> fQ: array<vec4f, F_BR * RS>;
var<workgroup> fK: array<vec4f, F_BC * RS>;
var<workgroup> fV: array<vec4f, F_BC * RS>;
var<workgroup> fS: array<f32, F_BR * F_SS>;
var<workgroup> fOk: array<u32, F_BC>;
const F_PF = $F_PF;   // load the next K/V tile into registers before this tile's math (see forward)
const F_LK = (F_BC * HS4 + F_WG - 1u) / F_WG;   // K/V vec4s a thread loads per tile
const F_LO = (F_BC + F_WG - 1u) / F_WG;
struct FTile { k: array<vec4f, F_LK>, v: array<vec4f, F_LK>, ok: array<u32, F_LO> }

fn fFetch(tid: u32, b: u32, kvh: u32, k0: u32) -> FTile {
  var t: FTile;
  for (var i = 0u; i < F_LK; i++) {
    let e = tid + i * F_WG;
    if (e < F_BC * HS4) {
      // Keys past Tk or masked get zero rows, so garbage there (even NaN) cannot reach the output via 0 * x.
      let kj = min(k0 + e / HS4, u.Tk - 1u);
      let ok = k0 + e / HS4 < u.Tk && keyOk(b, kj);
      let a = kIndex(b, kvh, kj) + e % HS4;
      t.k[i] = select(vec4f(0.0), k[a], ok);
      t.v[i] = select(vec4f(0.0), v[a], ok);
    }
  }
  for (var i = 0u; i < F_LO; i++) {
    let j = tid + i * F_WG;
    if (j < F_BC) { t.ok[i] = select(0u, 1u, k0 + j < u.Tk && keyOk(b, min(k0 + j, u.Tk - 1u))); }
  }
  return t;
}

// realRange: real-range.wgsl

@compute @workgroup_size(F_WG)
fn forward(@builtin(local_invocation_index) tid: u32, @builtin(workgroup_id) wg: vec3u) {
  let b = wg.z;
  let kvh = wg.y;
  let R = u.Tq * u.G;
  let r0 = ((R + F_BR - 1u) / F_BR - 1u - wg.x) * F_BR;   // the last rows see the most keys: start them first
  let lr = tid / LANES;
  let t = tid % LANES;
  let r = min(r0 + lr, R - 1u);
  let lim = u.Tk - u.Tq + r / u.G;     // last key this row may see
  for (var e = tid; e < F_BR * HS4; e += F_WG) {
    let rr = min(r0 + e / HS4, R - 1u);
    fQ[(e / HS4) * RS + e % HS4] = q[qIndex(b, kvh, rr) + e % HS4] * u.scale2;
  }
  var o: array<vec4f, DPT4>;
  var m = NEG;
  var l = 0.0;
  // Key tiles from the first real key's to the last key the block's rows see, or the last real key: tiles
  // of padding only leave m, l and o as they are (right-padded batches of short sequences skip their tails).
  let real = realRange(b, tid, F_WG);
  let kEnd = min(u.Tk - u.Tq + (min(r0 + F_BR, R) - 1u) / u.G + 1u, real.y);
  let kStart = real.x / F_BC * F_BC;
  var tile = fFetch(tid, b, kvh, kStart);
  for (var k0 = kStart; k0 < kEnd; k0 += F_BC) {
    workgroupBarrier();
    for (var i = 0u; i < F_LK; i++) {
      let e = tid + i * F_WG;
      if (e < F_BC * HS4) {
        fK[(e / HS4) * RS + e % HS4] = tile.k[i];
        fV[(e / HS4) * RS + e % HS4] = tile.v[i];
      }
    }
    for (var i = 0u; i < F_LO; i++) {
      if (tid + i * F_WG < F_BC) { fOk[tid + i * F_WG] = tile.ok[i]; }
    }
    workgroupBarrier();
    if (F_PF) { tile = fFetch(tid, b, kvh, k0 + F_BC); }
    // d outer: each Q word read from workgroup memory serves F_BC / LANES keys (invisible keys have zero
    // rows, so computing them is harmless; they are masked when stored).
    var sa = array<vec4f, F_BC / LANES>();
    for (var d = 0u; d < HS4; d++) {
      let qd = fQ[lr * RS + d];
      for (var jj = 0u; jj < F_BC / LANES; jj++) { sa[jj] = fma(qd, fK[(jj * LANES + t) * RS + d], sa[jj]); }
    }
    for (var jj = 0u; jj < F_BC / LANES; jj++) {
      let j = jj * LANES + t;
      fS[lr * F_SS + j] = select(NEG, hsum(sa[jj]), fOk[j] != 0u && k0 + j <= lim);
    }
    workgroupBarrier();
    // Every lane of a row runs the same online-softmax update, so m and l agree across lanes.
    var mt = m;
    for (var j = 0u; j < F_BC; j++) { mt = max(mt, fS[lr * F_SS + j]); }
    let alpha = exp2(m - mt);
    l *= alpha;
    for (var c = 0u; c < DPT4; c++) { o[c] *= alpha; }
    for (var j = 0u; j < F_BC; j++) {
      let s = fS[lr * F_SS + j];
      let p = select(0.0, exp2(s - mt), s > NEG_HALF);
      l += p;
      for (var c = 0u; c < DPT4; c++) { o[c] = fma(vec4f(p), fV[j * RS + c * LANES + t], o[c]); }
    }
    m = mt;
    if (!F_PF) { tile = fFetch(tid, b, kvh, k0 + F_BC); }
  }
  if (r0 + lr < R) {
    let inv = select(0.0, 1.0 / l, l > 0.0);
    let base = qIndex(b, kvh, r);
    for (var c = 0u; c < DPT4; c++) { out[base + c * LANES + t] = o[c] * inv; }
    if (t == 0u) { lse[hIndex(b, kvh, r)] = select(LSE_MASKED, (m + log2(l)) * LN2, l > 0.0); }
  }
}

// ---- backward: prep (lse in log2 units, D = rowsum(dout * out)) ----------------------------------------

@compute @workgroup_size(64)
fn backwardPrep(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let n = gid.x + gid.y * nwg.x * 64u;           // row (b, i, h) of q's layout
  if (n >= u.B * u.Tq * u.NH) { return; }
  var acc = vec4f(0.0);
  for (var d = 0u; d < HS4; d++) { acc = fma(dout[n * HS4 + d], out[n * HS4 + d], acc); }
  let h = n % u.NH;
  let bi = n / u.NH;
  let i = bi % u.Tq;
  let b = bi / u.Tq;
  let li = (b * u.NH + h) * u.Tq + i;
  let L = lse[li];
  // A fully masked row keeps a huge lse: every p = exp2(s - lse2) it produces is masked to 0 anyway.
  ld[li] = vec2f(select(L * LOG2E, LSE_MASKED, L <= NEG_HALF), acc.x + acc.y + acc.z + acc.w);
}

// ---- backward: dk, dv ---------------------------------------------------------------------------------

const K_BK = $K_BKu;
const K_BQ = $K_BQu;
const K_PS = K_BQ + 1u;
const K_WG = K_BK * LANES;
var<workgroup> kK: array<vec4f, K_BK * RS>;
var<workgroup> kV: array<vec4f, K_BK * RS>;
var<workgroup> kQ: array<vec4f, K_BQ * RS>;
var<workgroup> kDO: array<vec4f, K_BQ * RS>;
var<workgroup> kP: array<f32, K_BK * K_PS>;
var<workgroup> kDS: array<f32, K_BK * K_PS>;
var<workgroup> kLD: array<vec2f, K_BQ>;
var<workgroup> kOk: array<u32, K_BK>;

@compute @workgroup_size(K_WG)
fn backwardDkDv(@builtin(local_invocation_index) tid: u32, @builtin(workgroup_id) wg: vec3u) {
  let b = wg.z;
  let kvh = wg.y;
  let k0 = wg.x * K_BK;
  let R = u.Tq * u.G;
  let lj = tid / LANES;
  let t = tid % LANES;
  let j = k0 + lj;                       // this thread's key
  for (var e = tid; e < K_BK * HS4; e += K_WG) {
    let kj = min(k0 + e / HS4, u.Tk - 1u);
    let ok = k0 + e / HS4 < u.Tk && keyOk(b, kj);
    let a = kIndex(b, kvh, kj) + e % HS4;
    kK[(e / HS4) * RS + e % HS4] = select(vec4f(0.0), k[a], ok);
    kV[(e / HS4) * RS + e % HS4] = select(vec4f(0.0), v[a], ok);
  }
  for (var e = tid; e < K_BK; e += K_WG) {
    kOk[e] = select(0u, 1u, k0 + e < u.Tk && keyOk(b, min(k0 + e, u.Tk - 1u)));
  }
  var gk: array<vec4f, DPT4>;
  var gv: array<vec4f, DPT4>;
  // The first query that sees key k0 is i = k0 - (Tk - Tq); rows before it contribute nothing.
  let off = u.Tk - u.Tq;
  let rStart = select(0u, (k0 - off) * u.G, k0 > off);
  for (var r0 = rStart; r0 < R; r0 += K_BQ) {
    workgroupBarrier();
    for (var e = tid; e < K_BQ * HS4; e += K_WG) {
      let a = qIndex(b, kvh, min(r0 + e / HS4, R - 1u)) + e % HS4;
      kQ[(e / HS4) * RS + e % HS4] = q[a];
      kDO[(e / HS4) * RS + e % HS4] = dout[a];
    }
    for (var e = tid; e < K_BQ; e += K_WG) { kLD[e] = ld[hIndex(b, kvh, min(r0 + e, R - 1u))]; }
    workgroupBarrier();
    var sa = array<vec4f, K_BQ / LANES>();   // S = Q K^T and dP = dO V^T for this key and rows t, t + LANES, ...
    var pa = array<vec4f, K_BQ / LANES>();
    for (var d = 0u; d < HS4; d++) {
      let kd = kK[lj * RS + d];
      let vd = kV[lj * RS + d];
      for (var rr = 0u; rr < K_BQ / LANES; rr++) {
        sa[rr] = fma(kQ[(rr * LANES + t) * RS + d], kd, sa[rr]);
        pa[rr] = fma(kDO[(rr * LANES + t) * RS + d], vd, pa[rr]);
      }
    }
    for (var rr = 0u; rr < K_BQ / LANES; rr++) {
      let lr = rr * LANES + t;
      let r = r0 + lr;
      let x = kLD[lr];
      let p = select(0.0, exp2(hsum(sa[rr]) * u.scale2 - x.x), r < R && kOk[lj] != 0u && j <= off + r / u.G);
      kP[lj * K_PS + lr] = p;
      kDS[lj * K_PS + lr] = p * (hsum(pa[rr]) - x.y);
    }
    workgroupBarrier();
    for (var rr = 0u; rr < K_BQ; rr++) {
      let p = vec4f(kP[lj * K_PS + rr]);
      let ds = vec4f(kDS[lj * K_PS + rr]);
      for (var c = 0u; c < DPT4; c++) {
        gv[c] = fma(p, kDO[rr * RS + c * LANES + t], gv[c]);
        gk[c] = fma(ds, kQ[rr * RS + c * LANES + t], gk[c]);
      }
    }
  }
  if (j < u.Tcap) {
    let base = kIndex(b, kvh, j);
    for (var c = 0u; c < DPT4; c++) {
      dk[base + c * LANES + t] = gk[c] * u.scale;
      dv[base + c * LANES + t] = gv[c];
    }
  }
}

// ---- backward: dq -------------------------------------------------------------------------------------

const Q_BR = $Q_BRu;
const Q_BC = $Q_BCu;
const Q_SS = Q_BC + 1u;
const Q_WG = Q_BR * LANES;
var<workgroup> qQ: array<vec4f, Q_BR * RS>;
var<workgroup> qDO: array<vec4f, Q_BR * RS>;
var<workgroup> qK: array<vec4f, Q_BC * RS>;
var<workgroup> qV: array<vec4f, Q_BC * RS>;
var<workgroup> qDS: array<f32, Q_BR * Q_SS>;
var<workgroup> qOk: array<u32, Q_BC>;

@compute @workgroup_size(Q_WG)
fn backwardDq(@builtin(local_invocation_index) tid: u32, @builtin(workgroup_id) wg: vec3u) {
  let b = wg.z;
  let kvh = wg.y;
  let r0 = wg.x * Q_BR;
  let R = u.Tq * u.G;
  let lr = tid / LANES;
  let t = tid % LANES;
  let r = min(r0 + lr, R - 1u);
  let lim = u.Tk - u.Tq + r / u.G;
  for (var e = tid; e < Q_BR * HS4; e += Q_WG) {
    let a = qIndex(b, kvh, min(r0 + e / HS4, R - 1u)) + e % HS4;
    qQ[(e / HS4) * RS + e % HS4] = q[a];
    qDO[(e / HS4) * RS + e % HS4] = dout[a];
  }
  let x = ld[hIndex(b, kvh, r)];
  var g: array<vec4f, DPT4>;
  let kEnd = u.Tk - u.Tq + (min(r0 + Q_BR, R) - 1u) / u.G + 1u;
  for (var k0 = 0u; k0 < kEnd; k0 += Q_BC) {
    workgroupBarrier();
    for (var e = tid; e < Q_BC * HS4; e += Q_WG) {
      let kj = min(k0 + e / HS4, u.Tk - 1u);
      let ok = k0 + e / HS4 < u.Tk && keyOk(b, kj);
      let a = kIndex(b, kvh, kj) + e % HS4;
      qK[(e / HS4) * RS + e % HS4] = select(vec4f(0.0), k[a], ok);
      qV[(e / HS4) * RS + e % HS4] = select(vec4f(0.0), v[a], ok);
    }
    for (var j = tid; j < Q_BC; j += Q_WG) {
      qOk[j] = select(0u, 1u, k0 + j < u.Tk && keyOk(b, min(k0 + j, u.Tk - 1u)));
    }
    workgroupBarrier();
    var sa = array<vec4f, Q_BC / LANES>();   // S and dP for this row and keys t, t + LANES, ...
    var pa = array<vec4f, Q_BC / LANES>();
    for (var d = 0u; d < HS4; d++) {
      let qd = qQ[lr * RS + d];
      let od = qDO[lr * RS + d];
      for (var jj = 0u; jj < Q_BC / LANES; jj++) {
        sa[jj] = fma(qd, qK[(jj * LANES + t) * RS + d], sa[jj]);
        pa[jj] = fma(od, qV[(jj * LANES + t) * RS + d], pa[jj]);
      }
    }
    for (var jj = 0u; jj < Q_BC / LANES; jj++) {
      let j = jj * LANES + t;
      let p = select(0.0, exp2(hsum(sa[jj]) * u.scale2 - x.x), qOk[j] != 0u && k0 + j <= lim);
      qDS[lr * Q_SS + j] = p * (hsum(pa[jj]) - x.y);
    }
    workgroupBarrier();
    for (var j = 0u; j < Q_BC; j++) {
      let ds = vec4f(qDS[lr * Q_SS + j]);
      for (var c = 0u; c < DPT4; c++) { g[c] = fma(ds, qK[j * RS + c * LANES + t], g[c]); }
    }
  }
  if (r0 + lr < R) {
    let base = qIndex(b, kvh, r);
    for (var c = 0u; c < DPT4; c++) { dq[base + c * LANES + t] = g[c] * u.scale; }
  }
}
