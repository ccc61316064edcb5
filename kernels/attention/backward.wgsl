// Causal attention backward, register-blocked ('blocked' variants; attention.wgsl holds the forward and the
// first backward, 'v1'). Same math, layouts, GQA rows, mask and cache rules as attention.wgsl, whose header
// defines them; this file changes how the work is laid out, so each workgroup-memory read feeds several FMAs:
//
//   backwardDkDvBlocked: grid (ceil(Tcap / K_BK) * NS, NKV, B), workgroup K_NT = K_BK / 4 * HS4 / K_W threads.
//     The workgroup owns K_BK keys of one kv head and split s of the query rows that see them (NS splits of
//     equal length, so the long key blocks near the start are shared by NS workgroups; x = kb * NS + s puts
//     the longest first). K and V are held transposed (d-major, 4 keys a vec4); Q and dO tiles of K_BQ rows
//     row-major; per tile:
//       phase A (S^T, dP^T): thread = 4 keys x K_TR rows (rows rg, rg + HS4 / K_W, ...); per 4 dims it
//         reads 8 K/V vec4s and 2 * K_TR Q/dO vec4s for 32 * K_TR FMAs. P^T and dS^T go to workgroup memory.
//       phase C (dV += P^T dO, dK += dS^T Q): thread = 4 keys x K_W vec4 columns (c, c + HS4 / K_W, ...);
//         per row 2 + 2 * K_W vec4 reads for 32 * K_W FMAs. dk/dv (dk scaled) go to pk/pv at split s:
//         (NS, B, Tcap, NKV, HS); NS = 1 writes dk/dv.
//   backwardDkDvReduce: grid grid1d(ceil(B * Tcap * NKV * HS4 / 64)), workgroup 64: dk = sum_s pk[s],
//     dv = sum_s pv[s] in split order (deterministic; only when NS > 1).
//   backwardDqBlocked: grid (ceil(R / Q_BR), NKV, B), workgroup Q_NT = Q_BR / 4 * HS4 / Q_W threads, the last row
//     block (most keys) first. Q and dO of Q_BR rows held transposed (d-major, 4 rows a vec4); K and V tiles
//     of Q_BC keys row-major streamed up to the last key the block's rows see; per tile:
//       phase A: thread = 4 rows x Q_TC keys (keys kc, kc + HS4 / Q_W, ...); dS^T to workgroup memory.
//       phase C (dQ += dS K): thread = 4 rows x Q_W vec4 columns.
//     With the fused prep (PREP) it computes ld = (lse * log2 e, D = rowsum(dout * out)) of its rows itself
//     and writes it for backwardDkDvBlocked (which then runs after it): one dispatch less, 9 storage buffers.
//   backwardDqFromDs (variants with `ds`): the same grid and phase C, but dS comes from dsg, which
//     backwardDkDvBlocked wrote (DS_STORE) for every (row, key) it saw: dq is then a plain dS K product
//     (5 matmuls in all instead of 7), for B * NH * Tq * Tk floats of scratch; prep runs first, dq last.
//     dsg (B, NKV, R, Tk): entries a row cannot see (after its last key) are never written, so they are
//     masked by position here, never read.
// Padding: with a mask, each workgroup first finds its batch's range of real keys (realRange); dq streams only
// the key tiles that meet it, and a dk/dv key block of padding only takes no rows (its dk, dv are 0, its dS is
// never stored, and backwardDqFromDs masks those keys). PF ('pf' variants): the next streamed tile (Q/dO/ld,
// K/V, or K/dS) is loaded into registers before the current tile's math instead of after it, so its global
// latency hides behind that math; the arithmetic and its order are the same, so the bits are too.
// Every dq/dk/dv element is written once by one thread (and reduced in a fixed order): deterministic.

// Uniforms (struct Params) and bindings: written by kernel.ts from its kernels' names and types.
$HEADER

