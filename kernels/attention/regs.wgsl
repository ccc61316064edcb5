// Causal attention for CPU WebGPU implementations, with the head's vectors in registers ('regs' path, the
// default on CPU adapters): the kernels of direct.wgsl (same contract, buffers, uniforms, masking, thread
// layout and summation order; see its header) with every loop over the head size unrolled by the launcher
// (direct.ts), so a row of HS4 vec4s is HS4 named values. direct.wgsl keeps its accumulators in a
// private array indexed by a loop variable; SwiftShader turns every such access into a gather or scatter
// (four scalar accesses behind branches), and it re-reads the query (and dout) row for every key. Here the
// thread's own rows are loaded once and each key's k and v rows once.
// Dispatch: grid1d(ceil(threads / 64)), workgroup 64.

// Uniforms (struct Params) and bindings: written by kernel.ts from its kernels' names and types.
$HEADER

const NEG = -1.0e30;
const LSE_MASKED = -1.0e30;
const LN2 = 0.6931471805599453;
const LOG2E = 1.4426950408889634;

fn keyOk(b: u32, j: u32) -> bool { return u.hasMask == 0u || mask[b * u.Tm + j] != 0; }
fn hsum(a: vec4f) -> f32 { return (a.x + a.y) + (a.z + a.w); }
fn kIndex(b: u32, kvh: u32, j: u32) -> u32 { return ((b * u.Tcap + j) * u.NKV + kvh) * $HS4u; }
fn queryRow(n: u32) -> vec3u { return vec3u(n / (u.NH * u.Tq), (n / u.NH) % u.Tq, n % u.NH); }
// lse of query row (b, h, i) in log2 units; a row that saw no key keeps a huge lse (every p is 0).
fn lse2(b: u32, h: u32, i: u32) -> f32 {
  let L = lse[(b * u.NH + h) * u.Tq + i];
  return select(L * LOG2E, LSE_MASKED, L <= -5.0e29);
}

@compute @workgroup_size(64)
fn forwardRegs(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let n = gid.x + gid.y * nwg.x * 64u;
  if (n >= u.B * u.Tq * u.NH) { return; }
  let r = queryRow(n);
  let b = r.x;
  let i = r.y;
  let h = r.z;
  let kvh = h / u.G;
  let qb = n * $HS4u;
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
fn backwardDqRegs(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let n = gid.x + gid.y * nwg.x * 64u;
  if (n >= u.B * u.Tq * u.NH) { return; }
  let r = queryRow(n);
  let b = r.x;
  let i = r.y;
  let h = r.z;
  let kvh = h / u.G;
  let qb = n * $HS4u;
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
fn backwardDkDvRegs(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let n = gid.x + gid.y * nwg.x * 64u;
  if (n >= u.B * u.Tcap * u.NKV) { return; }
  let kvh = n % u.NKV;
  let j = (n / u.NKV) % u.Tcap;
  let b = n / (u.NKV * u.Tcap);
  let kb = n * $HS4u;
$KV_INIT
  if (j < u.Tk && keyOk(b, j)) {
$KV_LOAD
    let off = u.Tk - u.Tq;
    // query i sees key j iff j <= off + i
    for (var i = select(0u, j - off, j > off); i < u.Tq; i++) {
      for (var g = 0u; g < u.G; g++) {
        let h = kvh * u.G + g;
        let qb = ((b * u.Tq + i) * u.NH + h) * $HS4u;
$KV_QUERY
      }
    }
  }
$KV_STORE
}
