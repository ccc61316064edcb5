// Pins the streams of the one seeded RNG: checkpoints store its u32 state and every run, test fixture and
// pretraining corpus is reproduced from it, so a change to either seeding or the stream must fail here.

import { describe, expect, it } from 'vitest';
import { hashSeed, Rng, shuffled } from './rng.ts';

describe('Rng', () => {
  it('new Rng(state) starts the Mulberry32 stream at that state', () => {
    const r = new Rng(7);
    expect([r.next(), r.next(), r.int(1000)]).toEqual([0.011704753153026104, 0.06195825757458806, 976]);
  });

  it('Rng.fromSeed hashes the seed first, and the state continues the stream', () => {
    const r = Rng.fromSeed('split:0');
    expect(r.state).toBe(hashSeed('split:0'));
    expect([r.next(), r.int(1000), r.state]).toEqual([0.2645238391123712, 537, 1583030959]);
    const again = new Rng(r.state);
    expect(again.next()).toBe(r.next());
  });

  it('fork gives a separate stream without advancing the parent', () => {
    const r = new Rng(3);
    const before = r.state;
    const a = r.fork('lora');
    expect(r.state).toBe(before);
    expect(a.state).not.toBe(r.fork('critic').state);
  });

  it('shuffled is a seeded permutation of a copy', () => {
    const items = [0, 1, 2, 3, 4, 5, 6, 7];
    expect(shuffled(items, 'split:0')).toEqual([4, 7, 5, 6, 0, 1, 3, 2]);
    expect(items).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });
});
