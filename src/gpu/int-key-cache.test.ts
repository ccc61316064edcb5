// The Gpu's integer-keyed cache: hashed lookups confirmed by a full compare, bounded by two generations.
import { describe, expect, it } from 'vitest';
import { IntKeyCache, intKeyHash } from './int-key-cache.ts';

const k = (...xs: number[]) => Uint32Array.from(xs);

describe('IntKeyCache', () => {
  it('tells keys with the same hash apart by their words, and a key from its prefixes and extensions', () => {
    const c = new IntKeyCache<string>(16);
    const a = k(1, 2, 3);
    const b = k(4, 5, 6);
    c.set(a, 3, 7, 'a'); // one hash for both: a collision
    c.set(b, 3, 7, 'b');
    expect(c.get(k(1, 2, 3), 3, 7)).toBe('a');
    expect(c.get(k(4, 5, 6), 3, 7)).toBe('b');
    expect(c.get(k(1, 2, 4), 3, 7)).toBeUndefined();
    expect(c.get(k(1, 2, 3, 9), 2, 7)).toBeUndefined(); // the prefix (1, 2) was never stored
    expect(c.get(k(1, 2, 3, 9), 3, 7)).toBe('a'); // only key[0..n) counts
  });

  it('stores a copy of the key (the caller reuses its scratch)', () => {
    const c = new IntKeyCache<number>(4);
    const s = k(1, 1);
    c.set(s, 2, intKeyHash(s, 2), 11);
    s[1] = 2;
    c.set(s, 2, intKeyHash(s, 2), 12);
    expect(c.get(k(1, 1), 2, intKeyHash(k(1, 1), 2))).toBe(11);
    expect(c.get(k(1, 2), 2, intKeyHash(k(1, 2), 2))).toBe(12);
    expect(c.size).toBe(2);
  });

  it('keeps two generations: a full one becomes the previous, whose hits move back, and the one before is dropped', () => {
    const c = new IntKeyCache<number>(2);
    const put = (a: number, v: number) => c.set(k(a), 1, intKeyHash(k(a), 1), v);
    const get = (a: number) => c.get(k(a), 1, intKeyHash(k(a), 1));
    put(1, 11);
    put(2, 12);
    put(3, 13); // the first generation (1, 2) is full: it becomes the previous one
    expect(c.size).toBe(3);
    expect(get(1)).toBe(11); // found in the previous generation, moved into the current (3, 1)
    put(4, 14); // (3, 1) full: previous; (1, 2) dropped, but 1 lives on in (3, 1)
    expect(get(2)).toBeUndefined();
    expect(get(1)).toBe(11);
    expect(get(3)).toBe(13);
    expect(c.size).toBeLessThanOrEqual(4);
    for (let a = 10; a < 30; a++) put(a, a);
    expect(c.size).toBeLessThanOrEqual(4); // bounded by twice the capacity
    expect(get(1)).toBeUndefined();
  });

  it('hashes the length and the order of the words', () => {
    expect(intKeyHash(k(1, 2), 2)).not.toBe(intKeyHash(k(2, 1), 2));
    expect(intKeyHash(k(0, 0), 1)).not.toBe(intKeyHash(k(0, 0), 2));
  });
});
