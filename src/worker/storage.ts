// The Storage panel's numbers: what the browser says this site uses and may use (navigator.storage
// .estimate(), which counts everything the origin stores), and what each run folder and each local model
// takes in OPFS, summed from file sizes; biggest first, so the user sees what to delete to free space.

import { folderBytes, type CheckpointStore } from '../platform/storage/store.ts';
import { ckptFail } from '../platform/storage/errors.ts';
import { type FolderUsage, OPFS_MODEL_PREFIX, type StorageUsage } from './api.ts';
import { isHiddenFolder } from './model-source.ts';

/** The browser's estimate, or nulls where it has none (an older browser, a test). */
export async function browserEstimate(): Promise<{ usage: number | null; quota: number | null }> {
  const est = typeof navigator === 'undefined' ? null : await navigator.storage?.estimate?.().catch(() => null);
  return { usage: est?.usage ?? null, quota: est?.quota ?? null };
}

async function folders(store: CheckpointStore, name: (folder: string) => string): Promise<FolderUsage[]> {
  const out: FolderUsage[] = [];
  for (const e of await store.list('')) {
    if (e.kind !== 'directory') continue;
    out.push({ name: name(e.name), bytes: await folderBytes(store, e.name) });
  }
  return out.sort((a, b) => b.bytes - a.bytes || (a.name < b.name ? -1 : 1));
}

/** Usage of `runs` (one folder per run) and `models` (one per local model; hidden copies in flight count as their own rows). */
export async function storageUsage(runs: CheckpointStore, models: CheckpointStore, estimate = browserEstimate): Promise<StorageUsage> {
  return {
    ...(await estimate()),
    runs: await folders(runs, (f) => f),
    models: await folders(models, (f) => (isHiddenFolder(f) ? f : `${OPFS_MODEL_PREFIX}${f}`)),
  };
}

/** Deletes the local model `path` names (opfs:models/<name>) from `models`. */
export async function deleteLocalModel(models: CheckpointStore, path: string): Promise<void> {
  const name = path.startsWith(OPFS_MODEL_PREFIX) ? path.slice(OPFS_MODEL_PREFIX.length) : path;
  if (name === '' || name.includes('/')) ckptFail('PATH_INVALID', path, `not a local model (expected ${OPFS_MODEL_PREFIX}<name>)`);
  await models.remove(name);
}
