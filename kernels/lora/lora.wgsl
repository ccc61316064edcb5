// Multi-adapter LoRA over stacked adapter buffers, one adapter slot per sequence, and its backward.
// PEFT layout: lora_A.weight [R, IN], lora_B.weight [OUT, R]; the adapters of all slots are stacked.
//   x (B*T, IN) f32, row m of sequence b = m / T; slots (B) i32, slot outside [0, S) (-1) = no adapter:
//   its rows get nothing added, and contribute no gradient.
//   A (S, R, IN) f32, Bw (S, OUT, R) f32, h (B*T, R) f32, y (B*T, OUT) f32, scale = lora_alpha / r.
//   forward_h:  h[m, r] = sum_k x[m, k] A[s, r, k]             (saved for backward; 0 for no-adapter rows)
//   forward_y:  y[m, o] += scale * sum_r h[m, r] Bw[s, o, r]   (adds onto the base projection's output)
//   backward_dh: dh[m, r] = scale * sum_o dy[m, o] Bw[s, o, r]  (scratch (B*T, R); 0 for no-adapter rows)
//   backward_dx: dx[m, k] += sum_r dh[m, r] A[s, r, k]         (adds onto the base projection's dx)
//   backward_dB: dB[s, o, r] += scale * sum over rows m of slot s of dy[m, o] h[m, r]
//   backward_dA: dA[s, r, k] += sum over rows m of slot s of dh[m, r] x[m, k]
//   dy (B*T, OUT), dx (B*T, IN), dA like A, dB like Bw, all f32.
// Tiles: every entry point is a 16x16-thread workgroup owning a 16x16 output tile, looping over the
// contraction in chunks of 16 staged in workgroup memory (ta, tb). Row tiles never cross a sequence,
// so the slot is uniform over a workgroup. On GPUs the 'groups' kernels (groups.wgsl) replaced them for
// R <= 16 (2-3x faster at training shapes); they remain for larger ranks and as the path tests compare to.
//   forward_h, backward_dh: dispatch (ceil(R/16),   ceil(T/16), B), tile of (rows of b) x (ranks)
//   forward_y:              dispatch (ceil(OUT/16), ceil(T/16), B), tile of (rows of b) x (outputs)
//   backward_dx:            dispatch (ceil(IN/16),  ceil(T/16), B), tile of (rows of b) x (inputs)
//   backward_dAdB:          dispatch (max(ceil(R/16), ceil(IN/16)), max(ceil(OUT/16), ceil(R/16)), 2 S P):
//                           dB's tiles of (outputs) x (ranks) of slot s for wg.z < S P, then dA's of
//                           (ranks) x (inputs): the two gradients are independent, one dispatch serves both
//   With P > 1 parts (many sequences), part p of slot s (wg.z = p * S + s) walks the sequences b = p,
//   p + P, ... and writes its sum to part (P, S, OUT, R) for dB, then (P, S, R, IN) for dA; reduce_dAdB
//   (grid1d over S*OUT*R + S*R*IN) then adds the P sums in order: one workgroup walking every sequence
//   left the GPU idle (0.12 ms a call at 128 sequences on an H200).
// Deterministic without atomics: each output element is summed by one thread in a fixed order (the
// weight gradients walk the sequences b = 0..B-1 whose slot is s, and their rows in order); slots that
// no sequence uses are not written at all.

// Uniforms (struct Params) and bindings: written by kernel.ts from the LoRA kernels' names and types.
$HEADER

const TS: u32 = 16u;
var<workgroup> ta: array<array<f32, 16>, 16>;
var<workgroup> tb: array<array<f32, 16>, 16>;

/** The slot of sequence b, or -1 when it names no adapter. */
fn slotOf(b: u32) -> i32 {
  let s = slots[b];
  return select(-1, s, s >= 0 && u32(s) < u.S);
}

