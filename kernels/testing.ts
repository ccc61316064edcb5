// Shared test helpers for kernels/: the Node GPU device, seeded data, llm.c-style tolerance checks that
// print the first mismatches by tensor name, and central finite differences for backward checks.

import { expect } from 'vitest';
import { Rng } from '../src/common/rng.ts';
import type { Gpu } from '../src/gpu/gpu.ts';
import { acquireNodeGpu } from '../src/gpu/node.ts';

let logged = false;
/** The process-wide test device (SwiftShader on a machine without a GPU). */
export async function testGpu(): Promise<Gpu> {
  const g = await acquireNodeGpu({
    log: (l) => {
      if (!logged) console.log(l);
    },
  });
  logged = true;
  return g;
}

/** n values uniform in [-scale, scale). */
export function randn(n: number, seed: number, scale = 1): Float64Array {
  const r = new Rng(seed);
  return Float64Array.from({ length: n }, () => (r.next() * 2 - 1) * scale);
}

export function randInt(n: number, seed: number, hi: number): Int32Array {
  const r = new Rng(seed);
  return Int32Array.from({ length: n }, () => r.int(hi));
}

export interface Tol {
  atol?: number;
  rtol?: number;
}

/**
 * Checks every element: |got - ref| <= atol + rtol*|ref|. Prints up to 5 first mismatches with their
 * index, then fails with the count, the tensor's name and the worst error.
 */
export function expectClose(name: string, got: ArrayLike<number>, ref: ArrayLike<number>, tol: Tol = {}): void {
  const atol = tol.atol ?? 1e-5;
  const rtol = tol.rtol ?? 1e-4;
  expect(got.length, `${name}: length`).toBe(ref.length);
  let bad = 0;
  let worst = 0;
  const lines: string[] = [];
  for (let i = 0; i < ref.length; i++) {
    const g = got[i];
    const r = ref[i];
    const err = Math.abs(g - r);
    const ok = err <= atol + rtol * Math.abs(r) || (Number.isNaN(g) && Number.isNaN(r)) || g === r;
    if (!ok) {
      bad++;
      if (lines.length < 5) lines.push(`  ${name}[${i}]: got ${g}, ref ${r}`);
    }
    if (Number.isFinite(err)) worst = Math.max(worst, err);
    else if (!ok) worst = Infinity;
  }
  if (bad) console.log(`${name}: ${bad}/${ref.length} mismatches\n${lines.join('\n')}`);
  expect(bad, `${name}: ${bad} of ${ref.length} outside atol ${atol} + rtol ${rtol}; worst abs error ${worst}`).toBe(0);
}

/** Central finite differences of a scalar function at every coordinate listed (default all) of x. */
export function finiteDiff(f: (x: Float64Array) => number, x: Float64Array, eps = 1e-6, coords?: number[]): Float64Array {
  const g = new Float64Array(x.length);
  for (const i of coords ?? x.keys()) {
    const keep = x[i];
    x[i] = keep + eps;
    const up = f(x);
    x[i] = keep - eps;
    const down = f(x);
    x[i] = keep;
    g[i] = (up - down) / (2 * eps);
  }
  return g;
}

/** sum(a * w): the scalar whose gradient with respect to a is w (the "dout" of a backward check). */
export function dot(a: ArrayLike<number>, w: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * w[i];
  return s;
}

export const pick = <T extends ArrayLike<number>>(a: T, idx: number[]): number[] => idx.map((i) => a[i]);