const HS4 = $HS4u;
const HS = HS4 * 4u;
const RS = HS4 + 1u;        // padded row stride of row-major vec4 tiles
const NEG_HALF = -5.0e29;
const LSE_MASKED = -1.0e30;
const LOG2E = 1.4426950408889634;
const LANE4 = vec4u(0u, 1u, 2u, 3u);
// PF: the streamed tile of the next step is loaded into registers before this step's math (its global
// latency hidden behind it), not after; the arithmetic is the same either way.
const PF = $PF;

fn keyOk(b: u32, j: u32) -> bool { return u.hasMask == 0u || mask[b * u.Tm + j] != 0; }
// Whether key j is real (< Tk, not padding); j may be past Tcap.
fn keyReal(b: u32, j: u32) -> bool { return j < u.Tk && keyOk(b, min(j, u.Tk - 1u)); }
fn qIndex(b: u32, kvh: u32, r: u32) -> u32 {   // first vec4 of row r = (i, g) of (b, kvh) in q/out/dout/dq
  let i = r / u.G;
  return ((b * u.Tq + i) * u.NH + kvh * u.G + r % u.G) * HS4;
}
fn kIndex(b: u32, kvh: u32, j: u32) -> u32 {   // first vec4 of key j of (b, kvh) in k/v/dk/dv
  return ((b * u.Tcap + j) * u.NKV + kvh) * HS4;
}
fn hIndex(b: u32, kvh: u32, r: u32) -> u32 {   // index of row r in lse / ld (B, NH, Tq)
  return (b * u.NH + kvh * u.G + r % u.G) * u.Tq + r / u.G;
}

// realRange: real-range.wgsl

// ---- dk, dv ---------------------------------------------------------------------------------------------

const K_BK = $K_BKu;
const K_BK4 = K_BK / 4u;
const K_BQ = $K_BQu;
const K_W = $K_Wu;              // phase C vec4 columns per thread
const K_NC = HS4 / K_W;         // column groups of phase C = row groups of phase A
const K_NT = K_BK4 * K_NC;
const K_TR = K_BQ / K_NC;       // phase A rows per thread
const K_PS4 = K_BK4 + 1u;
var<workgroup> kKt: array<vec4f, HS * K_BK4>;   // [d][key / 4]
var<workgroup> kVt: array<vec4f, HS * K_BK4>;
var<workgroup> kQ: array<vec4f, K_BQ * RS>;     // [row][d / 4]
var<workgroup> kDO: array<vec4f, K_BQ * RS>;
var<workgroup> kP: array<vec4f, K_BQ * K_PS4>;  // P^T: [row][key / 4]
var<workgroup> kDS: array<vec4f, K_BQ * K_PS4>;
var<workgroup> kLD: array<vec2f, K_BQ>;
const K_LQ = (K_BQ * HS4 + K_NT - 1u) / K_NT;   // Q/dO vec4s a thread loads per tile
const K_LL = (K_BQ + K_NT - 1u) / K_NT;
struct KTile { q: array<vec4f, K_LQ>, o: array<vec4f, K_LQ>, l: array<vec2f, K_LL> }

fn kFetch(tid: u32, b: u32, kvh: u32, r0: u32, R: u32) -> KTile {
  var t: KTile;
  for (var i = 0u; i < K_LQ; i++) {
    let e = tid + i * K_NT;
    if (e < K_BQ * HS4) {
      let a = qIndex(b, kvh, min(r0 + e / HS4, R - 1u)) + e % HS4;
      t.q[i] = q[a];
      t.o[i] = dout[a];
    }
  }
  for (var i = 0u; i < K_LL; i++) {
    let e = tid + i * K_NT;
    if (e < K_BQ) { t.l[i] = ld[hIndex(b, kvh, min(r0 + e, R - 1u))]; }
  }
  return t;
}

fn kStore(tid: u32, t: KTile) {
  for (var i = 0u; i < K_LQ; i++) {
    let e = tid + i * K_NT;
    if (e < K_BQ * HS4) {
      kQ[(e / HS4) * RS + e % HS4] = t.q[i];
      kDO[(e / HS4) * RS + e % HS4] = t.o[i];
    }
  }
  for (var i = 0u; i < K_LL; i++) {
    let e = tid + i * K_NT;
    if (e < K_BQ) { kLD[e] = t.l[i]; }
  }
}

