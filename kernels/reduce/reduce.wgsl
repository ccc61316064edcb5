// Deterministic reductions (sum, max, sum of squares, masked sums) over segments of a flat f32 buffer.
//   One workgroup of 256 threads reduces one segment: thread t accumulates elements t, t+256, ... of its
//   segment in order, then a fixed binary tree over the 256 partials gives the segment's value, so the
//   result depends only on the shapes, never on scheduling (no atomics).
//   The input is R rows of rowLen elements; each row is cut into segsPerRow segments of segLen. Segment
//   s = r*segsPerRow + k covers x[inOffset + r*rowLen + k*segLen .. inOffset + min(r*rowLen + (k+1)*segLen,
//   (r+1)*rowLen)) (LOAD indexes in units of one element, or one (value, weight) pair for the pair stages)
//   and stores at o = outOffset + r*outRowStride + k.
//   Per row of (N, C): rowLen = segLen = C, segsPerRow = 1. Flat (n): one row of n, segLen = 4096,
//   partials go to a scratch buffer and further passes reduce them until one value is left (the launcher
//   chains the passes). Per slot of (S, ...) tensors (adamw's per-agent norms): S rows, partials stored
//   slot-major, so later passes reduce each slot's row of partials.
//   Accumulators are vec2<f32>: x = the value, y = the mask weight (masked mean only, else 0).
//   Bindings: x (read) the input; mask (read, masked first stage only) same layout as x;
//             out (read_write) one f32 per segment at o, or a (value, weight) pair at 2*o for the pair stages.
//   Dispatch: nSeg workgroups, split over (x, y) when above 65535; workgroup 256.
//   reduceOne (CPU adapters, Gpu.cpu): the same segments, one thread each walking its segment (eight
//   interleaved partials, then a small tree): no workgroup memory and no barrier (SwiftShader pays for each of the tree's 9 barriers across
//   all 256 invocations, more than the segment's arithmetic). Deterministic too, in another order than
//   the tree (so the two paths may differ in the last bits). Dispatch: grid1d(ceil(nSeg / 16)), workgroup 16.
//   Templated per op: $LOAD (element -> vec2), $IDENTITY, $COMBINE(a, b), $STORE(o, acc).
//   Sum of squares maps a non-finite element to +inf (bit test, so a compiler that assumes finite floats
//   cannot drop it): the sum of non-negative terms then stays +inf, which adamw reads as "skip this step".
//   max: NaN inputs give an unspecified result.

struct Params {
  segLen: u32, nSeg: u32, rowLen: u32, segsPerRow: u32, inOffset: u32, outOffset: u32, outRowStride: u32, scale: f32,
  posInfBits: u32, negInfBits: u32, _p0: u32, _p1: u32,
}
@group(0) @binding(0) var<uniform> u: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> mask: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

const WG = 256u;
var<workgroup> red: array<vec2<f32>, 256>;

fn isFinite(v: f32) -> bool { return (bitcast<u32>(v) & 0x7f800000u) != 0x7f800000u; }
// Infinities come from the uniforms (0x7f800000, 0xff800000): WGSL rejects them as constants.
fn posInf() -> f32 { return bitcast<f32>(u.posInfBits); }
fn negInf() -> f32 { return bitcast<f32>(u.negInfBits); }

fn load(i: u32) -> vec2<f32> { $LOAD }
fn combine(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> { $COMBINE }
fn store(o: u32, acc: vec2<f32>) { $STORE }

@compute @workgroup_size(256)
fn reduce(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let s = wid.x + wid.y * nwg.x;
  if (s >= u.nSeg) { return; }
  let t = lid.x;
  let r = s / u.segsPerRow;
  let k = s % u.segsPerRow;
  let rowStart = r * u.rowLen;
  let start = rowStart + k * u.segLen;
  let end = min(start + u.segLen, rowStart + u.rowLen);
  var acc = $IDENTITY;
  for (var i = start + t; i < end; i += WG) {
    acc = combine(acc, load(u.inOffset + i));
  }
  red[t] = acc;
  workgroupBarrier();
  for (var k = WG / 2u; k > 0u; k >>= 1u) {
    if (t < k) { red[t] = combine(red[t], red[t + k]); }
    workgroupBarrier();
  }
  if (t == 0u) { store(u.outOffset + r * u.outRowStride + k, red[0]); }
}

@compute @workgroup_size(16)
fn reduceOne(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let s = gid.x + gid.y * nwg.x * 16u;
  if (s >= u.nSeg) { return; }
  let r = s / u.segsPerRow;
  let k = s % u.segsPerRow;
  let rowStart = r * u.rowLen;
  let start = rowStart + k * u.segLen;
  let end = min(start + u.segLen, rowStart + u.rowLen);
  // Eight interleaved partial sums (element i goes to i % 8), combined as a tree at the end: a serial f32
  // sum over a long row (reduceRows takes whole rows of up to ~50k) drifts far more than the tree's.
  var a0 = $IDENTITY; var a1 = a0; var a2 = a0; var a3 = a0; var a4 = a0; var a5 = a0; var a6 = a0; var a7 = a0;
  var i = start;
  for (; i + 8u <= end; i += 8u) {
    let j = u.inOffset + i;
    a0 = combine(a0, load(j));      a1 = combine(a1, load(j + 1u));
    a2 = combine(a2, load(j + 2u)); a3 = combine(a3, load(j + 3u));
    a4 = combine(a4, load(j + 4u)); a5 = combine(a5, load(j + 5u));
    a6 = combine(a6, load(j + 6u)); a7 = combine(a7, load(j + 7u));
  }
  for (; i < end; i++) { a0 = combine(a0, load(u.inOffset + i)); }
  let acc = combine(combine(combine(a0, a1), combine(a2, a3)), combine(combine(a4, a5), combine(a6, a7)));
  store(u.outOffset + r * u.outRowStride + k, acc);
}