// h = x A[s]^T over one (rows of b) x (ranks) tile; lid.x = rank in tile, lid.y = row in tile.
@compute @workgroup_size(16, 16)
fn forward_h(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let b = wg.z;
  let t = wg.y * TS + lid.y;
  let r = wg.x * TS + lid.x;
  let m = b * u.T + t;
  let s = slotOf(b);
  if (s < 0) {
    if (t < u.T && r < u.R) { h[m * u.R + r] = 0.0; }
    return;
  }
  let aBase = u32(s) * u.R * u.IN;
  let rA = wg.x * TS + lid.y; // the rank row of A this thread stages
  var acc = 0.0;
  for (var k0 = 0u; k0 < u.IN; k0 += TS) {
    let k = k0 + lid.x;
    ta[lid.y][lid.x] = select(0.0, x[m * u.IN + k], t < u.T && k < u.IN);
    tb[lid.y][lid.x] = select(0.0, A[aBase + rA * u.IN + k], rA < u.R && k < u.IN);
    workgroupBarrier();
    for (var kk = 0u; kk < TS; kk++) { acc += ta[lid.y][kk] * tb[lid.x][kk]; }
    workgroupBarrier();
  }
  if (t < u.T && r < u.R) { h[m * u.R + r] = acc; }
}

// y += scale h Bw[s]^T over one (rows of b) x (outputs) tile; lid.x = output, lid.y = row.
@compute @workgroup_size(16, 16)
fn forward_y(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let b = wg.z;
  let s = slotOf(b);
  if (s < 0) { return; }
  let t = wg.y * TS + lid.y;
  let o = wg.x * TS + lid.x;
  let m = b * u.T + t;
  let bBase = u32(s) * u.OUT * u.R;
  let oB = wg.x * TS + lid.y;
  var acc = 0.0;
  for (var r0 = 0u; r0 < u.R; r0 += TS) {
    let r = r0 + lid.x;
    ta[lid.y][lid.x] = select(0.0, h[m * u.R + r], t < u.T && r < u.R);
    tb[lid.y][lid.x] = select(0.0, Bw[bBase + oB * u.R + r], oB < u.OUT && r < u.R);
    workgroupBarrier();
    for (var kk = 0u; kk < TS; kk++) { acc += ta[lid.y][kk] * tb[lid.x][kk]; }
    workgroupBarrier();
  }
  if (t < u.T && o < u.OUT) { y[m * u.OUT + o] += u.scale * acc; }
}

// dh = scale dy Bw[s] over one (rows of b) x (ranks) tile; lid.x = rank, lid.y = row.
@compute @workgroup_size(16, 16)
fn backward_dh(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let b = wg.z;
  let t = wg.y * TS + lid.y;
  let r = wg.x * TS + lid.x;
  let m = b * u.T + t;
  let s = slotOf(b);
  if (s < 0) {
    if (t < u.T && r < u.R) { dh[m * u.R + r] = 0.0; }
    return;
  }
  let bBase = u32(s) * u.OUT * u.R;
  var acc = 0.0;
  for (var o0 = 0u; o0 < u.OUT; o0 += TS) {
    let o = o0 + lid.x;
    let oB = o0 + lid.y;
    ta[lid.y][lid.x] = select(0.0, dy[m * u.OUT + o], t < u.T && o < u.OUT); // [row][o]
    tb[lid.y][lid.x] = select(0.0, Bw[bBase + oB * u.R + r], oB < u.OUT && r < u.R); // [o][rank]
    workgroupBarrier();
    for (var kk = 0u; kk < TS; kk++) { acc += ta[lid.y][kk] * tb[kk][lid.x]; }
    workgroupBarrier();
  }
  if (t < u.T && r < u.R) { dh[m * u.R + r] = u.scale * acc; }
}

