// Multi-adapter LoRA for many rows per sequence on a GPU (training and scoring, T > ROWS_T in lora.ts):
// the 'groups' path. Same math and layouts as lora.wgsl (see its header):
//   x (B*T, IN), slots (B) i32 (outside [0, S) = no adapter), A (S, R, IN), Bw (S, OUT, R), h and dh
//   (B*T, R), y and dy (B*T, OUT), dx (B*T, IN), dA like A, dB like Bw, all f32; scale = lora_alpha / r.
// Why: the 16x16 tiles give ~84 workgroups at R = 8 with half their threads idle and two barriers per 16
// inputs; these kernels spread rows and columns over hundreds of workgroups of 64-512 threads instead.
// Compile-time (the program key): RMAX, the rank bound (accumulators in registers; ranks past R read as 0),
// ROWS, the rows of one sequence a row group holds (each weight load feeds ROWS rows; V = ROWS * RMAX <= 32),
// and GW, a row group's threads (a multiple of 64).
//   forward_group:     grid1d(B * ceil(T / ROWS)), a row group per workgroup: h of its rows (threads stride
//                      over IN, then a fixed-order reduction in workgroup memory), then y += scale h Bw[s]^T
//                      (threads stride over OUT); h saved for the backward, 0 for no-adapter rows.
//   backward_dh_group: the same geometry: dh = scale dy Bw[s] (threads stride over OUT).
//   backward_grads:    grid1d(NC * (ceil(IN/64) + ceil(OUT/64))), NC = B * CT chunks of CH rows of one
//                      sequence (CT = ceil(T / CH) chunks a sequence); a workgroup owns 64 columns of one
//                      chunk: dA's part (R, 64 inputs) = dh^T x over the chunk's rows (and dx += dh A[s] for
//                      those rows and inputs when DX = 1), or dB's part (R, 64 outputs) = dy^T h. Parts go
//                      to part: (NC, R, IN) then (NC, R, OUT), each thread summing its rows in order.
//   reduce_grads:      grid1d(ceil(S * R * (IN + OUT) / 64)): dA[s, r, k] += the parts of the chunks of slot s
//                      in chunk order, dB[s, o, r] += scale * the same for dB; slots no sequence uses untouched.
// Deterministic: every sum has one fixed order (no atomics).

// Uniforms (struct Params) and bindings: written by kernel.ts from the LoRA kernels' names and types.
$HEADER

const WG: u32 = 64u; // columns a backward_grads workgroup owns, threads of reduce_grads
const GW: u32 = $GWu; // threads of a row group (forward_group, backward_dh_group): a multiple of 64
const RMAX: u32 = $RMAXu;
const ROWS: u32 = $ROWSu;
const V: u32 = ROWS * RMAX;
const RQ: u32 = RMAX / 4u;

/** The slot of sequence b, or -1 when it names no adapter. */
fn slotOf(b: u32) -> i32 {
  let s = slots[b];
  return select(-1, s, s >= 0 && u32(s) < u.S);
}

/** The flat workgroup index of a grid1d dispatch. */
fn flatWg(wg: vec3u, nwg: vec3u) -> u32 { return wg.x + wg.y * nwg.x; }

// ---- row groups: per-lane partial sums, reduced in a fixed order --------------------------------------
var<workgroup> red: array<f32, 2048>; // (V, 64): one 64-lane slice's partial sums of value v (V <= 32)
var<workgroup> red8: array<f32, 256>; // (V, 8): lanes j, j+8, ..., j+56 of value v (stride 8: no bank conflicts)
var<workgroup> sums: array<f32, 32>;  // (ROWS, RMAX): the row group's results

/**
 * sums[v] = the sum over all GW lanes of acc[v], in a fixed order: slices of 64 lanes 1, 2, ... fold onto
 * slice 0 in turn (one slice's worth of workgroup memory), then 64 lanes -> 8 -> 1. Called by all threads.
 */
fn reduceLanes(lid: u32, acc: ptr<function, array<f32, V>>) {
  for (var f = 1u; f < GW / 64u; f++) {
    workgroupBarrier();
    if (lid / 64u == f) { for (var v = 0u; v < V; v++) { red[v * 64u + lid % 64u] = (*acc)[v]; } }
    workgroupBarrier();
    if (lid < 64u) { for (var v = 0u; v < V; v++) { (*acc)[v] += red[v * 64u + lid]; } }
  }
  workgroupBarrier();
  if (lid < 64u) { for (var v = 0u; v < V; v++) { red[v * 64u + lid] = (*acc)[v]; } }
  workgroupBarrier();
  for (var p = lid; p < V * 8u; p += GW) {
    let base = (p / 8u) * 64u + p % 8u;
    var a = 0.0;
    for (var l = 0u; l < 64u; l += 8u) { a += red[base + l]; }
    red8[p] = a;
  }
  workgroupBarrier();
  if (lid < V) {
    var a = 0.0;
    for (var j = 0u; j < 8u; j++) { a += red8[lid * 8u + j]; }
    sums[lid] = a;
  }
  workgroupBarrier();
}

