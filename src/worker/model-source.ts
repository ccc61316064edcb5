// Where the worker gets a base model's files: the built-in model served statically under models/<name>/
// (fetched file by file: a static server has no folder listing, so the known Hugging Face file names are
// tried, and a shard index pulls in its shards), or a local folder the user picked, copied into OPFS under
// models/<name>/ so it survives a reload and a resumed run finds it again. The copy goes to a hidden
// .partial-<name>/ folder first and is renamed into place only when every file is written, so a full
// quota (or a closed tab) mid-copy leaves no half model and keeps the one it was replacing.

import { BUILTIN_MODEL, builtinModelName } from '../config/run-config.ts';
import { type ModelFiles, memoryFiles } from '../marft/session.ts';
import type { CheckpointStore } from '../platform/storage/store.ts';
import { listFiles } from '../platform/storage/store.ts';
import { isStorageFull } from '../platform/storage/errors.ts';
import { errorMessage, messageWithoutHint } from '../common/errors.ts';
import { opfsStore } from '../platform/storage/opfs.ts';
import { OPFS_MODEL_PREFIX } from './api.ts';
import { WorkerFail } from './errors.ts';

const OPTIONAL = ['tokenizer.json', 'tokenizer_config.json', 'chat_template.jinja', 'generation_config.json', 'special_tokens_map.json'];
const INDEX = 'model.safetensors.index.json';

/** Files over this many bytes are refused before anything is read: the browser holds weights in memory whole. */
export const MAX_MODEL_BYTES = 1.5 * 2 ** 30;

/** The bytes at `url`; null when the server has no such file (404, or its SPA fallback page). */
export async function tryFetch(url: string): Promise<Uint8Array | null> {
  const r = await fetch(url);
  if (r.status === 404) return null;
  if (!r.ok) throw new WorkerFail('MODEL_FETCH', `${url}: HTTP ${r.status}`);
  // a static server's SPA fallback answers unknown paths with the app's index.html
  if ((r.headers.get('content-type') ?? '').includes('text/html')) return null;
  return new Uint8Array(await r.arrayBuffer());
}

/**
 * The built-in model's files, fetched from `base` (…/models/) once per worker (its platform holds one):
 * the model is small and never changes, so one fetch serves every caller (loading it for training and
 * exporting it as ONNX at the same time made Chromium fail the second fetch with ERR_CACHE_WRITE_FAILURE).
 * A failed fetch is retried by the next call.
 */
export class BuiltinModels {
  private readonly fetches = new Map<string, Promise<ModelFiles>>();

  get(base: string, name = BUILTIN_MODEL): Promise<ModelFiles> {
    const key = `${base}|${name}`;
    let p = this.fetches.get(key);
    if (!p) {
      p = fetchModelFolder(base, name);
      this.fetches.set(key, p);
      p.catch(() => this.fetches.delete(key));
    }
    return p;
  }
}

async function fetchModelFolder(base: string, name: string): Promise<ModelFiles> {
  const root = new URL(`${name}/`, base).href;
  const files: Record<string, Uint8Array> = {};
  const config = await tryFetch(`${root}config.json`).catch((e) => {
    throw new WorkerFail('MODEL_FETCH', `cannot fetch ${root}config.json (${(e as Error).message})`);
  });
  if (!config) throw new WorkerFail('MODEL_FETCH', `the built-in model is not at ${root} (no config.json)`);
  files['config.json'] = config;
  const single = await tryFetch(`${root}model.safetensors`);
  if (single) files['model.safetensors'] = single;
  else {
    const index = await tryFetch(`${root}${INDEX}`);
    if (!index) throw new WorkerFail('MODEL_FETCH', `the built-in model at ${root} has neither model.safetensors nor ${INDEX}`);
    files[INDEX] = index;
    const map = (JSON.parse(new TextDecoder().decode(index)) as { weight_map?: Record<string, string> }).weight_map ?? {};
    for (const shard of new Set(Object.values(map))) {
      const b = await tryFetch(`${root}${shard}`);
      if (b) files[shard] = b;
    }
  }
  for (const f of OPTIONAL) {
    const b = await tryFetch(`${root}${f}`);
    if (b) files[f] = b;
  }
  return memoryFiles(name, files);
}

/** A ModelFiles over a folder of a CheckpointStore (OPFS). */
export async function storeModelFiles(store: CheckpointStore, dir: string, name: string): Promise<ModelFiles> {
  const rel = await listFiles(store, dir); // relative to dir
  const dec = new TextDecoder();
  return {
    name,
    list: () => rel,
    read: (p) => store.read(`${dir}/${p}`),
    readText: async (p) => dec.decode(await store.read(`${dir}/${p}`)),
  };
}

/** Renames the finished `partial` folder to `name`; an earlier `name` moves to `old` first and comes back if the rename fails. */
export async function swapIn(store: CheckpointStore, partial: string, name: string, old: string): Promise<void> {
  const replacing = (await store.stat(name)) !== null;
  if (replacing) await store.rename(name, old);
  try {
    await store.rename(partial, name);
  } catch (e) {
    if (replacing) await store.rename(old, name);
    throw e;
  }
}

export const modelsStore = (): CheckpointStore => opfsStore('models');

