// One generation step's bookkeeping on the GPU, after the step's tokens are sampled (generate()), so a
// recorded decode step carries no per-step values in its uniforms and the CPU detects no stops:
//   step (1) i32: s, the step whose tokens were just sampled; set to s + 1
//   len (1) i32 := Tp + s: the KV cache's filled length before the next forward (its lengthGpu)
//   pos (B) i32 := plen[b] + s: the position of token s, the next forward's input
//   token (B) i32: the tokens sampled at step s; plen (B) i32: prompt lengths; limit (B) i32: new tokens allowed
//   stops (NS) i32: stop token ids (NS = 0: none bound, a one-element buffer)
//   kept (B + 1) i32: kept[b] = -1 while sequence b runs, else the tokens it keeps (s + 1 at a stop token or
//     at its limit; a sequence ends once); kept[B] := the sequences still running
// Tp (the padded prompt length) and NS come in the uniforms, fixed for a generation.
// dispatch: 1 workgroup of 64.

struct Params { B: u32, NS: u32, Tp: u32, _p: u32 }
@group(0) @binding(0) var<uniform> u: Params;
@group(0) @binding(1) var<storage, read_write> step: array<i32>;
@group(0) @binding(2) var<storage, read_write> len: array<i32>;
@group(0) @binding(3) var<storage, read_write> pos: array<i32>;
@group(0) @binding(4) var<storage, read> token: array<i32>;
@group(0) @binding(5) var<storage, read> plen: array<i32>;
@group(0) @binding(6) var<storage, read> limit: array<i32>;
@group(0) @binding(7) var<storage, read> stops: array<i32>;
@group(0) @binding(8) var<storage, read_write> kept: array<i32>;

var<workgroup> running: atomic<u32>;

@compute @workgroup_size(64)
fn advance(@builtin(local_invocation_index) t: u32) {
  let s = step[0]; // every thread reads s before thread 0 moves it on (the barrier below)
  if (t == 0u) { atomicStore(&running, 0u); }
  workgroupBarrier();
  for (var b = t; b < u.B; b += 64u) {
    pos[b] = plen[b] + s;
    if (kept[b] < 0) {
      var stop = s + 1 >= limit[b];
      for (var i = 0u; i < u.NS; i++) { stop = stop || token[b] == stops[i]; }
      if (stop) { kept[b] = s + 1; } else { atomicAdd(&running, 1u); }
    }
  }
  workgroupBarrier();
  if (t == 0u) {
    step[0] = s + 1;
    len[0] = i32(u.Tp) + s;
    kept[u.B] = i32(atomicLoad(&running));
  }
}