@compute @workgroup_size(K_NT)
fn backwardDkDvBlocked(@builtin(local_invocation_index) tid: u32, @builtin(workgroup_id) wg: vec3u) {
  let b = wg.z;
  let kvh = wg.y;
  let s = wg.x % u.NS;
  let k0 = (wg.x / u.NS) * K_BK;
  let R = u.Tq * u.G;
  let off = u.Tk - u.Tq;
  // Neighbouring threads take neighbouring keys, so their transposed writes hit different banks.
  for (var e = tid; e < K_BK * HS4; e += K_NT) {
    let kk = e % K_BK;
    let d4 = e / K_BK;
    let kj = min(k0 + kk, u.Tk - 1u);
    let ok = keyReal(b, k0 + kk);
    let a = kIndex(b, kvh, kj) + d4;
    // Keys past Tk or masked get zero rows, so garbage there (even NaN) cannot reach an output.
    let kx = select(vec4f(0.0), k[a], ok);
    let vx = select(vec4f(0.0), v[a], ok);
    let w = d4 * 4u * K_BK4 + kk / 4u;
    let c = kk % 4u;
    kKt[w][c] = kx.x; kKt[w + K_BK4][c] = kx.y; kKt[w + 2u * K_BK4][c] = kx.z; kKt[w + 3u * K_BK4][c] = kx.w;
    kVt[w][c] = vx.x; kVt[w + K_BK4][c] = vx.y; kVt[w + 2u * K_BK4][c] = vx.z; kVt[w + 3u * K_BK4][c] = vx.w;
  }
  // phase A: keys jA .. jA + 3, rows rgA + K_NC * i
  let kgA = tid % K_BK4;
  let rgA = tid / K_BK4;
  let jA = k0 + kgA * 4u;
  let okA = vec4<bool>(keyReal(b, jA), keyReal(b, jA + 1u), keyReal(b, jA + 2u), keyReal(b, jA + 3u));
  // phase C: keys jC .. jC + 3 (accumulator 4 * w + key), vec4 columns cC + K_NC * w
  let cC = tid % K_NC;
  let kgC = tid / K_NC;
  let jC = k0 + kgC * 4u;
  var gk = array<vec4f, 4 * K_W>();
  var gv = array<vec4f, 4 * K_W>();
  // Rows before (k0 - off) * G see none of these keys; split s takes its share of the rest. A block of
  // padding only (no real key) takes no rows: its dk, dv are 0 (and it stores no dS).
  let real = realRange(b, tid, K_NT);
  let rFirst = select(0u, min((k0 - off) * u.G, R), k0 > off);
  let per = ((R - rFirst + u.NS - 1u) / u.NS + K_BQ - 1u) / K_BQ * K_BQ;
  let rA = min(rFirst + s * per, R);
  let rB = select(rA, min(rA + per, R), k0 < real.y && k0 + K_BK > real.x);
  var tile = kFetch(tid, b, kvh, rA, R);
  for (var r0 = rA; r0 < rB; r0 += K_BQ) {
    workgroupBarrier();
    kStore(tid, tile);
    workgroupBarrier();
    if (PF) { tile = kFetch(tid, b, kvh, r0 + K_BQ, R); }
    var sa = array<vec4f, K_TR>();   // S^T, dP^T of keys jA.. and row i
    var pa = array<vec4f, K_TR>();
    for (var d4 = 0u; d4 < HS4; d4++) {
      let w = d4 * 4u * K_BK4 + kgA;
      let k0v = kKt[w]; let k1v = kKt[w + K_BK4]; let k2v = kKt[w + 2u * K_BK4]; let k3v = kKt[w + 3u * K_BK4];
      let v0v = kVt[w]; let v1v = kVt[w + K_BK4]; let v2v = kVt[w + 2u * K_BK4]; let v3v = kVt[w + 3u * K_BK4];
      for (var i = 0u; i < K_TR; i++) {
        let lr = rgA + K_NC * i;
        let qv = kQ[lr * RS + d4];
        let ov = kDO[lr * RS + d4];
        sa[i] = fma(k3v, vec4f(qv.w), fma(k2v, vec4f(qv.z), fma(k1v, vec4f(qv.y), fma(k0v, vec4f(qv.x), sa[i]))));
        pa[i] = fma(v3v, vec4f(ov.w), fma(v2v, vec4f(ov.z), fma(v1v, vec4f(ov.y), fma(v0v, vec4f(ov.x), pa[i]))));
      }
    }
    for (var i = 0u; i < K_TR; i++) {
      let lr = rgA + K_NC * i;
      let r = r0 + lr;
      let x = kLD[lr];
      let vis = okA & vec4<bool>(r < rB) & (vec4u(jA) + LANE4 <= vec4u(off + r / u.G));
      let p = select(vec4f(0.0), exp2(sa[i] * u.scale2 - x.x), vis);
      kP[lr * K_PS4 + kgA] = p;
      let ds = p * (pa[i] - x.y);
      kDS[lr * K_PS4 + kgA] = ds;
$DS_STORE
    }
    workgroupBarrier();
    // All K_BQ rows (a fixed count the compiler can unroll): rows past rB have P = dS = 0.
    for (var rr = 0u; rr < K_BQ; rr++) {
      let p = kP[rr * K_PS4 + kgC];
      let ds = kDS[rr * K_PS4 + kgC];
      for (var w = 0u; w < K_W; w++) {
        let o = kDO[rr * RS + cC + K_NC * w];
        let qv = kQ[rr * RS + cC + K_NC * w];
        gv[4u * w] = fma(vec4f(p.x), o, gv[4u * w]); gv[4u * w + 1u] = fma(vec4f(p.y), o, gv[4u * w + 1u]);
        gv[4u * w + 2u] = fma(vec4f(p.z), o, gv[4u * w + 2u]); gv[4u * w + 3u] = fma(vec4f(p.w), o, gv[4u * w + 3u]);
        gk[4u * w] = fma(vec4f(ds.x), qv, gk[4u * w]); gk[4u * w + 1u] = fma(vec4f(ds.y), qv, gk[4u * w + 1u]);
        gk[4u * w + 2u] = fma(vec4f(ds.z), qv, gk[4u * w + 2u]); gk[4u * w + 3u] = fma(vec4f(ds.w), qv, gk[4u * w + 3u]);
      }
    }
    if (!PF) { tile = kFetch(tid, b, kvh, r0 + K_BQ, R); }
  }
  let part = s * u.B * u.Tcap * u.NKV * HS4;
  for (var c = 0u; c < 4u; c++) {
    if (jC + c < u.Tcap) {
      for (var w = 0u; w < K_W; w++) {
        let a = part + kIndex(b, kvh, jC + c) + cC + K_NC * w;
        pk[a] = gk[4u * w + c] * u.scale;
        pv[a] = gv[4u * w + c];
      }
    }
  }
}

