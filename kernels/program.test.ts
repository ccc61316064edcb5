import { describe, expect, it } from 'vitest';
import type { Gpu } from '../src/gpu/gpu.ts';
import type { Dispatch } from '../src/gpu/program.ts';
import type { Tensor } from '../src/gpu/tensor.ts';
import { declarations, defineKernel } from './program.ts';

const WGSL = `
struct Params { mask: vec4<u32>, n: u32, scale: f32, _p0: u32, _p1: u32 } // a comment: x: u32
@group(0) @binding(0) var<uniform> u: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(64) fn scale(@builtin(global_invocation_id) g: vec3u) { y[g.x] = x[g.x] * u.scale; }
`;

const kernel = defineKernel({
  name: 'demo',
  bindings: ['x', 'w', 'y'],
  uniforms: { mask: 'u32[4]', n: 'u32', scale: 'f32' },
  entries: { scale: ['x', 'w?', 'y'], other: ['w'] },
});

/** A Gpu that only records what it is asked to run. */
function recorder(): { gpu: Gpu; runs: Dispatch[] } {
  const runs: Dispatch[] = [];
  return { gpu: { run: (d: Dispatch) => runs.push(d) } as unknown as Gpu, runs };
}
const tensor = (name: string) => ({ name, buffer: {} }) as unknown as Tensor;

describe('defineKernel', () => {
  it('maps named bindings and uniforms to the positions and words the Gpu takes', () => {
    const { gpu, runs } = recorder();
    const [x, y] = [tensor('x'), tensor('y')];
    const program = kernel.program('demo', () => WGSL, 'scale');
    kernel.run(gpu, { program, bindings: { y, x }, uniforms: { n: 5, scale: 0.5, mask: [1, 2, 3, 4] }, workgroups: [2] });
    expect(runs).toHaveLength(1);
    expect(runs[0].bindings).toEqual([x, undefined, y]);
    expect(runs[0].uniforms).toEqual([1, 2, 3, 4, 5, { f32: 0.5 }]); // padded to 8 words by the Gpu
    expect(runs[0].workgroups).toEqual([2]);
    // an optional binding left out or null leaves its slot empty; trailing empty slots are dropped
    kernel.run(gpu, {
      program: kernel.program('demo', () => WGSL, 'other'),
      bindings: { w: x },
      uniforms: { n: 1, scale: 1, mask: [0, 0, 0, 0] },
      workgroups: [1],
    });
    expect(runs[1].bindings).toEqual([undefined, x]);
  });

  it('rejects a uniform array of the wrong length and an unknown binding at run time', () => {
    const { gpu } = recorder();
    const program = kernel.program('demo', () => WGSL, 'scale');
    expect(() =>
      kernel.run(gpu, { program, bindings: { x: tensor('x'), y: tensor('y') }, uniforms: { n: 1, scale: 1, mask: [1] }, workgroups: [1] }),
    ).toThrow(/demo: uniform mask must be 4 numbers/);
    const wrong = { x: tensor('x'), y: tensor('y'), z: tensor('z') };
    expect(() => kernel.run(gpu, { program, bindings: wrong, uniforms: { n: 1, scale: 1, mask: [0, 0, 0, 0] }, workgroups: [1] })).toThrow(
      /demo: no binding named z/,
    );
  });

  it("checks a program's WGSL against the names when its code is made", () => {
    expect(kernel.program('demo', () => WGSL, 'scale').code()).toBe(WGSL);
    const moved = WGSL.replace('@binding(3)', '@binding(2)');
    expect(() => kernel.program('demo', () => moved, 'scale').code()).toThrow(/WGSL declares y at @binding\(2\), the kernel names w there/);
    const reordered = WGSL.replace('n: u32, scale: f32', 'scale: f32, n: u32');
    expect(() => kernel.program('demo', () => reordered, 'scale').code()).toThrow(
      /struct Params is \(mask, scale, n, _p0, _p1\), the kernel's uniforms are \(mask, n, scale\)/,
    );
    // a required binding of the entry point must be declared; an optional one ('w?') need not be
    expect(() => kernel.program('demo', () => WGSL, 'other').code()).toThrow(/binding w is not declared at @binding\(2\)/);
  });

  it('refuses a uniform array off a 16-byte boundary (WGSL aligns vec4 fields to 16 bytes)', () => {
    expect(() => defineKernel({ name: 'bad', bindings: [], uniforms: { n: 'u32', mask: 'u32[4]' }, entries: {} })).toThrow(
      /bad: uniform mask starts at word 1/,
    );
  });

  it('writes the header of a kernel with binding types', () => {
    const k = defineKernel({
      name: 'typed',
      bindings: ['a', 'b', 'c'],
      uniforms: { M: 'u32', alpha: 'f32' },
      types: { a: 'read array<vec4f>', c: 'read_write array<f32>' },
      entries: { main: ['a', 'c'] },
    });
    const header = k.header();
    expect(header).toBe(
      [
        'struct Params { M: u32, alpha: f32, _p0: u32, _p1: u32 }',
        '@group(0) @binding(0) var<uniform> u: Params;',
        '@group(0) @binding(1) var<storage, read> a: array<vec4f>;',
        '@group(0) @binding(3) var<storage, read_write> c: array<f32>;',
      ].join('\n'),
    );
    // what it writes passes its own check
    expect(declarations(header)).toEqual({
      params: ['M', 'alpha', '_p0', '_p1'],
      bindings: new Map([
        [0, 'u'],
        [1, 'a'],
        [3, 'c'],
      ]),
    });
    expect(() => k.program('typed', () => `${header}\nfn main() {}`, 'main').code()).not.toThrow();
  });

  it('keeps one program per entry point and module choices', () => {
    const made: string[] = [];
    const variants = kernel.variants((wide: boolean, n: number) => {
      made.push(`${wide}:${n}`);
      return { key: `demo:${wide ? 'wide' : 'narrow'}:${n}`, code: () => WGSL };
    });
    const a = variants('scale', true, 4);
    expect(variants('scale', true, 4)).toBe(a);
    expect(variants('other', true, 4)).not.toBe(a);
    expect(variants('other', true, 4).key).toBe(a.key);
    expect(variants('scale', false, 4).key).toBe('demo:narrow:4');
    expect(made).toEqual(['true:4', 'false:4']);
    const module = kernel.module('demo', () => WGSL);
    expect(module('scale')).toBe(module('scale'));
    expect(module('scale').entryPoint).toBe('scale');
  });
});
