// fast-check arbitraries shared by the fuzz tests (src/**/fuzz/*.fuzz.test.ts): byte-wise mutations of a
// valid file (flip, set, insert, delete, truncate, append, splice of a random chunk) and structural
// mutations of a JSON value (replace, delete or add a field anywhere in the tree, with hostile values:
// huge, negative, fractional, non-finite, wrong types, deep nesting, long strings).

import fc from 'fast-check';

export type ByteOp =
  | { op: 'flip'; at: number; bit: number }
  | { op: 'set'; at: number; value: number }
  | { op: 'insert'; at: number; bytes: Uint8Array }
  | { op: 'delete'; at: number; n: number }
  | { op: 'truncate'; at: number }
  | { op: 'append'; bytes: Uint8Array }
  | { op: 'u32'; at: number; value: number };

const pos = fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true });

/** One byte-wise mutation; positions are fractions of the current length (weighted to the start: headers). */
export const byteOp: fc.Arbitrary<ByteOp> = fc.oneof(
  fc.record({ op: fc.constant('flip' as const), at: pos, bit: fc.integer({ min: 0, max: 7 }) }),
  fc.record({ op: fc.constant('set' as const), at: pos, value: fc.integer({ min: 0, max: 255 }) }),
  fc.record({ op: fc.constant('insert' as const), at: pos, bytes: fc.uint8Array({ minLength: 1, maxLength: 16 }) }),
  fc.record({ op: fc.constant('delete' as const), at: pos, n: fc.integer({ min: 1, max: 32 }) }),
  fc.record({ op: fc.constant('truncate' as const), at: pos }),
  fc.record({ op: fc.constant('append' as const), bytes: fc.uint8Array({ minLength: 1, maxLength: 64 }) }),
  fc.record({
    op: fc.constant('u32' as const),
    at: pos,
    value: fc.oneof(fc.integer({ min: 0, max: 0xffffffff }), fc.constantFrom(0, 1, 7, 8, 0x7fffffff, 0xffffffff)),
  }),
);

/** Where `at` (a fraction) points: half the time into the first 256 bytes, where headers live. */
const index = (at: number, len: number): number => {
  if (len === 0) return 0;
  const head = Math.min(len, 256);
  return at < 0.5 ? Math.floor((at / 0.5) * head) : Math.floor(((at - 0.5) / 0.5) * len);
};

export function applyByteOps(src: Uint8Array, ops: readonly ByteOp[]): Uint8Array {
  let b: Uint8Array = src.slice();
  for (const o of ops) {
    switch (o.op) {
      case 'flip':
        if (b.length) {
          const i = index(o.at, b.length);
          b[i] ^= 1 << o.bit;
        }
        break;
      case 'set':
        if (b.length) b[index(o.at, b.length)] = o.value;
        break;
      case 'insert': {
        const i = index(o.at, b.length);
        b = concat(b.subarray(0, i), o.bytes, b.subarray(i));
        break;
      }
      case 'delete': {
        const i = index(o.at, b.length);
        b = concat(b.subarray(0, i), b.subarray(i + o.n));
        break;
      }
      case 'truncate':
        b = b.slice(0, index(o.at, b.length));
        break;
      case 'append':
        b = concat(b, o.bytes);
        break;
      case 'u32': {
        const i = index(o.at, b.length);
        if (i + 4 <= b.length) new DataView(b.buffer, b.byteOffset).setUint32(i, o.value >>> 0, true);
        break;
      }
    }
  }
  return b;
}

export function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((s, p) => s + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/** 1 to 6 byte-wise mutations. */
export const byteOps = fc.array(byteOp, { minLength: 1, maxLength: 6 });

/** Values a hostile or broken file might hold where a number, string, list or object is expected. */
export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: fc.integer({ min: -3, max: 70 }) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(0, -1, 0.5, 1e-300, 2 ** 31, 2 ** 32, 2 ** 53, 2 ** 53 + 2, 1e300, -0, Number.MAX_SAFE_INTEGER, 4294967295),
  },
  { weight: 1, arbitrary: fc.constantFrom(null, true, false, '', 'x', '1', 'NaN', '__proto__', 'constructor') },
  { weight: 1, arbitrary: fc.string({ maxLength: 12 }) },
  { weight: 1, arbitrary: fc.array(fc.integer({ min: -2, max: 40 }), { maxLength: 4 }) },
  { weight: 1, arbitrary: fc.constantFrom([], {}, [[]], { a: 1 }, ['x'], [2 ** 53, 1]) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
);

export type JsonEdit = { path: number[]; kind: 'replace' | 'delete' | 'add'; key: string; value: unknown };

/** A structural edit; path elements pick a child by index modulo the child count. */
export const jsonEdit = (keys: fc.Arbitrary<string> = fc.string({ maxLength: 10 }), values = hostileValue): fc.Arbitrary<JsonEdit> =>
  fc.record({
    path: fc.array(fc.nat(), { maxLength: 5 }),
    kind: fc.constantFrom('replace' as const, 'replace' as const, 'delete' as const, 'add' as const),
    key: keys,
    value: values,
  });

/** Applies edits to a deep copy of `value`. */
export function applyJsonEdits(value: unknown, edits: readonly JsonEdit[]): unknown {
  const root = { v: structuredClone(value) } as Record<string, unknown>;
  for (const e of edits) {
    // walk down: parent object/array and the key of the child to edit
    let parent: Record<string, unknown> | unknown[] = root;
    let key: string | number = 'v';
    for (const p of e.path) {
      const child: unknown = parent[key as string];
      if (child === null || typeof child !== 'object') break;
      const keys: Array<string | number> = Array.isArray(child) ? child.map((_, i) => i) : Object.keys(child);
      if (!keys.length) break;
      parent = child as Record<string, unknown>;
      key = keys[p % keys.length];
    }
    const target = parent[key as string];
    if (e.kind === 'replace') parent[key as string] = structuredClone(e.value);
    else if (e.kind === 'delete') {
      if (Array.isArray(parent)) parent.splice(key as number, 1);
      else delete parent[key as string];
    } else if (target !== null && typeof target === 'object') {
      if (Array.isArray(target)) target.push(structuredClone(e.value));
      else (target as Record<string, unknown>)[e.key] = structuredClone(e.value);
    }
  }
  return root.v;
}

/** 1 to 4 structural edits. */
export const jsonEdits = (keys?: fc.Arbitrary<string>, values?: fc.Arbitrary<unknown>) =>
  fc.array(jsonEdit(keys, values), { minLength: 1, maxLength: 4 });

/** Bytes allocated as ArrayBuffers and wall time while fn runs (for "rejected without allocating"). */
export function measure<T>(fn: () => T): { result: T | undefined; error: unknown; ms: number; arrayBufferBytes: number } {
  const before = process.memoryUsage().arrayBuffers;
  const t0 = performance.now();
  let result: T | undefined;
  let error: unknown;
  try {
    result = fn();
  } catch (e) {
    error = e;
  }
  return { result, error, ms: performance.now() - t0, arrayBufferBytes: process.memoryUsage().arrayBuffers - before };
}