@compute @workgroup_size(64)
fn backwardDkDvReduce(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let n = gid.x + gid.y * nwg.x * 64u;
  let total = u.B * u.Tcap * u.NKV * HS4;
  if (n >= total) { return; }
  var a = pk[n];
  var c = pv[n];
  for (var s = 1u; s < u.NS; s++) {
    a += pk[s * total + n];
    c += pv[s * total + n];
  }
  dk[n] = a;
  dv[n] = c;
}

// ---- dq -------------------------------------------------------------------------------------------------

const Q_BR = $Q_BRu;
const Q_BR4 = Q_BR / 4u;
const Q_BC = $Q_BCu;
const Q_W = $Q_Wu;              // phase C vec4 columns per thread
const Q_NC = HS4 / Q_W;         // column groups of phase C = key groups of phase A
const Q_NT = Q_BR4 * Q_NC;
const Q_TC = Q_BC / Q_NC;       // phase A keys per thread
const Q_DS4 = Q_BR4 + 1u;
var<workgroup> qQt: array<vec4f, HS * Q_BR4>;   // [d][row / 4]
var<workgroup> qDOt: array<vec4f, HS * Q_BR4>;
var<workgroup> qK: array<vec4f, Q_BC * RS>;     // [key][d / 4]
var<workgroup> qV: array<vec4f, Q_BC * RS>;
var<workgroup> qDS: array<vec4f, Q_BC * Q_DS4>; // dS^T: [key][row / 4]
var<workgroup> qLD: array<vec2f, Q_BR>;
const Q_LK = (Q_BC * HS4 + Q_NT - 1u) / Q_NT;   // K/V vec4s a thread loads per tile
const Q_LS = (Q_BR * Q_BC + Q_NT - 1u) / Q_NT;  // dS values a thread loads per tile (backwardDqFromDs)
struct QTile { k: array<vec4f, Q_LK>, v: array<vec4f, Q_LK> }
struct DsTile { k: array<vec4f, Q_LK>, s: array<f32, Q_LS> }

