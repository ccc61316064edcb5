// Kernels name their bindings and uniforms once, here, instead of positioning them in every launcher
// (tfjs-backend-webgpu's program descriptors). A kernel lists its storage bindings in binding order
// (1..n), its uniform fields in the order of the WGSL `struct Params`, and for each entry point the
// bindings it reads or writes ('name?' where a dispatch may leave it out). Launchers then pass objects
// keyed by those names; a missing or misspelled binding or uniform is a type error, and each program's
// WGSL is checked against the names when its pipeline is made, so a shader and its launcher cannot
// disagree on an order. The Gpu still takes positional arrays (src/gpu/program.ts's Dispatch): the kernel
// maps names to positions.
//
// A kernel may also give the WGSL types of its bindings (`types`): header() then writes the `struct
// Params`, the uniform binding and the storage bindings, so shaders that share them include one header.

import type { Gpu } from '../src/gpu/gpu.ts';
import type { Program, UniformField } from '../src/gpu/program.ts';
import type { Tensor } from '../src/gpu/tensor.ts';

/** A uniform field: one 32-bit word, or `u32[n]`, n words of u32 (a WGSL vec4<u32> or array<vec4u, n / 4>). */
export type UniformType = 'u32' | 'i32' | 'f32' | `u32[${number}]`;
export type UniformLayout = Readonly<Record<string, UniformType>>;
/** What a binding takes: a tensor or a raw buffer. */
export type Bound = Tensor | GPUBuffer;

type RequiredNames<L extends readonly string[]> = Exclude<L[number], `${string}?`>;
type OptionalNames<L extends readonly string[]> = L[number] extends infer S ? (S extends `${infer N}?` ? N : never) : never;
/** The bindings object of an entry point that uses the names in L ('name?': may be left out or null). */
export type BindingsOf<L extends readonly string[]> = { readonly [K in RequiredNames<L>]: Bound } & {
  readonly [K in OptionalNames<L>]?: Bound | null;
};
/** The uniforms object of a layout: every field by name, but padding (names starting with `_`, packed as 0). */
export type UniformsOf<U extends UniformLayout> = {
  -readonly [K in keyof U as K extends `_${string}` ? never : K]: U[K] extends `u32[${number}]` ? readonly number[] : number;
};

/** A Program whose entry point is one of its kernel's, so run() knows which bindings it takes. */
export interface KernelProgram<E extends string> extends Program {
  readonly entryPoint: E;
}

type Entries<B extends string> = Readonly<Record<string, readonly (B | `${B}?`)[]>>;

export interface KernelSpec<B extends string, U extends UniformLayout, E extends Entries<B>> {
  /** Names the kernel in errors. */
  readonly name: string;
  /** Storage bindings in binding order: bindings[i] is @binding(i + 1). */
  readonly bindings: readonly B[];
  /** Uniform fields in the order of the WGSL `struct Params` (trailing `_` padding fields left out). */
  readonly uniforms?: U;
  /** Each entry point's bindings; 'name?' marks one a dispatch may leave out. */
  readonly entries: E;
  /** WGSL declarations of the storage bindings header() writes, e.g. { q: 'read array<vec4f>' }. */
  readonly types?: Partial<Record<B, string>>;
}

type UniformArg<U extends UniformLayout> = keyof U extends never ? { readonly uniforms?: undefined } : { readonly uniforms: UniformsOf<U> };

export type RunArgs<B extends string, U extends UniformLayout, E extends Entries<B>, K extends keyof E & string> = {
  readonly program: KernelProgram<K>;
  readonly bindings: BindingsOf<E[K]>;
  readonly workgroups: readonly [number, number?, number?];
} & UniformArg<U>;

/** The entry points of a kernel. */
export type EntryOf<T> = T extends Kernel<string, UniformLayout, infer E> ? keyof E & string : never;