// dx += dh A[s] over one (rows of b) x (inputs) tile; lid.x = input, lid.y = row.
@compute @workgroup_size(16, 16)
fn backward_dx(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let b = wg.z;
  let s = slotOf(b);
  if (s < 0) { return; }
  let t = wg.y * TS + lid.y;
  let k = wg.x * TS + lid.x;
  let m = b * u.T + t;
  let aBase = u32(s) * u.R * u.IN;
  var acc = 0.0;
  for (var r0 = 0u; r0 < u.R; r0 += TS) {
    let r = r0 + lid.x;
    let rA = r0 + lid.y;
    ta[lid.y][lid.x] = select(0.0, dh[m * u.R + r], t < u.T && r < u.R); // [row][rank]
    tb[lid.y][lid.x] = select(0.0, A[aBase + rA * u.IN + k], rA < u.R && k < u.IN); // [rank][input]
    workgroupBarrier();
    for (var kk = 0u; kk < TS; kk++) { acc += ta[lid.y][kk] * tb[kk][lid.x]; }
    workgroupBarrier();
  }
  if (t < u.T && k < u.IN) { dx[m * u.IN + k] += acc; }
}

// The loop gradB and gradA share: over the sequences b = p, p + P, ... whose slot is s, 16 rows at a time,
// each thread stages lhs[row, lhsCol] and rhs[row, rhsCol], then sums lhs[row, tile column lid.y] * rhs[row, rhsCol].
// (lhs, rhs) = (dy, h) for dB (GRAD_B), (dh, x) for dA (GRAD_A); used: whether any sequence has slot s.
struct SlotSum { acc: f32, used: bool }
const GRAD_B: u32 = 0u;
const GRAD_A: u32 = 1u;
fn slotRowsSum(grad: u32, p: u32, s: u32, lid: vec3u, lhsCol: u32, rhsCol: u32) -> SlotSum {
  var acc = 0.0;
  var used = false;
  for (var b = p; b < u.B; b += u.P) {
    if (slotOf(b) != i32(s)) { continue; }
    used = true;
    for (var t0 = 0u; t0 < u.T; t0 += TS) {
      let t = t0 + lid.y;
      let m = b * u.T + t;
      if (grad == GRAD_B) {
        ta[lid.y][lid.x] = select(0.0, dy[m * u.OUT + lhsCol], t < u.T && lhsCol < u.OUT); // [row][output]
        tb[lid.y][lid.x] = select(0.0, h[m * u.R + rhsCol], t < u.T && rhsCol < u.R); // [row][rank]
      } else {
        ta[lid.y][lid.x] = select(0.0, dh[m * u.R + lhsCol], t < u.T && lhsCol < u.R); // [row][rank]
        tb[lid.y][lid.x] = select(0.0, x[m * u.IN + rhsCol], t < u.T && rhsCol < u.IN); // [row][input]
      }
      workgroupBarrier();
      for (var kk = 0u; kk < TS; kk++) { acc += ta[kk][lid.y] * tb[kk][lid.x]; }
      workgroupBarrier();
    }
  }
  return SlotSum(acc, used);
}

// dB[s] += scale dy^T h over the rows of slot s; tile (outputs) x (ranks), lid.x = rank, lid.y = output.
fn gradB(wg: vec3u, lid: vec3u) {
  if (wg.x * TS >= u.R || wg.y * TS >= u.OUT) { return; } // the merged grid's tiles past dB's (whole workgroups)
  let s = wg.z % u.S;
  let p = wg.z / u.S;
  let r = wg.x * TS + lid.x;
  let o = wg.y * TS + lid.y;
  let sum = slotRowsSum(GRAD_B, p, s, lid, wg.y * TS + lid.x, r); // stages dy's output column wg.y * TS + lid.x
  let i = (s * u.OUT + o) * u.R + r;
  if (u.P > 1u) {
    if (o < u.OUT && r < u.R) { part[p * u.S * u.OUT * u.R + i] = sum.acc; }
  } else if (sum.used && o < u.OUT && r < u.R) {
    dB[i] += u.scale * sum.acc;
  }
}