/** Keys k0 .. k0 + Q_BC - 1 of K (and V when withV), zero rows where not real. */
fn qFetch(tid: u32, b: u32, kvh: u32, k0: u32, withV: bool) -> QTile {
  var t: QTile;
  for (var i = 0u; i < Q_LK; i++) {
    let e = tid + i * Q_NT;
    if (e < Q_BC * HS4) {
      let kk = e / HS4;
      let a = kIndex(b, kvh, min(k0 + kk, u.Tk - 1u)) + e % HS4;
      let ok = keyReal(b, k0 + kk);
      t.k[i] = select(vec4f(0.0), k[a], ok);
      if (withV) { t.v[i] = select(vec4f(0.0), v[a], ok); }
    }
  }
  return t;
}

fn qStore(tid: u32, t: QTile, withV: bool) {
  for (var i = 0u; i < Q_LK; i++) {
    let e = tid + i * Q_NT;
    if (e < Q_BC * HS4) {
      qK[(e / HS4) * RS + e % HS4] = t.k[i];
      if (withV) { qV[(e / HS4) * RS + e % HS4] = t.v[i]; }
    }
  }
}

/**
 * g += dS (the tile in qDS, rows rgC*4..+3) . K (the tile in qK, columns cC + Q_NC w) over all Q_BC keys of
 * the tile (a fixed count the compiler can unroll): keys a row does not see have dS = 0 and finite K rows.
 */
fn dsTimesK(g: ptr<function, array<vec4f, 4 * Q_W>>, rgC: u32, cC: u32) {
  for (var kk = 0u; kk < Q_BC; kk++) {
    let ds = qDS[kk * Q_DS4 + rgC];
    for (var w = 0u; w < Q_W; w++) {
      let kv = qK[kk * RS + cC + Q_NC * w];
      (*g)[4u * w] = fma(vec4f(ds.x), kv, (*g)[4u * w]); (*g)[4u * w + 1u] = fma(vec4f(ds.y), kv, (*g)[4u * w + 1u]);
      (*g)[4u * w + 2u] = fma(vec4f(ds.z), kv, (*g)[4u * w + 2u]); (*g)[4u * w + 3u] = fma(vec4f(ds.w), kv, (*g)[4u * w + 3u]);
    }
  }
}

/** dq of the thread's 4 rows (r0 + rgC*4 ..) and columns, scaled. */
fn storeDq(g: ptr<function, array<vec4f, 4 * Q_W>>, b: u32, kvh: u32, r0: u32, R: u32, rgC: u32, cC: u32) {
  for (var c = 0u; c < 4u; c++) {
    let r = r0 + rgC * 4u + c;
    if (r < R) {
      for (var w = 0u; w < Q_W; w++) { dq[qIndex(b, kvh, r) + cC + Q_NC * w] = (*g)[4u * w + c] * u.scale; }
    }
  }
}

