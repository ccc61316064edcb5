// A small seeded random number generator (splitmix32 seeding + mulberry32 stream) for everything in the
// environments and the algorithm layer that must be reproducible from the run's seed: problem sampling,
// dataset shuffles, synthetic tasks. Not cryptographic; 32-bit state, so the whole state is one number
// that a checkpoint can store (`rng.state`) and restore (`createRng(0, state)`).

export interface Rng {
  /** A float in [0, 1). */
  next(): number;
  /** An integer in [0, n). */
  int(n: number): number;
  /** The current 32-bit state; createRng(0, state) continues the same stream. */
  readonly state: number;
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

export function createRng(seed: number | string, state?: number): Rng {
  let a = state === undefined ? hashSeed(seed) : state >>> 0;
  const next = (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (n: number) => Math.floor(next() * n),
    get state() {
      return a;
    },
  };
}

/** A seeded Fisher-Yates shuffle of a copy of `items`. */
export function shuffled<T>(items: readonly T[], seed: number | string): T[] {
  const out = items.slice();
  const rng = createRng(seed);
  for (let i = out.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}