// dA[s] += dh^T x over the rows of slot s; tile (ranks) x (inputs), lid.x = input, lid.y = rank.
fn gradA(wg: vec3u, lid: vec3u) {
  if (wg.x * TS >= u.IN || wg.y * TS >= u.R) { return; }
  let s = wg.z % u.S;
  let p = wg.z / u.S;
  let k = wg.x * TS + lid.x;
  let r = wg.y * TS + lid.y;
  let sum = slotRowsSum(GRAD_A, p, s, lid, wg.y * TS + lid.x, k); // stages dh's rank column wg.y * TS + lid.x
  let i = (s * u.R + r) * u.IN + k;
  if (u.P > 1u) {
    if (r < u.R && k < u.IN) { part[u.P * u.S * u.OUT * u.R + p * u.S * u.R * u.IN + i] = sum.acc; } // after dB's parts
  } else if (sum.used && r < u.R && k < u.IN) {
    dA[i] += sum.acc;
  }
}

/** Whether any sequence has slot s (the split weight gradients leave unused slots untouched, as above). */
fn slotUsed(s: u32) -> bool {
  for (var b = 0u; b < u.B; b++) { if (slotOf(b) == i32(s)) { return true; } }
  return false;
}

// Both weight gradients in one dispatch: wg.z < S * P are dB's workgroups, the rest dA's (x, y cover the larger
// of their tile grids; the tiles past one's grid leave at once).
@compute @workgroup_size(16, 16)
fn backward_dAdB(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let nb = u.S * u.P;
  if (wg.z < nb) { gradB(wg, lid); } else { gradA(vec3u(wg.xy, wg.z - nb), lid); }
}

// The P parts of dB (elements 0 .. S*OUT*R of each part) and then of dA, added in order.
@compute @workgroup_size(64)
fn reduce_dAdB(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * 64u;
  let nB = u.S * u.OUT * u.R;
  let nA = u.S * u.R * u.IN;
  if (i < nB) {
    if (!slotUsed(i / (u.OUT * u.R))) { return; }
    var acc = 0.0;
    for (var p = 0u; p < u.P; p++) { acc += part[p * nB + i]; }
    dB[i] += u.scale * acc;
  } else if (i < nB + nA) {
    let j = i - nB;
    if (!slotUsed(j / (u.R * u.IN))) { return; }
    var acc = 0.0;
    for (var p = 0u; p < u.P; p++) { acc += part[u.P * nB + p * nA + j]; }
    dA[j] += acc;
  }
}

// ---- decode: few rows per sequence (T <= ROWS_T in lora.ts), one row per workgroup ------------------
// The 16x16 tiles above leave 15 of 16 rows idle when T = 1 and give only B workgroups; these give
// R x (B*T) and ceil(OUT/64) x (B*T) workgroups of 64 threads, each row with its own slot.
//   forward_h_rows: dispatch (R, B*T): 64 threads split IN (coalesced reads of x's row and A[s]'s row),
//                   then a tree sum in workgroup memory.
//   forward_y_rows: dispatch (ceil(OUT/64), B*T): one output per thread, R terms.
const RW: u32 = 64u;
var<workgroup> red: array<f32, 64>;

@compute @workgroup_size(64)
fn forward_h_rows(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) t: u32) {
  let r = wg.x;
  let m = wg.y;
  let s = slotOf(m / u.T);
  if (s < 0) {
    if (t == 0u) { h[m * u.R + r] = 0.0; }
    return;
  }
  let aRow = (u32(s) * u.R + r) * u.IN;
  var acc = 0.0;
  for (var k = t; k < u.IN; k += RW) { acc = fma(x[m * u.IN + k], A[aRow + k], acc); }
  red[t] = acc;
  workgroupBarrier();
  for (var w = RW / 2u; w > 0u; w >>= 1u) {
    if (t < w) { red[t] += red[t + w]; }
    workgroupBarrier();
  }
  if (t == 0u) { h[m * u.R + r] = red[0]; }
}

@compute @workgroup_size(64)
fn forward_y_rows(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) t: u32) {
  let m = wg.y;
  let o = wg.x * RW + t;
  let s = slotOf(m / u.T);
  if (s < 0 || o >= u.OUT) { return; }
  let bRow = (u32(s) * u.OUT + o) * u.R;
  var acc = 0.0;
  for (var r = 0u; r < u.R; r++) { acc = fma(h[m * u.R + r], Bw[bRow + r], acc); }
  y[m * u.OUT + o] += u.scale * acc;
}