@compute @workgroup_size(Q_NT)
fn backwardDqBlocked(@builtin(local_invocation_index) tid: u32, @builtin(workgroup_id) wg: vec3u) {
  let b = wg.z;
  let kvh = wg.y;
  let R = u.Tq * u.G;
  let nRB = (R + Q_BR - 1u) / Q_BR;
  let r0 = (nRB - 1u - wg.x) * Q_BR;   // the last rows see the most keys: start them first
  let off = u.Tk - u.Tq;
  for (var e = tid; e < Q_BR * HS4; e += Q_NT) {   // neighbouring threads, neighbouring rows (as above)
    let lr = e % Q_BR;
    let d4 = e / Q_BR;
    let a = qIndex(b, kvh, min(r0 + lr, R - 1u)) + d4;
    let qx = q[a];
    let ox = dout[a];
    let w = d4 * 4u * Q_BR4 + lr / 4u;
    let c = lr % 4u;
    qQt[w][c] = qx.x; qQt[w + Q_BR4][c] = qx.y; qQt[w + 2u * Q_BR4][c] = qx.z; qQt[w + 3u * Q_BR4][c] = qx.w;
    qDOt[w][c] = ox.x; qDOt[w + Q_BR4][c] = ox.y; qDOt[w + 2u * Q_BR4][c] = ox.z; qDOt[w + 3u * Q_BR4][c] = ox.w;
  }
  for (var lr = tid; lr < Q_BR; lr += Q_NT) {
    let r = min(r0 + lr, R - 1u);
$PREP
  }
  workgroupBarrier();
  // phase A: rows 4 * rgA .. + 3, keys kcA + Q_NC * j of each tile
  let rgA = tid % Q_BR4;
  let kcA = tid / Q_BR4;
  let rA = r0 + rgA * 4u + LANE4;
  let l2 = vec4f(qLD[rgA * 4u].x, qLD[rgA * 4u + 1u].x, qLD[rgA * 4u + 2u].x, qLD[rgA * 4u + 3u].x);
  let dd = vec4f(qLD[rgA * 4u].y, qLD[rgA * 4u + 1u].y, qLD[rgA * 4u + 2u].y, qLD[rgA * 4u + 3u].y);
  let lim = vec4u(off) + rA / vec4u(u.G);
  let rowOk = rA < vec4u(R);
  // phase C: rows 4 * rgC .. + 3 (accumulator 4 * w + row), vec4 columns cC + Q_NC * w
  let cC = tid % Q_NC;
  let rgC = tid / Q_NC;
  var g = array<vec4f, 4 * Q_W>();
  // Key tiles from the first real key's to the last key the block's rows see (or the last real key).
  let real = realRange(b, tid, Q_NT);
  let kEnd = min(off + (min(r0 + Q_BR, R) - 1u) / u.G + 1u, real.y);
  var tile = qFetch(tid, b, kvh, real.x / Q_BC * Q_BC, true);
  for (var k0 = real.x / Q_BC * Q_BC; k0 < kEnd; k0 += Q_BC) {
    workgroupBarrier();
    qStore(tid, tile, true);
    workgroupBarrier();
    if (PF) { tile = qFetch(tid, b, kvh, k0 + Q_BC, true); }
    var sa = array<vec4f, Q_TC>();   // S, dP of rows rA and key j
    var pa = array<vec4f, Q_TC>();
    for (var d4 = 0u; d4 < HS4; d4++) {
      let w = d4 * 4u * Q_BR4 + rgA;
      let q0 = qQt[w]; let q1 = qQt[w + Q_BR4]; let q2 = qQt[w + 2u * Q_BR4]; let q3 = qQt[w + 3u * Q_BR4];
      let o0 = qDOt[w]; let o1 = qDOt[w + Q_BR4]; let o2 = qDOt[w + 2u * Q_BR4]; let o3 = qDOt[w + 3u * Q_BR4];
      for (var j = 0u; j < Q_TC; j++) {
        let kv = qK[(kcA + Q_NC * j) * RS + d4];
        let vv = qV[(kcA + Q_NC * j) * RS + d4];
        sa[j] = fma(q3, vec4f(kv.w), fma(q2, vec4f(kv.z), fma(q1, vec4f(kv.y), fma(q0, vec4f(kv.x), sa[j]))));
        pa[j] = fma(o3, vec4f(vv.w), fma(o2, vec4f(vv.z), fma(o1, vec4f(vv.y), fma(o0, vec4f(vv.x), pa[j]))));
      }
    }
    for (var j = 0u; j < Q_TC; j++) {
      let kk = kcA + Q_NC * j;
      let key = k0 + kk;
      let vis = vec4<bool>(keyReal(b, key)) & rowOk & (vec4u(key) <= lim);
      let p = select(vec4f(0.0), exp2(sa[j] * u.scale2 - l2), vis);
      qDS[kk * Q_DS4 + rgA] = p * (pa[j] - dd);
    }
    workgroupBarrier();
    dsTimesK(&g, rgC, cC);
    if (!PF) { tile = qFetch(tid, b, kvh, k0 + Q_BC, true); }
  }
  storeDq(&g, b, kvh, r0, R, rgC, cC);
}