/** The folder name of a picked directory (first path part of webkitRelativePath), made safe for OPFS. */
export function folderName(files: readonly PickedFile[]): string {
  const rel = files[0]?.webkitRelativePath || '';
  const raw = rel.includes('/') ? rel.split('/')[0] : 'local-model';
  return raw.replace(/[^\w.-]+/g, '_').replace(/^\.+/, '') || 'local-model';
}

/** A file the user picked: its bytes, size and path inside the picked folder (webkitRelativePath). */
export type PickedFile = Pick<File, 'name' | 'size' | 'arrayBuffer'> & { webkitRelativePath?: string };

/** Folders of the models store that are not models: a copy in flight or left by a crash, the one it replaces. */
export const isHiddenFolder = (name: string): boolean => name.startsWith('.');

/** The error for a write that failed: the catalogue's STORAGE_FULL when the quota or disk is full. */
export function storageFailure(e: unknown, what: string): unknown {
  return isStorageFull(e)
    ? new WorkerFail(
        'STORAGE_FULL',
        `${what}: the browser's storage for this site is full (${messageWithoutHint(errorMessage(e))}); nothing was kept`,
      )
    : e;
}

/** Copies a picked folder into OPFS models/<name>/ (only what a model needs); returns its config.model.path. */
export async function importFolderToOpfs(files: readonly PickedFile[]): Promise<string> {
  const est = await navigator.storage?.estimate?.().catch(() => null);
  return importFolder(modelsStore(), files, est?.quota && est.usage !== undefined ? est.quota - est.usage : null);
}

/**
 * Copies a picked folder into `store` at <name>/ through .partial-<name>/ (renamed into place at the end;
 * on any failure the partial folder is removed and an earlier <name>/ stays). `free`: bytes the quota
 * still allows (null: unknown).
 */
export async function importFolder(store: CheckpointStore, files: readonly PickedFile[], free: number | null): Promise<string> {
  if (!files.length) throw new WorkerFail('MODEL_FOLDER', 'the picked folder is empty');
  const name = folderName(files);
  const keep = (p: string) => /\.(json|safetensors|jinja|txt|model)$/.test(p);
  const picked = files
    .map((f) => ({ f, path: (f.webkitRelativePath || f.name).split('/').slice(1).join('/') || f.name }))
    .filter((x) => keep(x.path) && !x.path.split('/').some((s) => s.startsWith('.')));
  if (!picked.some((x) => x.path === 'config.json')) {
    throw new WorkerFail(
      'MODEL_FOLDER',
      `the folder "${name}" has no config.json at its top (${files.length} files picked): this is not a Hugging Face model folder`,
    );
  }
  const bytes = picked.reduce((s, x) => s + x.f.size, 0);
  if (bytes > MAX_MODEL_BYTES) {
    throw new WorkerFail(
      'MODEL_TOO_LARGE',
      `"${name}" is ${(bytes / 2 ** 30).toFixed(2)} GiB; the lab holds the model in the browser's memory and takes at most ${(MAX_MODEL_BYTES / 2 ** 30).toFixed(1)} GiB`,
    );
  }
  if (free !== null && free < bytes) {
    throw new WorkerFail(
      'STORAGE_FULL',
      `"${name}" needs ${(bytes / 2 ** 20).toFixed(0)} MiB but the browser grants this site ${(free / 2 ** 20).toFixed(0)} MiB more`,
    );
  }
  const partial = `.partial-${name}`;
  const old = `.old-${name}`;
  try {
    await store.remove(partial);
    await store.remove(old);
    for (const x of picked) await store.write(`${partial}/${x.path}`, new Uint8Array(await x.f.arrayBuffer()));
    await swapIn(store, partial, name, old);
  } catch (e) {
    await store.remove(partial).catch(() => {});
    throw storageFailure(e, `copying the model "${name}" into the browser's storage`);
  }
  await store.remove(old).catch(() => {}); // the model is in place; a leftover shows in the Storage panel
  return `${OPFS_MODEL_PREFIX}${name}`;
}

/** The ModelFiles config.model.path names. */
export async function modelFilesFor(path: string, base: string, builtins: BuiltinModels): Promise<ModelFiles> {
  if (path === BUILTIN_MODEL) return builtins.get(base);
  const builtin = builtinModelName(path);
  if (builtin) return builtins.get(base, builtin);
  if (path.startsWith(OPFS_MODEL_PREFIX)) {
    const name = path.slice(OPFS_MODEL_PREFIX.length);
    const store = modelsStore();
    if ((await store.stat(name)) !== 'directory') {
      throw new WorkerFail('MODEL_FOLDER', `the local model "${name}" is no longer in this browser's storage`);
    }
    return storeModelFiles(store, name, name);
  }
  throw new WorkerFail(
    'MODEL_FOLDER',
    `model.path "${path}" is neither the built-in model nor a local folder of this browser; pick the model folder again`,
  );
}

/** Bytes of a folder's weight files. */
export async function weightBytes(files: ModelFiles): Promise<number> {
  let n = 0;
  for (const p of files.list()) if (p.endsWith('.safetensors')) n += (await files.read(p)).length;
  return n;
}