// ---- direct: CPU adapters (Gpu.cpu in lora.ts): one thread per output element ------------------------
// No workgroup memory and no barriers: on a CPU implementation every invocation runs as CPU code and every
// barrier switches between them, which cost the 16x16 tiles more than their arithmetic. Each thread sums
// its terms in index order (deterministic; the weight gradients walk sequences b = 0..B-1 of slot s).
// forward_y_rows above has no barrier and serves as the direct y. Dispatch grid1d(ceil(count / 64)):
//   forward_h_direct, backward_dh_direct: (m, r);  backward_dx_direct: (m, k);
//   backward_dB_direct: (s, o, r);  backward_dA_direct: (s, r, k).
fn flat(gid: vec3u, nwg: vec3u) -> u32 { return gid.x + gid.y * nwg.x * 64u; }

@compute @workgroup_size(64)
fn forward_h_direct(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let n = flat(gid, nwg);
  if (n >= u.B * u.T * u.R) { return; }
  let m = n / u.R;
  let s = slotOf(m / u.T);
  if (s < 0) { h[n] = 0.0; return; }
  let aRow = (u32(s) * u.R + n % u.R) * u.IN;
  var acc = 0.0;
  for (var k = 0u; k < u.IN; k++) { acc = fma(x[m * u.IN + k], A[aRow + k], acc); }
  h[n] = acc;
}

@compute @workgroup_size(64)
fn backward_dh_direct(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let n = flat(gid, nwg);
  if (n >= u.B * u.T * u.R) { return; }
  let m = n / u.R;
  let s = slotOf(m / u.T);
  if (s < 0) { dh[n] = 0.0; return; }
  let bCol = u32(s) * u.OUT * u.R + n % u.R;
  var acc = 0.0;
  for (var o = 0u; o < u.OUT; o++) { acc = fma(dy[m * u.OUT + o], Bw[bCol + o * u.R], acc); }
  dh[n] = u.scale * acc;
}

@compute @workgroup_size(64)
fn backward_dx_direct(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let n = flat(gid, nwg);
  if (n >= u.B * u.T * u.IN) { return; }
  let m = n / u.IN;
  let s = slotOf(m / u.T);
  if (s < 0) { return; }
  let aCol = u32(s) * u.R * u.IN + n % u.IN;
  var acc = 0.0;
  for (var r = 0u; r < u.R; r++) { acc = fma(dh[m * u.R + r], A[aCol + r * u.IN], acc); }
  dx[n] += acc;
}

@compute @workgroup_size(64)
fn backward_dB_direct(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let n = flat(gid, nwg);
  if (n >= u.S * u.OUT * u.R) { return; }
  let sum = slotRowsDot(GRAD_B, n / (u.OUT * u.R), (n / u.R) % u.OUT, n % u.R);
  if (sum.used) { dB[n] += u.scale * sum.acc; }
}

@compute @workgroup_size(64)
fn backward_dA_direct(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let n = flat(gid, nwg);
  if (n >= u.S * u.R * u.IN) { return; }
  let sum = slotRowsDot(GRAD_A, n / (u.R * u.IN), (n / u.IN) % u.R, n % u.IN);
  if (sum.used) { dA[n] += sum.acc; }
}

// The loop of backward_dB_direct and backward_dA_direct: over the rows of the sequences whose slot is s, in
// order, the sum of lhs[row, lhsCol] * rhs[row, rhsCol]; (lhs, rhs) = (dy, h) for dB, (dh, x) for dA.
fn slotRowsDot(grad: u32, s: u32, lhsCol: u32, rhsCol: u32) -> SlotSum {
  var acc = 0.0;
  var used = false;
  for (var b = 0u; b < u.B; b++) {
    if (slotOf(b) != i32(s)) { continue; }
    used = true;
    for (var t = 0u; t < u.T; t++) {
      let m = b * u.T + t;
      if (grad == GRAD_B) { acc = fma(dy[m * u.OUT + lhsCol], h[m * u.R + rhsCol], acc); } else { acc = fma(dh[m * u.R + lhsCol], x[m * u.IN + rhsCol], acc); }
    }
  }
  return SlotSum(acc, used);
}

