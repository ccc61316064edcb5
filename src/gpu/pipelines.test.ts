// Pipelines made once per program key: the layout of the bindings a dispatch passes, work recorded while a
// pipeline is made asynchronously kept in order, and a pipeline that cannot be made named in the error.
import { describe, expect, it } from 'vitest';
import { addInto } from '../../kernels/elementwise/elementwise.ts';
import { createNodeGpu } from './node.ts';
import { layoutEntries } from './pipelines.ts';
import type { Program } from './program.ts';

describe('pipelines', () => {
  it('lays out a dispatch as its WGSL declares the bindings it passes: the uniforms with a dynamic offset', () => {
    const code = `struct P { n: u32 }
      @group(0) @binding(0) var<uniform> u: P;
      @group(0) @binding(1) var<storage, read> x: array<f32>;
      @group(0)
      @binding(2) var<storage, read_write> y: array<f32>;
      @group(0) @binding(3) var<storage> z: array<f32>;`;
    const buf = {} as GPUBuffer;
    expect(layoutEntries(code, { bindings: [buf, undefined, buf], uniforms: [1] }, 'k')).toEqual([
      { binding: 0, visibility: 4, buffer: { type: 'uniform', hasDynamicOffset: true } },
      { binding: 1, visibility: 4, buffer: { type: 'read-only-storage' } },
      { binding: 3, visibility: 4, buffer: { type: 'read-only-storage' } },
    ]);
    expect(layoutEntries(code, { bindings: [undefined, buf] }, 'k')).toEqual([{ binding: 2, visibility: 4, buffer: { type: 'storage' } }]);
    expect(() => layoutEntries(code, { bindings: [buf, buf, buf, buf] }, 'k')).toThrow(/k: binding 4 is passed but not declared/);
    expect(() => layoutEntries(code.replace('var<uniform>', 'var<storage, read>'), { bindings: [], uniforms: [1] }, 'k')).toThrow(
      /binding 0 is not declared var<uniform>/,
    );
  });

  it('the work recorded while a pipeline is made (writes, copies, clears, a replay) runs in order, as with synchronous pipelines', async () => {
    const results: number[][] = [];
    for (const asyncPipelines of [true, false]) {
      const gpu = await createNodeGpu();
      gpu.pipelines.async = asyncPipelines;
      const x = gpu.upload([1, 2, 3, 4], [4], 'f32', 'x');
      const y = gpu.zeros([4], 'f32', 'y');
      addInto(gpu, y, x); // y = x; the first dispatch of this device: its pipeline is being made (async)
      if (asyncPipelines) expect(gpu.pipelines.made).toBeLessThan(gpu.pipelines.asked); // so what follows waits
      const later = new Float32Array([10, 20, 30, 40]);
      gpu.write(x, later); // after the add, with the values of now
      later.fill(999); // the caller's array changes: a deferred write keeps what it was given
      addInto(gpu, y, x); // y = 11, 22, 33, 44
      const z = gpu.zeros([4], 'f32', 'z');
      gpu.copy(y, z);
      gpu.fill(y, 0);
      gpu.startRecording();
      addInto(gpu, z, x, 2); // z += 2x
      const rec = gpu.stopRecording();
      gpu.replay(rec); // twice in all
      results.push([...(await gpu.readF32(y)), ...(await gpu.readF32(z))]);
      expect(gpu.pipelines.made).toBe(gpu.pipelines.asked);
      rec.dispose();
      gpu.device.destroy();
    }
    expect(results[0]).toEqual([0, 0, 0, 0, 51, 102, 153, 204]);
    expect(results[1]).toEqual(results[0]);
  });

  it('makes one pipeline per key and entry point, and names a pipeline that cannot be made at the next wait', async () => {
    const gpu = await createNodeGpu();
    const code = `@group(0) @binding(1) var<storage, read_write> y: array<f32>;
      @compute @workgroup_size(1) fn main() { y[0] = y[0] + 1.0; }`;
    const program = (): Program => ({ key: 'test:inc', code: () => code, entryPoint: 'main' });
    const y = gpu.zeros([1], 'f32', 'y');
    const before = gpu.cacheSizes.pipelines;
    for (const p of [program(), program(), program()]) gpu.run({ program: p, bindings: [y], workgroups: [1] });
    expect(gpu.cacheSizes.pipelines).toBe(before + 1); // three Program objects of one key: one pipeline
    expect(Array.from(await gpu.readF32(y))).toEqual([3]);
    const broken: Program = { key: 'test:broken', code: () => code.replace('1.0', 'undefined_name'), entryPoint: 'main' };
    gpu.run({ program: broken, bindings: [y], workgroups: [1] });
    await expect(gpu.readF32(y)).rejects.toThrow(/test:broken/);
    gpu.device.destroy();
  });

  it('prepares pipelines from the recipes of another session: a dispatch with the same WGSL takes one, a stale or broken recipe is not used', async () => {
    const code = (add: string) => `@group(0) @binding(1) var<storage, read_write> y: array<f32>;
      @compute @workgroup_size(1) fn main() { y[0] = y[0] + ${add}; }`;
    const program = (add: string): Program => ({ key: 'test:prep', code: () => code(add), entryPoint: 'main' });
    const first = await createNodeGpu();
    const y0 = first.zeros([1], 'f32', 'y');
    first.run({ program: program('1.0'), bindings: [y0], workgroups: [1] });
    await first.readF32(y0);
    const recipes = first.pipelines.recipes();
    expect(recipes).toEqual([
      { key: 'test:prep', entryPoint: 'main', code: code('1.0'), layout: [{ binding: 1, visibility: 4, buffer: { type: 'storage' } }] },
    ]);
    first.device.destroy();

    // the same program in a new session: made by prepare, before the dispatch, which asks for nothing new
    const gpu = await createNodeGpu();
    const broken = { ...recipes[0], key: 'test:broken', code: code('undefined_name') };
    expect(gpu.pipelines.prepare([...recipes, broken])).toBe(2);
    expect(gpu.pipelines.prepare(recipes)).toBe(0); // already being made
    await gpu.pipelines.settled();
    const asked = gpu.pipelines.asked;
    const y = gpu.zeros([1], 'f32', 'y');
    gpu.run({ program: program('1.0'), bindings: [y], workgroups: [1] });
    expect(gpu.pipelines.asked).toBe(asked);
    expect(Array.from(await gpu.readF32(y))).toEqual([1]); // and the broken recipe raised nothing at this wait

    // a recipe whose WGSL differs from the program's (an older build) is passed over
    const other = await createNodeGpu();
    other.pipelines.prepare([{ ...recipes[0], code: code('5.0') }]);
    const y2 = other.zeros([1], 'f32', 'y');
    other.run({ program: program('1.0'), bindings: [y2], workgroups: [1] });
    expect(Array.from(await other.readF32(y2))).toEqual([1]);
    gpu.device.destroy();
    other.device.destroy();
  });
});
