// A bounded cache keyed by a short list of 32-bit words, for the Gpu's per-dispatch lookups: a bind group by
// its program, uniform buffer and storage buffers (their ids), a uniform buffer by its words. The list is
// hashed and confirmed by a full compare, so a dispatch builds no key string: building and hashing one per
// dispatch was the largest JS cost of the duo preset's update, where most bind groups are new (every
// micro-batch has its own shapes, hence uniforms). It holds two generations: when the current one is full it
// becomes the previous one (the one before is dropped, its GPU objects left to the GC: a pending pass may
// still use them), and a hit there moves back into the current one. So what every step uses (the bind groups
// of weights, adapters and optimizer state) stays cached however many one-off entries pass through, where
// starting over when full dropped it with them. (A 135M iteration's misses came mostly from new buffers,
// not from this: bench/results/iteration/update-host-side/3-cache, and src/marft/trainer.ts poolHeadroom.)

interface Entry<V> {
  key: Uint32Array;
  value: V;
  /** The next entry of the same hash. */
  next: Entry<V> | undefined;
}

export class IntKeyCache<V> {
  private map = new Map<number, Entry<V>>();
  private count = 0;
  private prev = new Map<number, Entry<V>>();
  private prevCount = 0;
  /** cap: entries per generation (the cache holds at most twice as many). */
  constructor(private readonly cap: number) {}

  /** The value stored under key[0..n), or undefined; `h` is intKeyHash(key, n). */
  get(key: Uint32Array, n: number, h: number): V | undefined {
    for (let e = this.map.get(h); e; e = e.next) if (sameWords(e.key, key, n)) return e.value;
    for (let e = this.prev.get(h); e; e = e.next) {
      if (sameWords(e.key, key, n)) {
        this.set(key, n, h, e.value);
        return e.value;
      }
    }
    return undefined;
  }

  /** Stores `value` under a copy of key[0..n) (the caller's scratch changes); `h` is intKeyHash(key, n). */
  set(key: Uint32Array, n: number, h: number, value: V): void {
    if (this.count >= this.cap) {
      this.prev = this.map;
      this.prevCount = this.count;
      this.map = new Map();
      this.count = 0;
    }
    this.map.set(h, { key: key.slice(0, n), value, next: this.map.get(h) });
    this.count++;
  }

  /** Entries stored, both generations (a soak checks the caches stay bounded). */
  get size(): number {
    return this.count + this.prevCount;
  }
}

function sameWords(a: Uint32Array, b: Uint32Array, n: number): boolean {
  if (a.length !== n) return false;
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** A 32-bit hash of key[0..n) (multiply-xor); the cache tells colliding keys apart by comparing them. */
export function intKeyHash(key: Uint32Array, n: number): number {
  let h = Math.imul(0x9e3779b1, n + 1);
  for (let i = 0; i < n; i++) {
    h = Math.imul(h ^ key[i], 0x85ebca6b);
    h ^= h >>> 13;
  }
  return h;
}