// ---- wide: CPU adapters (Gpu.cpu in lora.ts, the default there): four outputs per thread -------------
// The direct kernels above load two values per multiply-add (one of each operand), and on SwiftShader a
// load at a per-lane index is a gather of four scalar loads, each behind a branch: the loads, not the
// arithmetic, are the cost. Here a thread owns four neighbouring outputs along the dim that the shared
// operand does not depend on, so one load of the shared operand feeds four multiply-adds: 1.25 loads per
// multiply-add. Quads past the end of their dim read the last element (in range) and are never stored.
// Sums run in the same index order as the direct kernels (deterministic). Workgroups of 16 (few idle
// lanes at decode sizes). Dispatch grid1d(ceil(count / 16)), count over quads:
//   forward_h_wide, backward_dh_wide: (m, rank quad);   forward_y_wide: (m, output quad);
//   backward_dx_wide: (m, input quad);   backward_dB_wide: (s, o, rank quad);   backward_dA_wide: (s, r, input quad).
const QW: u32 = 16u;
fn flatW(gid: vec3u, nwg: vec3u) -> u32 { return gid.x + gid.y * nwg.x * QW; }
fn quads(n: u32) -> u32 { return (n + 3u) / 4u; }
/** The four indices q*4 .. q*4+3 of a dim of n, clamped to n-1. */
fn quad(q: u32, n: u32) -> vec4u { return min(vec4u(4u * q) + vec4u(0u, 1u, 2u, 3u), vec4u(n - 1u)); }

@compute @workgroup_size(16)
fn forward_h_wide(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let n = flatW(gid, nwg);
  let QR = quads(u.R);
  if (n >= u.B * u.T * QR) { return; }
  let m = n / QR;
  let r = quad(n % QR, u.R);
  let s = slotOf(m / u.T);
  var acc = vec4f(0.0);
  if (s >= 0) {
    let a = (vec4u(u32(s) * u.R) + r) * u.IN;
    let xRow = m * u.IN;
    for (var k = 0u; k < u.IN; k++) {
      acc = fma(vec4f(x[xRow + k]), vec4f(A[a.x + k], A[a.y + k], A[a.z + k], A[a.w + k]), acc);
    }
  }
  for (var j = 0u; j < 4u; j++) { if (4u * (n % QR) + j < u.R) { h[m * u.R + r[j]] = acc[j]; } }
}

@compute @workgroup_size(16)
fn forward_y_wide(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let n = flatW(gid, nwg);
  let QO = quads(u.OUT);
  if (n >= u.B * u.T * QO) { return; }
  let m = n / QO;
  let s = slotOf(m / u.T);
  if (s < 0) { return; }
  let o = quad(n % QO, u.OUT);
  let bRow = (vec4u(u32(s) * u.OUT) + o) * u.R;
  var acc = vec4f(0.0);
  for (var r = 0u; r < u.R; r++) {
    acc = fma(vec4f(h[m * u.R + r]), vec4f(Bw[bRow.x + r], Bw[bRow.y + r], Bw[bRow.z + r], Bw[bRow.w + r]), acc);
  }
  for (var j = 0u; j < 4u; j++) { if (4u * (n % QO) + j < u.OUT) { y[m * u.OUT + o[j]] += u.scale * acc[j]; } }
}