/**
 * K keys k0.. and dS of rows r0.., keys k0.. (0 where a row does not see the key, padding included: the
 * dS of a key block that was all padding was never written).
 */
fn dsFetch(tid: u32, b: u32, kvh: u32, r0: u32, k0: u32, R: u32, dsRows: u32) -> DsTile {
  let kt = qFetch(tid, b, kvh, k0, false);
  var t: DsTile;
  t.k = kt.k;
  let off = u.Tk - u.Tq;
  for (var i = 0u; i < Q_LS; i++) {
    let e = tid + i * Q_NT;
    if (e < Q_BR * Q_BC) {
      let r = r0 + e / Q_BC;
      let j = k0 + e % Q_BC;
      let ok = r < R && keyReal(b, j) && j <= off + r / u.G;
      let x = dsg[(dsRows + min(r, R - 1u)) * u.Tk + min(j, u.Tk - 1u)];
      t.s[i] = select(0.0, x, ok);
    }
  }
  return t;
}

@compute @workgroup_size(Q_NT)
fn backwardDqFromDs(@builtin(local_invocation_index) tid: u32, @builtin(workgroup_id) wg: vec3u) {
  let b = wg.z;
  let kvh = wg.y;
  let R = u.Tq * u.G;
  let nRB = (R + Q_BR - 1u) / Q_BR;
  let r0 = (nRB - 1u - wg.x) * Q_BR;   // the last rows see the most keys: start them first
  let off = u.Tk - u.Tq;
  let dsRows = (b * u.NKV + kvh) * R;
  let cC = tid % Q_NC;
  let rgC = tid / Q_NC;
  var g = array<vec4f, 4 * Q_W>();
  let real = realRange(b, tid, Q_NT);
  let kEnd = min(off + (min(r0 + Q_BR, R) - 1u) / u.G + 1u, real.y);
  let kStart = real.x / Q_BC * Q_BC;
  var tile = dsFetch(tid, b, kvh, r0, kStart, R, dsRows);
  for (var k0 = kStart; k0 < kEnd; k0 += Q_BC) {
    workgroupBarrier();
    qStore(tid, QTile(tile.k, tile.k), false);
    for (var i = 0u; i < Q_LS; i++) {
      let e = tid + i * Q_NT;
      if (e < Q_BR * Q_BC) {
        let lr = e / Q_BC;
        qDS[(e % Q_BC) * Q_DS4 + lr / 4u][lr % 4u] = tile.s[i];
      }
    }
    workgroupBarrier();
    if (PF) { tile = dsFetch(tid, b, kvh, r0, k0 + Q_BC, R, dsRows); }
    dsTimesK(&g, rgC, cC);
    if (!PF) { tile = dsFetch(tid, b, kvh, r0, k0 + Q_BC, R, dsRows); }
  }
  storeDq(&g, b, kvh, r0, R, rgC, cC);
}
