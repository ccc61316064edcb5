// Token sampling on the GPU, per row of logits (N, V) f32 with per-row settings, without sorting the vocab.
//   temperature (N) f32: <= 0 means greedy argmax (ties: lowest index), logprob 0 (a point mass).
//   topK (N) i32: keep the tokens whose logit is >= the k-th largest (ties at the k-th are all kept);
//             k <= 0 or k >= V: off.
//   topP (N) f32: after top-k, keep the smallest set of largest tokens whose probability (renormalised
//             over the top-k set) reaches p, ties at the threshold all kept; p >= 1: off.
//   streams (N) u32 (optional, $STREAM; default: the row index): the RNG stream of each row, so a
//             sequence keeps its random numbers wherever it sits in the batch.
//   token (N) i32, logprob (N) f32 = log q(token), q = the distribution actually sampled from: softmax of
//             logits/T renormalised over the kept set (0 for greedy).
// Algorithm (one workgroup of WG threads per row, WG = 128 by default; every choice is a comparison of
// f32 bit patterns turned into ordered u32 keys, so thresholds are exact):
//   1. max key and its lowest index (tree over (key, index)).
//   2. top-k threshold: the largest key K with count(key >= K) >= k, by a 16-ary search on the key
//      range: each pass bins the keys of [lo, hi] into 16 equal ranges (thread-private bins, then 16 fixed
//      tree reductions in workgroup memory), keeps the highest boundary whose suffix count reaches k;
//      at most 8 passes for 32-bit keys.
//   3. top-p threshold: the same search on mass = exp((x - max) / T) over keys >= K, with goal p * Z,
//      Z the mass of the top-k set.
//   4. inverse CDF in index order: thread t owns the contiguous chunk [t*c, (t+1)*c), c = ceil(V/WG);
//      chunk masses, a sequential exclusive scan by thread 0, goal = u * total, and the one thread
//      whose chunk holds the goal walks it in order: the first kept index whose running mass exceeds
//      the goal (the last positive one if rounding leaves the goal at the total).
//   u = (pcg(pcg(pcg(seed) + stream) + step) >> 8) / 2^24, the same function as samplingUniform() in TS.
// Dispatch: one workgroup per row, rows split over (x, y) when N > 65535. Workgroup memory: (16 + 2) * WG
// words (9 KiB at WG = 128). On SwiftShader the cost per row grows with WG (barriers): 32 is ~5x cheaper
// there for small V; on a GPU with large V, 256 spreads the row over more lanes (18 KiB).

struct Params { N: u32, V: u32, seed: u32, step: u32 }
@group(0) @binding(0) var<uniform> u: Params;
@group(0) @binding(1) var<storage, read> logits: array<f32>;
@group(0) @binding(2) var<storage, read> temperature: array<f32>;
@group(0) @binding(3) var<storage, read> topK: array<i32>;
@group(0) @binding(4) var<storage, read> topP: array<f32>;
@group(0) @binding(5) var<storage, read> streams: array<u32>;
@group(0) @binding(6) var<storage, read_write> token: array<i32>;
@group(0) @binding(7) var<storage, read_write> logprob: array<f32>;
@group(0) @binding(8) var<storage, read> stepBuf: array<i32>; // with STEP_GPU: the step, read on the GPU

const WG = $WGu; // workgroup size, a power of two (32, 64 or 128): the launcher's choice
const BINS = 16u;
const NONE = 0xffffffffu;
var<workgroup> wf: array<f32, $WF>; // BINS * WG: bin partials; also chunk masses and their scan
var<workgroup> wk: array<u32, $WG>;
var<workgroup> wi: array<u32, $WG>;
var<workgroup> sT: f32;
var<workgroup> sK: i32;
var<workgroup> sP: f32;
var<workgroup> sLo: u32;
var<workgroup> sHi: u32;

var<private> base: u32;
var<private> xmax: f32;
var<private> temp: f32;

/** Orders f32 bit patterns as u32: larger float, larger key (-0 just below +0). */
fn keyOf(x: f32) -> u32 {
  let b = bitcast<u32>(x);
  return select(b | 0x80000000u, ~b, (b & 0x80000000u) != 0u);
}

fn massOf(x: f32) -> f32 { return exp((x - xmax) / temp); }

fn pcg(v: u32) -> u32 {
  let s = v * 747796405u + 2891336453u;
  let w = ((s >> ((s >> 28u) + 4u)) ^ s) * 277803737u;
  return (w >> 22u) ^ w;
}

fn uniform01(seed: u32, stream: u32, step: u32) -> f32 {
  let h = pcg(pcg(pcg(seed) + stream) + step);
  return f32(h >> 8u) * (1.0 / 16777216.0);
}