/** The row group's sequence b, first row t0 and slot (from the flat workgroup index). */
fn group(wid: u32) -> vec3i {
  let GT = (u.T + ROWS - 1u) / ROWS;
  let b = wid / GT;
  return vec3i(i32(b), i32((wid % GT) * ROWS), slotOf(b));
}

@compute @workgroup_size(GW)
fn forward_group(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let g = group(flatWg(wg, nwg));
  let b = u32(g.x);
  let t0 = u32(g.y);
  if (b >= u.B) { return; }
  let s = g.z;
  if (s < 0) {
    for (var i = lid; i < ROWS * u.R; i += GW) {
      let t = t0 + i / u.R;
      if (t < u.T) { h[(b * u.T + t) * u.R + i % u.R] = 0.0; }
    }
    return;
  }
  let m0 = b * u.T + t0;
  var acc: array<f32, V>;
  for (var v = 0u; v < V; v++) { acc[v] = 0.0; }
  let aBase = u32(s) * u.R * u.IN;
  for (var k = lid; k < u.IN; k += GW) {
    var a: array<f32, RMAX>;
    for (var r = 0u; r < RMAX; r++) { a[r] = select(0.0, A[aBase + min(r, u.R - 1u) * u.IN + k], r < u.R); }
    for (var i = 0u; i < ROWS; i++) {
      let xv = select(0.0, x[(m0 + min(i, u.T - 1u - t0)) * u.IN + k], t0 + i < u.T);
      for (var r = 0u; r < RMAX; r++) { acc[i * RMAX + r] = fma(xv, a[r], acc[i * RMAX + r]); }
    }
  }
  reduceLanes(lid, &acc);
  if (lid < V) {
    let i = lid / RMAX;
    let r = lid % RMAX;
    if (t0 + i < u.T && r < u.R) { h[(m0 + i) * u.R + r] = sums[lid]; }
  }
  let bBase = u32(s) * u.OUT * u.R;
  for (var o = lid; o < u.OUT; o += GW) {
    var bw: array<f32, RMAX>;
    for (var r = 0u; r < RMAX; r++) { bw[r] = select(0.0, Bw[bBase + o * u.R + min(r, u.R - 1u)], r < u.R); }
    for (var i = 0u; i < ROWS; i++) {
      if (t0 + i >= u.T) { break; }
      var a = 0.0;
      for (var r = 0u; r < RMAX; r++) { a = fma(sums[i * RMAX + r], bw[r], a); }
      y[(m0 + i) * u.OUT + o] += u.scale * a;
    }
  }
}

@compute @workgroup_size(GW)
fn backward_dh_group(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let g = group(flatWg(wg, nwg));
  let b = u32(g.x);
  let t0 = u32(g.y);
  if (b >= u.B) { return; }
  let s = g.z;
  let m0 = b * u.T + t0;
  var acc: array<f32, V>;
  for (var v = 0u; v < V; v++) { acc[v] = 0.0; }
  if (s >= 0) {
    let bBase = u32(s) * u.OUT * u.R;
    for (var o = lid; o < u.OUT; o += GW) {
      var bw: array<f32, RMAX>;
      for (var r = 0u; r < RMAX; r++) { bw[r] = select(0.0, Bw[bBase + o * u.R + min(r, u.R - 1u)], r < u.R); }
      for (var i = 0u; i < ROWS; i++) {
        let d = select(0.0, dy[(m0 + min(i, u.T - 1u - t0)) * u.OUT + o], t0 + i < u.T);
        for (var r = 0u; r < RMAX; r++) { acc[i * RMAX + r] = fma(d, bw[r], acc[i * RMAX + r]); }
      }
    }
  }
  reduceLanes(lid, &acc); // no-adapter rows sum zeros: dh = 0 there
  if (lid < V) {
    let i = lid / RMAX;
    let r = lid % RMAX;
    if (t0 + i < u.T && r < u.R) { dh[(m0 + i) * u.R + r] = u.scale * sums[lid]; }
  }
}

// ---- weight gradients: chunks of rows x 64 columns, then the parts' fixed-order sum --------------------
const SB: u32 = 64u; // rows staged at once
const STEP: u32 = 8u; // rows whose loads are in flight together (SB is a multiple)
var<workgroup> stage: array<vec4f, 256>; // (SB, RQ): h or dh of SB rows, ranks past R zero (SB * RMAX <= 1024)

/** Stages rows m0 .. m0+n-1 of src (h when fromH, else dh), n <= SB. */
fn stageRows(lid: u32, m0: u32, n: u32, fromH: bool) {
  workgroupBarrier(); // the previous block's readers are done
  for (var i = lid; i < SB * RMAX; i += WG) {
    let row = i / RMAX;
    let r = i % RMAX;
    var v = 0.0;
    if (row < n && r < u.R) {
      let j = (m0 + row) * u.R + r;
      if (fromH) { v = h[j]; } else { v = dh[j]; }
    }
    stage[i / 4u][i % 4u] = v;
  }
  workgroupBarrier();
}

