// The kernel cache: recipes kept per adapter and model shape, merged across sessions, and ignored when
// unreadable or kept for another scope.
import { describe, expect, it } from 'vitest';
import type { Gpu } from '../gpu/gpu.ts';
import type { PipelineRecipe } from '../gpu/pipelines.ts';
import { memoryStore } from '../platform/storage/store.ts';
import { kernelCachePath, keepKernels, readKernelCache } from './kernel-cache.ts';

const recipe = (key: string, code = `// ${key}`): PipelineRecipe => ({ key, entryPoint: 'main', code, layout: [] });
/** A Gpu as far as the cache sees it: the recipes of the pipelines it made. */
const gpuWith = (made: PipelineRecipe[]) => ({ pipelines: { recipes: () => made } }) as unknown as Gpu;

describe('kernel cache', () => {
  it('keeps the recipes made, merges them with those kept before (the newest first), and writes only when something is new', async () => {
    const store = memoryStore();
    expect(await readKernelCache(store, 'A')).toEqual([]);
    expect(await keepKernels(gpuWith([recipe('a'), recipe('b')]), store, 'A')).toBe(true);
    expect(await keepKernels(gpuWith([recipe('b')]), store, 'A')).toBe(false); // nothing new: not written
    // a new build changed b's WGSL and made c: both kept first, a after them, the old b gone
    expect(await keepKernels(gpuWith([recipe('c'), recipe('b', '// b2')]), store, 'A')).toBe(true);
    expect((await readKernelCache(store, 'A')).map((r) => `${r.key}:${r.code}`)).toEqual(['c:// c', 'b:// b2', 'a:// a']);
  });

  it('ignores a cache kept for another scope, a malformed file and malformed recipes', async () => {
    const store = memoryStore();
    await keepKernels(gpuWith([recipe('a')]), store, 'A');
    // another scope whose file name collides: the scope inside tells them apart
    await store.write(kernelCachePath('B'), (await store.read(kernelCachePath('A'))).slice());
    expect(await readKernelCache(store, 'B')).toEqual([]);
    await store.write(kernelCachePath('A'), '{ not json');
    expect(await readKernelCache(store, 'A')).toEqual([]);
    await store.write(kernelCachePath('A'), JSON.stringify({ version: 1, scope: 'A', recipes: [recipe('a'), { key: 3 }, null] }));
    expect(await readKernelCache(store, 'A')).toEqual([recipe('a')]);
  });
});