// The largest key K in [lo0, hi0] with weight(key >= K) >= goal, weight = count or mass (over keys
// >= lo0 only). Needs weight(key >= lo0) >= goal. Called from uniform control flow.
fn search(useMass: bool, goal: f32, lo0: u32, hi0: u32, t: u32) -> u32 {
  if (t == 0u) { sLo = lo0; sHi = hi0; }
  loop {
    let lo = workgroupUniformLoad(&sLo);
    let hi = workgroupUniformLoad(&sHi);
    if (lo >= hi) { break; }
    let w = (hi - lo) / BINS + 1u;
    var bins: array<f32, 16>;
    for (var b = 0u; b < BINS; b++) { bins[b] = 0.0; } // explicit: on SwiftShader a loop-scoped array kept the last pass's values
    var above = 0.0;
    for (var j = t; j < u.V; j += WG) {
      let x = logits[base + j];
      let k = keyOf(x);
      if (k < lo) { continue; }
      var val = 1.0;
      if (useMass) { val = massOf(x); }
      if (k > hi) { above += val; } else { bins[(k - lo) / w] += val; }
    }
    bins[BINS - 1u] += above; // every boundary's suffix includes the top bin and what lies above hi
    for (var b = 0u; b < BINS; b++) { wf[b * WG + t] = bins[b]; }
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
      for (var idx = t; idx < BINS * s; idx += WG) {
        let b = idx / s;
        let i = idx % s;
        wf[b * WG + i] += wf[b * WG + i + s];
      }
      workgroupBarrier();
    }
    if (t == 0u) {
      var j = 0u;
      var c = 0.0;
      for (var b = BINS - 1u; b > 0u; b--) {
        c += wf[b * WG];
        if (b * w <= hi - lo && c >= goal) { j = b; break; }
      }
      var nhi = hi;
      if (j + 1u < BINS && (j + 1u) * w <= hi - lo) { nhi = lo + (j + 1u) * w - 1u; }
      sLo = lo + j * w;
      sHi = nhi;
    }
  }
  return workgroupUniformLoad(&sLo);
}

@compute @workgroup_size($WG)
fn sample(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let row = wid.x + wid.y * nwg.x;
  if (row >= u.N) { return; }
  let t = lid.x;
  base = row * u.V;
  if (t == 0u) { sT = temperature[row]; sK = topK[row]; sP = topP[row]; }
  let T = workgroupUniformLoad(&sT);
  let k = workgroupUniformLoad(&sK);
  let p = workgroupUniformLoad(&sP);

  // 1. max key, lowest index on ties
  var bk = 0u;
  var bi = NONE;
  for (var j = t; j < u.V; j += WG) {
    let kk = keyOf(logits[base + j]);
    if (bi == NONE || kk > bk) { bk = kk; bi = j; }
  }
  wk[t] = bk;
  wi[t] = bi;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (t < s) {
      let k2 = wk[t + s];
      let i2 = wi[t + s];
      if (i2 != NONE && (wi[t] == NONE || k2 > wk[t] || (k2 == wk[t] && i2 < wi[t]))) { wk[t] = k2; wi[t] = i2; }
    }
    workgroupBarrier();
  }
  let maxKey = wk[0];
  let amax = wi[0];
  xmax = logits[base + amax];
  if (T <= 0.0) {
    if (t == 0u) { token[row] = i32(amax); logprob[row] = 0.0; }
    return;
  }
  temp = T;

  // 2. top-k, 3. top-p thresholds
  var K = 0u;
  if (k > 0 && u32(k) < u.V) { K = search(false, f32(k), 0u, maxKey, t); }
  if (p < 1.0) {
    var z = 0.0;
    for (var j = t; j < u.V; j += WG) {
      let x = logits[base + j];
      if (keyOf(x) >= K) { z += massOf(x); }
    }
    wf[t] = z;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
      if (t < s) { wf[t] += wf[t + s]; }
      workgroupBarrier();
    }
    let Z = wf[0];
    workgroupBarrier(); // wf is reused by the search
    K = search(true, p * Z, K, maxKey, t);
  }

  // 4. inverse CDF over the kept set, in index order
  let chunk = (u.V + WG - 1u) / WG;
  let start = min(t * chunk, u.V);
  let end = min(start + chunk, u.V);
  var S = 0.0;
  for (var j = start; j < end; j++) {
    let x = logits[base + j];
    if (keyOf(x) >= K) { S += massOf(x); }
  }
  wf[t] = S;
  workgroupBarrier();
  if (t == 0u) {
    var acc = 0.0;
    for (var i = 0u; i < WG; i++) { wf[WG + i] = acc; acc += wf[i]; }
    wf[2u * WG] = acc;
  }
  workgroupBarrier();
  let total = wf[2u * WG];
  let P0 = wf[WG + t];
  let P1 = wf[WG + t + 1u];
  let goal = uniform01(u.seed, $STREAM, $STEP) * total;
  if (P0 <= goal && (goal < P1 || (P1 == total && P0 < total))) {
    var run = 0.0;
    var chosen = NONE;
    var last = NONE;
    for (var j = start; j < end; j++) {
      let x = logits[base + j];
      if (keyOf(x) >= K) {
        let e = massOf(x);
        if (e > 0.0) {
          run += e;
          last = j;
          if (P0 + run > goal) { chosen = j; break; }
        }
      }
    }
    if (chosen == NONE) { chosen = last; }
    token[row] = i32(chosen);
    logprob[row] = (logits[base + chosen] - xmax) / T - log(total);
  }
}
