// Float64 CPU reference for one row of sampling, given the same uniform number u the kernel draws
// (samplingUniform). It sorts, where the kernel searches; the kept sets agree exactly because both work
// on the f32 values' order. `margin` says how close a floating-point decision came to its boundary
// (relative to the kept mass), so a test can tell a real mismatch from f32 rounding at a boundary.

export interface SampleRef {
  token: number;
  /** log q(token), q = the truncated, renormalised distribution (0 for greedy). */
  logprob: number;
  /** q over the vocabulary (zeros outside the kept set). */
  q: Float64Array;
  /** Smallest relative distance of the top-p or inverse-CDF decision from its boundary (Infinity if none). */
  margin: number;
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
export function keyOfRef(x: number): number {
  f32[0] = x;
  const b = u32[0];
  return (b & 0x80000000 ? ~b : b | 0x80000000) >>> 0;
}

export function sampleRowRef(row: ArrayLike<number>, temperature: number, topK: number, topP: number, u: number): SampleRef {
  const V = row.length;
  const keys = Array.from({ length: V }, (_, i) => keyOfRef(row[i]));
  let amax = 0;
  for (let i = 1; i < V; i++) if (keys[i] > keys[amax]) amax = i;
  const q = new Float64Array(V);
  if (temperature <= 0) {
    q[amax] = 1;
    return { token: amax, logprob: 0, q, margin: Infinity };
  }
  const xmax = row[amax];
  const e = Array.from({ length: V }, (_, i) => Math.exp((row[i] - xmax) / temperature));
  const desc = [...keys].sort((a, b) => b - a);
  let K = 0;
  if (topK > 0 && topK < V) K = desc[topK - 1];
  let margin = Infinity;
  if (topP < 1) {
    let Z = 0;
    for (let i = 0; i < V; i++) if (keys[i] >= K) Z += e[i];
    const groups = new Map<number, number>(); // key -> mass, over the top-k set
    for (let i = 0; i < V; i++) if (keys[i] >= K) groups.set(keys[i], (groups.get(keys[i]) ?? 0) + e[i]);
    let cum = 0;
    for (const key of [...groups.keys()].sort((a, b) => b - a)) {
      const prev = cum;
      cum += groups.get(key)!;
      if (cum >= topP * Z) {
        K = key;
        margin = Math.min(cum - topP * Z, prev > 0 ? topP * Z - prev : Infinity) / Z;
        break;
      }
    }
  }
  let Zs = 0;
  for (let i = 0; i < V; i++) if (keys[i] >= K) Zs += e[i];
  const target = u * Zs;
  let cum = 0;
  let token = -1;
  for (let i = 0; i < V; i++) {
    if (keys[i] < K) continue;
    q[i] = e[i] / Zs;
    if (token < 0 && cum + e[i] > target) {
      token = i;
      margin = Math.min(margin, (cum + e[i] - target) / Zs, cum > 0 ? (target - cum) / Zs : Infinity);
    }
    cum += e[i];
  }
  return { token, logprob: Math.log(e[token] / Zs), q, margin };
}
