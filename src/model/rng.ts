// Seeded randomness for everything the lab initialises or samples on the CPU (adapter init, task
// sampling, shuffles), so a run is reproducible from its seed. The state is one u32: easy to checkpoint.

export class Rng {
  constructor(public state: number) { this.state >>>= 0; }

  /** Mulberry32: uniform in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  uniform(lo: number, hi: number): number { return lo + (hi - lo) * this.next(); }

  int(n: number): number { return Math.floor(this.next() * n); }

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
