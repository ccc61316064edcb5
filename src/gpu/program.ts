// The program interface every kernel launcher implements (one descriptor per kernel, as in
// tfjs-backend-webgpu). Binding convention, shared by all WGSL files in kernels/:
//   @group(0) @binding(0) var<uniform> u: Params;       // per-call shapes and scalars (if any)
//   @group(0) @binding(1..n) var<storage, ...> ...;      // tensors, in the order of Dispatch.bindings
// Compile-time choices (tile sizes, transposes, storage dtypes) are baked into the WGSL text and named
// in `key`; shapes that change per call go in the uniforms, so one pipeline serves every shape.

import type { Tensor } from './tensor.ts';

export interface Program {
  /** Cache key built only from compile-time choices, e.g. 'matmul:nt:bf16:64x64'. Labels GPU objects. */
  readonly key: string;
  /** Full WGSL text of the module (generated once per key). */
  readonly code: () => string;
  readonly entryPoint: string;
}

/** A kernel's name in profiles and recordings: `<program key>/<entry point>`. */
export const kernelName = (p: Program): string => `${p.key}/${p.entryPoint}`;

/** A uniform field: a plain number is a u32; wrap to pick another type. */
export type UniformField = number | { f32: number } | { i32: number };

export interface Dispatch {
  readonly program: Program;
  /** Storage bindings 1..n; undefined leaves a binding out (for entry points that do not use it). */
  readonly bindings: ReadonlyArray<Tensor | GPUBuffer | undefined>;
  readonly uniforms?: readonly UniformField[];
  readonly workgroups: readonly [number, number?, number?];
}

/** The 32-bit words a uniform block of `n` fields takes (padded to 16 bytes, WGSL's uniform struct alignment). */
export const uniformWords = (n: number): number => Math.max(4, Math.ceil(n / 4) * 4);

/**
 * Encodes uniform fields into u (i and f: views of u's bytes), padding words zeroed; returns the word count.
 * The Gpu encodes every dispatch's uniforms into one scratch block this way and looks the words up.
 */
export function encodeUniformsInto(fields: readonly UniformField[], u: Uint32Array, i: Int32Array, f: Float32Array): number {
  const words = uniformWords(fields.length);
  if (words > u.length) throw new Error(`${fields.length} uniform fields: more than the ${u.length} words a uniform block may have here`);
  for (let k = 0; k < fields.length; k++) {
    const v = fields[k];
    if (typeof v === 'number') u[k] = v >>> 0;
    else if ('f32' in v) f[k] = v.f32;
    else i[k] = v.i32;
  }
  for (let k = fields.length; k < words; k++) u[k] = 0;
  return words;
}

/** Splits a large 1-D workgroup count over x and y (x at most 65535), for kernels that flatten the grid. */
export function grid1d(groups: number): [number, number] {
  if (groups <= 65535) return [Math.max(1, groups), 1];
  const y = Math.ceil(groups / 65535);
  return [Math.ceil(groups / y), y];
}

/**
 * The launchers' one memo of program descriptors: `make` runs once per id (the compile-time choices, and
 * the device limits they depend on), so a launcher builds its Program objects, and any WGSL-generation
 * state they close over, once. A `make` that throws (a head size this device cannot fit) is not memoised.
 */
export function programFactory<A extends unknown[], T>(id: (...args: A) => string, make: (...args: A) => T): (...args: A) => T {
  const made = new Map<string, T>();
  return (...args: A): T => {
    const k = id(...args);
    if (made.has(k)) return made.get(k) as T;
    const p = make(...args);
    made.set(k, p);
    return p;
  };
}
