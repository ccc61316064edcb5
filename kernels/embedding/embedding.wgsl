// Embedding gather and its backward.
//   forward:  out[n, c] = weight[ids[n] - first, c]         ids (N) i32, weight (V, C), out (N, C) f32
//             weight is f32, or 16-bit packed two per u32 (WEIGHT_16 set: (V*C+1)/2 words).
//             weight holds rows [first, first + V) of a (total, C) table split by rows (first 0 and
//             total V when whole): ids of other chunks are left to their dispatches, ids outside the
//             table give zero rows.
//             dispatch: (ceil(C/64), N), workgroup 64.
//   backward: dweight[v, c] += sum over n with ids[n] == v of dout[n, c]
//             deterministic (no atomics): the launcher passes the tokens grouped by row in CSR form,
//             rows (R) i32 = the distinct ids, starts (R+1) i32, order (N) i32 = token positions.
//             dispatch: (ceil(C/64), R), workgroup 64.

struct Params { N: u32, C: u32, V: u32, R: u32, first: u32, total: u32, _p0: u32, _p1: u32 }
@group(0) @binding(0) var<uniform> u: Params;

$WEIGHT_DECL
$UNPACK

@group(0) @binding(1) var<storage, read> ids: array<i32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(64)
fn forward(@builtin(global_invocation_id) g: vec3u) {
  let c = g.x;
  let n = g.y;
  if (c >= u.C || n >= u.N) { return; }
  let v = ids[n];
  if (v < 0 || u32(v) >= u.total) { out[n * u.C + c] = 0.0; return; }
  if (u32(v) < u.first || u32(v) - u.first >= u.V) { return; }
  out[n * u.C + c] = loadWeight((u32(v) - u.first) * u.C + c);
}

@group(0) @binding(4) var<storage, read> rows: array<i32>;
@group(0) @binding(5) var<storage, read> starts: array<i32>;
@group(0) @binding(6) var<storage, read> order: array<i32>;
@group(0) @binding(7) var<storage, read> dout: array<f32>;
@group(0) @binding(8) var<storage, read_write> dweight: array<f32>;

@compute @workgroup_size(64)
fn backward(@builtin(global_invocation_id) g: vec3u) {
  let c = g.x;
  let r = g.y;
  if (c >= u.C || r >= u.R) { return; }
  var acc = 0.0;
  for (var k = starts[r]; k < starts[r + 1]; k++) {
    acc += dout[u32(order[k]) * u.C + c];
  }
  let i = u32(rows[r]) * u.C + c;
  dweight[i] = dweight[i] + acc;
}