@compute @workgroup_size(64)
fn backward_grads(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let nbA = (u.IN + WG - 1u) / WG;
  let nbB = (u.OUT + WG - 1u) / WG;
  let wid = flatWg(wg, nwg);
  let c = wid / (nbA + nbB);
  let blk = wid % (nbA + nbB);
  let NC = u.B * u.CT;
  if (c >= NC) { return; }
  let b = c / u.CT;
  let s = slotOf(b);
  if (s < 0) { return; } // the reduction skips this chunk
  let t0 = (c % u.CT) * u.CH;
  let t1 = min(u.T, t0 + u.CH);
  let forA = blk < nbA;
  let col = select(blk - nbA, blk, forA) * WG + lid;
  let width = select(u.OUT, u.IN, forA);
  let ok = col < width;
  let colC = min(col, width - 1u); // loads stay in range; !ok never stores
  let dxOn = forA && u.DX == 1u;
  var a: array<vec4f, RQ>; // A[s, :, col] for dx
  if (dxOn) {
    for (var r = 0u; r < RMAX; r++) { a[r / 4u][r % 4u] = select(0.0, A[(u32(s) * u.R + min(r, u.R - 1u)) * u.IN + colC], r < u.R); }
  }
  var acc: array<vec4f, RQ>;
  for (var q = 0u; q < RQ; q++) { acc[q] = vec4f(0.0); }
  for (var tb = t0; tb < t1; tb += SB) {
    let n = min(SB, t1 - tb);
    let mb = b * u.T + tb;
    stageRows(lid, mb, n, !forA);
    // eight rows a step, their loads issued together (a loop of one load each waits out its latency per
    // row); rows past n read as 0 against zero-staged h / dh, adding exactly 0
    for (var i = 0u; i < n; i += STEP) {
      var v: array<f32, STEP>;
      for (var j = 0u; j < STEP; j++) {
        let m = mb + min(i + j, n - 1u);
        var e: f32;
        if (forA) { e = x[m * u.IN + colC]; } else { e = dy[m * u.OUT + colC]; }
        v[j] = select(0.0, e, i + j < n);
      }
      for (var j = 0u; j < STEP; j++) {
        for (var q = 0u; q < RQ; q++) { acc[q] = fma(stage[(i + j) * RQ + q], vec4f(v[j]), acc[q]); }
      }
      if (dxOn && ok) {
        var prev: array<f32, STEP>;
        for (var j = 0u; j < STEP; j++) { prev[j] = dx[(mb + min(i + j, n - 1u)) * u.IN + col]; }
        for (var j = 0u; j < STEP; j++) {
          var d = prev[j];
          for (var q = 0u; q < RQ; q++) {
            let e = stage[(i + j) * RQ + q];
            d = fma(e.x, a[q].x, d); d = fma(e.y, a[q].y, d); d = fma(e.z, a[q].z, d); d = fma(e.w, a[q].w, d);
          }
          if (i + j < n) { dx[(mb + i + j) * u.IN + col] = d; }
        }
      }
    }
  }
  if (!ok) { return; }
  let base = select(u.B * u.CT * u.R * u.IN + c * u.R * u.OUT, c * u.R * u.IN, forA);
  for (var r = 0u; r < RMAX; r++) {
    if (r < u.R) { part[base + r * width + col] = acc[r / 4u][r % 4u]; }
  }
}

@compute @workgroup_size(64)
fn reduce_grads(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let i = flatWg(wg, nwg) * WG + lid;
  let nA = u.S * u.R * u.IN;
  let nB = u.S * u.R * u.OUT;
  if (i >= nA + nB) { return; }
  let forA = i < nA;
  let j = select(i - nA, i, forA);
  let width = select(u.OUT, u.IN, forA);
  let s = j / (u.R * width);
  let rc = j % (u.R * width); // r * width + column: the element's offset in a chunk's part
  let base = select(u.B * u.CT * u.R * u.IN, 0u, forA);
  let stride = u.R * width;
  var acc = 0.0;
  var used = false;
  let NC = u.B * u.CT;
  for (var c = 0u; c < NC; c += STEP) { // eight chunks' loads in flight, then their sum in chunk order
    var v: array<f32, STEP>;
    for (var j = 0u; j < STEP; j++) {
      v[j] = 0.0; // other slots' chunks (and those past NC) add exactly 0
      if (c + j < NC && slotOf((c + j) / u.CT) == i32(s)) { v[j] = part[base + (c + j) * stride + rc]; used = true; }
    }
    for (var j = 0u; j < STEP; j++) { acc += v[j]; }
  }
  if (!used) { return; }
  let r = rc / width;
  let col = rc % width;
  if (forA) {
    dA[(s * u.R + r) * u.IN + col] += acc;
  } else {
    dB[(s * u.OUT + col) * u.R + r] += u.scale * acc;
  }
}