export interface Kernel<B extends string, U extends UniformLayout, E extends Entries<B>> {
  readonly name: string;
  /** A program of entry point `entryPoint`; its code is checked against these names when first generated. */
  program<K extends keyof E & string>(key: string, code: () => string, entryPoint: K): KernelProgram<K>;
  /** The programs of one module (key, code): one per entry point, made at its first use and kept (the Gpu caches by program). */
  module(key: string, code: () => string): <K extends keyof E & string>(entryPoint: K) => KernelProgram<K>;
  /**
   * Programs of modules made from compile-time choices (numbers, strings, booleans): `module(...choices)`
   * gives the module's key and code, once per choices; a program per entry point and choices, kept.
   */
  variants<A extends Array<string | number | boolean>>(
    module: (...choices: A) => { key: string; code: () => string },
  ): <K extends keyof E & string>(entryPoint: K, ...choices: A) => KernelProgram<K>;
  /** Dispatches a program of this kernel with bindings and uniforms by name. */
  run<K extends keyof E & string>(gpu: Gpu, d: RunArgs<B, U, E, K>): void;
  /** `struct Params`, binding 0 and the storage bindings that have `types` (or `types` here), as WGSL. */
  header(types?: Partial<Record<B, string>>): string;
}

/** Fields of `struct Params` and the storage bindings (number -> name) a WGSL module declares. */
export function declarations(code: string): { params: string[] | null; bindings: Map<number, string> } {
  const bare = code.replace(/\/\/[^\n]*/g, '');
  const struct = bare.match(/struct\s+Params\s*\{([^}]*)\}/);
  const params = struct ? [...struct[1].matchAll(/(\w+)\s*:/g)].map((m) => m[1]) : null;
  const bindings = new Map<number, string>();
  for (const m of bare.matchAll(/@group\(0\)\s*@binding\((\d+)\)\s*var\s*<[^>]*>\s*(\w+)\s*:/g)) bindings.set(Number(m[1]), m[2]);
  return { params, bindings };
}

export function defineKernel<
  const B extends string,
  const U extends UniformLayout = Record<never, UniformType>,
  const E extends Entries<B> = Entries<B>,
