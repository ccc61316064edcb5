// The one seeded random number generator (Mulberry32 stream, 32-bit state) for everything that must be
// reproducible from a seed: adapter and critic init, task sampling, dataset shuffles, synthetic pretraining
// data, the kernels' test data. Not cryptographic. The whole state is one u32, so a checkpoint stores
// `rng.state` and `new Rng(state)` continues the same stream.
//
// Two ways in, because two kinds of seed exist: `new Rng(n)` starts the stream at state n (the run's
// numeric seed, a saved state, a test's seed); `Rng.fromSeed(s)` first mixes a number or a label such as
// `coop:${seed}` into a well-spread state (hashSeed), for the environments and pretraining data.

export class Rng {
  constructor(public state: number) {
    this.state >>>= 0;
  }

  /** A stream started from the hash of a seed or a label (see hashSeed). */
  static fromSeed(seed: number | string): Rng {
    return new Rng(hashSeed(seed));
  }

  /** Mulberry32: uniform in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  uniform(lo: number, hi: number): number {
    return lo + (hi - lo) * this.next();
  }

  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  /** Standard normal (Box-Muller). */
  normal(): number {
    const u = Math.max(this.next(), 1e-12);
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * this.next());
  }

  /** A new stream derived from this one and a label, so adding a consumer does not shift the others. */
  fork(label: string): Rng {
    let h = this.state ^ 0x9e3779b9;
    for (let i = 0; i < label.length; i++) h = Math.imul(h ^ label.charCodeAt(i), 0x01000193) >>> 0;
    return new Rng(h);
  }
}

/** Mixes a seed (any finite number, or a string) into a well-spread 32-bit state. */
export function hashSeed(seed: number | string): number {
  let h = 0x9e3779b9;
  const s = typeof seed === 'number' ? String(seed) : seed;
  for (let i = 0; i < s.length; i++) {
    h = Math.imul(h ^ s.charCodeAt(i), 0x85ebca6b);
    h ^= h >>> 13;
  }
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d);
  h = Math.imul(h ^ (h >>> 15), 0x846ca68b);
  return (h ^ (h >>> 16)) >>> 0;
}

/** A seeded Fisher-Yates shuffle of a copy of `items`. */
export function shuffled<T>(items: readonly T[], seed: number | string): T[] {
  const out = items.slice();
  const rng = Rng.fromSeed(seed);
  for (let i = out.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}