@compute @workgroup_size(16)
fn backward_dh_wide(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let n = flatW(gid, nwg);
  let QR = quads(u.R);
  if (n >= u.B * u.T * QR) { return; }
  let m = n / QR;
  let r = quad(n % QR, u.R);
  let s = slotOf(m / u.T);
  var acc = vec4f(0.0);
  if (s >= 0) {
    let bCol = vec4u(u32(s) * u.OUT * u.R) + r;
    for (var o = 0u; o < u.OUT; o++) {
      let i = o * u.R;
      acc = fma(vec4f(dy[m * u.OUT + o]), vec4f(Bw[bCol.x + i], Bw[bCol.y + i], Bw[bCol.z + i], Bw[bCol.w + i]), acc);
    }
  }
  for (var j = 0u; j < 4u; j++) { if (4u * (n % QR) + j < u.R) { dh[m * u.R + r[j]] = u.scale * acc[j]; } }
}

@compute @workgroup_size(16)
fn backward_dx_wide(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let n = flatW(gid, nwg);
  let QI = quads(u.IN);
  if (n >= u.B * u.T * QI) { return; }
  let m = n / QI;
  let s = slotOf(m / u.T);
  if (s < 0) { return; }
  let k = quad(n % QI, u.IN);
  let aCol = vec4u(u32(s) * u.R * u.IN) + k;
  var acc = vec4f(0.0);
  for (var r = 0u; r < u.R; r++) {
    let i = r * u.IN;
    acc = fma(vec4f(dh[m * u.R + r]), vec4f(A[aCol.x + i], A[aCol.y + i], A[aCol.z + i], A[aCol.w + i]), acc);
  }
  for (var j = 0u; j < 4u; j++) { if (4u * (n % QI) + j < u.IN) { dx[m * u.IN + k[j]] += acc[j]; } }
}

@compute @workgroup_size(16)
fn backward_dB_wide(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let n = flatW(gid, nwg);
  let QR = quads(u.R);
  if (n >= u.S * u.OUT * QR) { return; }
  let s = n / (u.OUT * QR);
  let o = (n / QR) % u.OUT;
  let r = quad(n % QR, u.R);
  let sum = slotRowsDot4(GRAD_B, s, o, r);
  if (sum.used) {
    let base = (s * u.OUT + o) * u.R;
    for (var j = 0u; j < 4u; j++) { if (4u * (n % QR) + j < u.R) { dB[base + r[j]] += u.scale * sum.acc[j]; } }
  }
}

@compute @workgroup_size(16)
fn backward_dA_wide(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let n = flatW(gid, nwg);
  let QI = quads(u.IN);
  if (n >= u.S * u.R * QI) { return; }
  let s = n / (u.R * QI);
  let r = (n / QI) % u.R;
  let k = quad(n % QI, u.IN);
  let sum = slotRowsDot4(GRAD_A, s, r, k);
  if (sum.used) {
    let base = (s * u.R + r) * u.IN;
    for (var j = 0u; j < 4u; j++) { if (4u * (n % QI) + j < u.IN) { dA[base + k[j]] += sum.acc[j]; } }
  }
}

// slotRowsDot for four rhs columns at once (one load of lhs feeds four multiply-adds).
struct SlotSum4 { acc: vec4f, used: bool }
fn slotRowsDot4(grad: u32, s: u32, lhsCol: u32, rhsCols: vec4u) -> SlotSum4 {
  var acc = vec4f(0.0);
  var used = false;
  for (var b = 0u; b < u.B; b++) {
    if (slotOf(b) != i32(s)) { continue; }
    used = true;
    for (var t = 0u; t < u.T; t++) {
      let m = b * u.T + t;
      if (grad == GRAD_B) {
        let hRow = m * u.R;
        acc = fma(vec4f(dy[m * u.OUT + lhsCol]), vec4f(h[hRow + rhsCols.x], h[hRow + rhsCols.y], h[hRow + rhsCols.z], h[hRow + rhsCols.w]), acc);
      } else {
        let xRow = m * u.IN;
        acc = fma(vec4f(dh[m * u.R + lhsCol]), vec4f(x[xRow + rhsCols.x], x[xRow + rhsCols.y], x[xRow + rhsCols.z], x[xRow + rhsCols.w]), acc);
      }
    }
  }
  return SlotSum4(acc, used);
}