>(spec: KernelSpec<B, U, E>): Kernel<B, U, E> {
  const index = new Map<string, number>(spec.bindings.map((b, i) => [b, i]));
  const fields = Object.entries<UniformType>(spec.uniforms ?? {});
  const widths = fields.map(([, type]) => (type.startsWith('u32[') ? Number(type.slice(4, -1)) : 0));
  let word = 0;
  fields.forEach(([f], i) => {
    // WGSL aligns a vec4 (or array of vec4) field of a uniform struct to 16 bytes; packing does not pad
    if (widths[i] && (word % 4 || widths[i] % 4))
      throw new Error(
        `${spec.name}: uniform ${f} starts at word ${word} with ${widths[i]} words; arrays take whole vec4s at a multiple of 4 words`,
      );
    word += widths[i] || 1;
  });
  for (const [entry, names] of Object.entries(spec.entries)) {
    for (const n of names) if (!index.has(n.replace(/\?$/, ''))) throw new Error(`${spec.name}: entry ${entry} names ${n}, not a binding`);
  }

  function check(code: string, entryPoint: string, key: string): void {
    const what = `${spec.name} (${key}, ${entryPoint})`;
    const { params, bindings } = declarations(code);
    for (const [n, name] of bindings) {
      if (n === 0) continue;
      if (spec.bindings[n - 1] !== name)
        throw new Error(`${what}: WGSL declares ${name} at @binding(${n}), the kernel names ${spec.bindings[n - 1] ?? 'nothing'} there`);
    }
    for (const name of spec.entries[entryPoint] ?? []) {
      if (name.endsWith('?')) continue; // optional: some modules of the kernel leave it out
      if (bindings.get(index.get(name)! + 1) !== name)
        throw new Error(`${what}: binding ${name} is not declared at @binding(${index.get(name)! + 1})`);
    }
    if (fields.length) {
      const names = fields.map(([f]) => f);
      const same = params !== null && names.every((f, i) => params[i] === f) && params.slice(names.length).every((f) => f.startsWith('_'));
      if (!same)
        throw new Error(`${what}: struct Params is (${params?.join(', ') ?? 'absent'}), the kernel's uniforms are (${names.join(', ')})`);
    }
  }

  // bind and pack run at every dispatch: plain loops over what was worked out once above and here
  const slot: Record<string, number> = Object.create(null) as Record<string, number>;
  spec.bindings.forEach((b, i) => (slot[b] = i));
  const names = fields.map(([f]) => f);
  const pads = names.map((f) => f.startsWith('_'));
  const types = fields.map(([, type]) => type);

  const pack = (values: Record<string, number | readonly number[]>): UniformField[] => {
    const out: UniformField[] = [];
    for (let i = 0; i < names.length; i++) {
      const v = pads[i] ? 0 : values[names[i]];
      const width = widths[i];
      if (width) {
        if (pads[i]) {
          for (let j = 0; j < width; j++) out.push(0);
          continue;
        }
        if (!Array.isArray(v) || v.length !== width)
          throw new Error(`${spec.name}: uniform ${names[i]} must be ${width} numbers, got ${String(v)}`);
        for (let j = 0; j < width; j++) out.push((v as number[])[j]);
      } else if (typeof v !== 'number') {
        throw new Error(`${spec.name}: uniform ${names[i]} is ${String(v)}`);
      } else {
        const type = types[i];
        out.push(type === 'u32' ? v : type === 'f32' ? { f32: v } : { i32: v });
      }
    }
    return out;
  };

  /** The positional bindings: up to the last one passed, undefined where a binding is absent or null. */
  const bind = (values: Readonly<Record<string, Bound | null | undefined>>): Array<Bound | undefined> => {
    const out: Array<Bound | undefined> = [];
    for (const name in values) {
      const i = slot[name];
      if (i === undefined) throw new Error(`${spec.name}: no binding named ${name}`);
      const v = values[name];
      if (!v) continue;
      while (out.length <= i) out.push(undefined);
      out[i] = v;
    }
    return out;
  };

  const program = <K extends keyof E & string>(key: string, code: () => string, entryPoint: K): KernelProgram<K> => ({
    key,
    entryPoint,
    code: () => {
      const c = code();
      check(c, entryPoint, key);
      return c;
    },
  });

  return {
    name: spec.name,
    program,
    module(key: string, code: () => string) {
      const made = new Map<string, KernelProgram<string>>();
      return <K extends keyof E & string>(entryPoint: K): KernelProgram<K> => {
        let p = made.get(entryPoint);
        if (!p) {
          p = program(key, code, entryPoint);
          made.set(entryPoint, p);
        }
        return p as KernelProgram<K>;
      };
    },
    variants<A extends Array<string | number | boolean>>(module: (...choices: A) => { key: string; code: () => string }) {
      const modules = new Map<string, { key: string; code: () => string }>();
      const made = new Map<string, KernelProgram<string>>();
      return <K extends keyof E & string>(entryPoint: K, ...choices: A): KernelProgram<K> => {
        const id = choices.join('#');
        let p = made.get(`${entryPoint}#${id}`);
        if (!p) {
          let m = modules.get(id);
          if (!m) {
            m = module(...choices);
            modules.set(id, m);
          }
          p = program(m.key, m.code, entryPoint);
          made.set(`${entryPoint}#${id}`, p);
        }
        return p as KernelProgram<K>;
      };
    },
    run(gpu, d) {
      gpu.run({
        program: d.program,
        bindings: bind(d.bindings),
        uniforms: fields.length ? pack(d.uniforms as Record<string, number | readonly number[]>) : undefined,
        workgroups: d.workgroups,
      });
    },
    header(types?: Partial<Record<B, string>>): string {
      const lines: string[] = [];
      if (fields.length) {
        const words = Math.max(4, Math.ceil(fields.length / 4) * 4);
        const pad = Array.from({ length: words - fields.length }, (_, i) => `_p${i}: u32`);
        if (widths.some((w) => w)) throw new Error(`${spec.name}: header() writes scalar uniforms only`);
        lines.push(`struct Params { ${[...fields.map(([f, t]) => `${f}: ${t}`), ...pad].join(', ')} }`);
        lines.push('@group(0) @binding(0) var<uniform> u: Params;');
      }
      spec.bindings.forEach((b, i) => {
        const t = types?.[b] ?? spec.types?.[b];
        if (!t) return;
        const [access, ...type] = t.split(' ');
        lines.push(`@group(0) @binding(${i + 1}) var<storage, ${access}> ${b}: ${type.join(' ')};`);
      });
      return lines.join('\n');
    },
  };
}
