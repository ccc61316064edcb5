// The kernel cache: the recipes (WGSL, entry point, layout) of the pipelines a model's runs made on this
// adapter, kept in the platform's store so that the next session makes them while the model loads, in
// parallel, instead of at their first dispatch inside the first iteration (Pipelines.prepare). A recipe
// serves only a dispatch with the same WGSL and layout, so a cache from an older build costs some unused
// compiles, never a wrong kernel; a malformed or unreadable cache is ignored.

import type { AdapterSummary, Gpu } from '../gpu/gpu.ts';
import type { PipelineRecipe } from '../gpu/pipelines.ts';
import type { ModelConfig } from '../model/config.ts';
import type { CheckpointStore } from '../platform/storage/store.ts';

/** Recipes kept per adapter and model at most (the newest first); a run of the 135M shape makes about 200. */
const MAX_RECIPES = 1000;

interface CacheFile {
  version: 1;
  /** What the recipes were made for (checked on read: the file name is only a hash of it). */
  scope: string;
  recipes: PipelineRecipe[];
}

/** The adapter and the model shape the recipes belong to. */
export function kernelScope(adapter: AdapterSummary, model: ModelConfig): string {
  const a = [adapter.vendor, adapter.architecture, adapter.device, adapter.description].join('/');
  return `${a}|${JSON.stringify(model)}`;
}

/** The cache file of a scope: a 32-bit FNV-1a hash of it (collisions are caught by the scope inside). */
export function kernelCachePath(scope: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < scope.length; i++) h = Math.imul(h ^ scope.charCodeAt(i), 0x01000193) >>> 0;
  return `kernels-${h.toString(16).padStart(8, '0')}.json`;
}

/** The recipes kept for `scope`; none when there is no cache, or it is unreadable or for another scope. */
export async function readKernelCache(store: CheckpointStore, scope: string): Promise<PipelineRecipe[]> {
  try {
    const f = JSON.parse(new TextDecoder().decode(await store.read(kernelCachePath(scope)))) as Partial<CacheFile>;
    if (f.version !== 1 || f.scope !== scope || !Array.isArray(f.recipes)) return [];
    return f.recipes.filter(
      (r) => typeof r?.key === 'string' && typeof r.entryPoint === 'string' && typeof r.code === 'string' && Array.isArray(r.layout),
    );
  } catch {
    return [];
  }
}

/** Starts making the kept recipes on `gpu` (Pipelines.prepare); how many were started. */
export async function prepareKernels(gpu: Gpu, store: CheckpointStore, scope: string): Promise<number> {
  return gpu.pipelines.prepare(await readKernelCache(store, scope));
}

/**
 * Keeps the recipes of the pipelines `gpu` made, with those kept before that it did not make (the newest
 * first, MAX_RECIPES at most). Writes only when something new was made; false when nothing was written.
 */
export async function keepKernels(gpu: Gpu, store: CheckpointStore, scope: string): Promise<boolean> {
  const made = gpu.pipelines.recipes();
  const kept = await readKernelCache(store, scope);
  const keys = new Set(kept.map((r) => `${r.key}#${r.entryPoint}#${r.code}`));
  if (made.every((r) => keys.has(`${r.key}#${r.entryPoint}#${r.code}`))) return false;
  const mine = new Set(made.map((r) => `${r.key}#${r.entryPoint}`));
  const recipes = [...made, ...kept.filter((r) => !mine.has(`${r.key}#${r.entryPoint}`))].slice(0, MAX_RECIPES);
  const file: CacheFile = { version: 1, scope, recipes };
  await store.write(kernelCachePath(scope), JSON.stringify(file));
  return true;
}
