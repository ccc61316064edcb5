// Where checkpoints live: a small file-store interface with three backends — a directory in Node
// (./node.ts, kept apart so browser bundles never pull node:fs), the browser's origin-private file system
// (./opfs.ts) and memory (here; tests and zip imports). Paths are relative, "/"-separated, and checked.
//
// Semantics the checkpoint writer relies on:
//   write(path, bytes)  replaces one file atomically: a reader sees the old bytes or the new, never a mix
//                       (Node: temp file + fsync + rename; OPFS: createWritable's swap file; memory: a Map set).
//   rename(from, to)    moves a file or a whole folder; `to` must not exist. Node and memory do it in one
//                       atomic step; OPFS uses move() where the browser has it, else copy-then-remove — so
//                       the checkpoint's commit point is the `latest` pointer, written with write() last.
//   remove(path)        deletes a file or a folder recursively; absent paths are not an error.
//   list(dir)           the direct children of a folder; [] when the folder does not exist.

import { ckptFail } from './errors.ts';

export interface StoreEntry {
  name: string;
  kind: 'file' | 'directory';
}

export interface CheckpointStore {
  /** For messages: "memory", the Node directory, "opfs:<base>". */
  readonly name: string;
  list(dir: string): Promise<StoreEntry[]>;
  /** The file's bytes; a CheckpointError FILE_MISSING when there is no such file. */
  read(path: string): Promise<Uint8Array>;
  /** What is at `path`, or null. */
  stat(path: string): Promise<'file' | 'directory' | null>;
  write(path: string, data: Uint8Array | string): Promise<void>;
  /** A file's size in bytes without reading it (0 when absent); folderBytes reads the file where a store lacks it. */
  size?(path: string): Promise<number>;
  rename(from: string, to: string): Promise<void>;
  remove(path: string): Promise<void>;
}

/** Splits and checks a store path: no "..", ".", empty parts, backslashes or drive letters. '' is the root. */
export function pathParts(path: string): string[] {
  if (typeof path !== 'string') ckptFail('PATH_INVALID', String(path), 'not a string');
  const trimmed = path.replace(/^\/+|\/+$/g, '');
  if (trimmed === '') return [];
  if (path.startsWith('/')) ckptFail('PATH_INVALID', path, 'absolute paths are not allowed');
  if (path.includes('\\')) ckptFail('PATH_INVALID', path, 'backslashes are not allowed');
  if (/^[A-Za-z]:/.test(path)) ckptFail('PATH_INVALID', path, 'drive letters are not allowed');
  if (path.includes('\0')) ckptFail('PATH_INVALID', path, 'NUL characters are not allowed');
  const parts = trimmed.split('/');
  for (const p of parts) {
    if (p === '' || p === '.' || p === '..') ckptFail('PATH_INVALID', path, `the part ${JSON.stringify(p)} is not allowed`);
  }
  return parts;
}

export const normalizePath = (path: string): string => pathParts(path).join('/');

/** Joins store paths ('' parts are skipped). */
export const joinPath = (...parts: string[]): string => parts.filter((p) => p !== '').join('/');

export const toBytes = (data: Uint8Array | string): Uint8Array => (typeof data === 'string' ? new TextEncoder().encode(data) : data);

/** Every file under `dir`, as paths relative to it, sorted. */
export async function listFiles(store: CheckpointStore, dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (rel: string): Promise<void> => {
    for (const e of await store.list(joinPath(dir, rel))) {
      const p = joinPath(rel, e.name);
      if (e.kind === 'directory') await walk(p);
      else out.push(p);
    }
  };
  await walk('');
  return out.sort();
}

/** Bytes of every file under `dir` (the storage panel's per-run and per-model sizes). */
export async function folderBytes(store: CheckpointStore, dir: string): Promise<number> {
  let n = 0;
  for (const p of await listFiles(store, dir)) {
    const path = joinPath(dir, p);
    n += store.size ? await store.size(path) : (await store.read(path)).length;
  }
  return n;
}

/** Reads every file under `dir` into a record of relative path -> bytes. */
export async function readFolder(store: CheckpointStore, dir: string): Promise<Record<string, Uint8Array>> {
  const files: Record<string, Uint8Array> = {};
  for (const p of await listFiles(store, dir)) files[p] = await store.read(joinPath(dir, p));
  return files;
}

// ---- memory -----------------------------------------------------------------------------------------

export interface MemoryStore extends CheckpointStore {
  /** The files by normalised path (exposed for tests: flip a byte, truncate, inspect). */
  readonly files: Map<string, Uint8Array>;
  /** A copy of the files under `dir` (default all), relative to it. */
  snapshot(dir?: string): Record<string, Uint8Array>;
}

/** An in-memory store, optionally holding `initial` files (e.g. from importCheckpointZip). */
export function memoryStore(initial: Record<string, Uint8Array | string> = {}): MemoryStore {
  const files = new Map<string, Uint8Array>();
  const dirs = new Set<string>(); // explicit folders (made by rename of an empty folder, or implied by files)
  const under = (dir: string, p: string): boolean => dir === '' || p.startsWith(`${dir}/`);
  const hasDir = (dir: string): boolean => dir === '' || dirs.has(dir) || [...files.keys()].some((p) => under(dir, p));
  const addParents = (p: string): void => {
    const parts = p.split('/');
    for (let i = 1; i < parts.length; i++) dirs.add(parts.slice(0, i).join('/'));
  };
  const put = (p: string, bytes: Uint8Array): void => {
    if (hasDir(p)) ckptFail('STORAGE', p, 'is a folder, cannot write a file there');
    const parts = p.split('/');
    for (let i = 1; i < parts.length; i++) {
      const parent = parts.slice(0, i).join('/');
      if (files.has(parent)) ckptFail('STORAGE', p, `"${parent}" is a file, not a folder`);
    }
    files.set(p, bytes.slice());
    addParents(p);
  };
  for (const [p, d] of Object.entries(initial)) put(normalizePath(p), toBytes(d));

  const store: MemoryStore = {
    name: 'memory',
    files,
    async list(dir) {
      const d = normalizePath(dir);
      const out = new Map<string, StoreEntry['kind']>();
      const prefix = d === '' ? '' : `${d}/`;
      for (const p of files.keys()) {
        if (!p.startsWith(prefix)) continue;
        const rest = p.slice(prefix.length).split('/');
        out.set(rest[0], rest.length > 1 ? 'directory' : 'file');
      }
      for (const p of dirs) {
        if (!p.startsWith(prefix)) continue;
        const rest = p.slice(prefix.length).split('/');
        if (!out.has(rest[0])) out.set(rest[0], 'directory');
      }
      return [...out].sort(([a], [b]) => (a < b ? -1 : 1)).map(([name, kind]) => ({ name, kind }));
    },
    async read(path) {
      const p = normalizePath(path);
      const b = files.get(p);
      if (!b) ckptFail('FILE_MISSING', p, 'no such file');
      return b.slice();
    },
    async size(path) {
      return files.get(normalizePath(path))?.length ?? 0;
    },
    async stat(path) {
      const p = normalizePath(path);
      if (files.has(p)) return 'file';
      return hasDir(p) ? 'directory' : null;
    },
    async write(path, data) {
      const p = normalizePath(path);
      if (p === '') ckptFail('PATH_INVALID', path, 'cannot write the root');
      put(p, toBytes(data));
    },
    async rename(from, to) {
      const f = normalizePath(from);
      const t = normalizePath(to);
      if (f === '' || t === '') ckptFail('PATH_INVALID', `${from} -> ${to}`, 'cannot rename the root');
      if ((await store.stat(t)) !== null) ckptFail('STORAGE', t, `cannot rename ${f} here: it already exists`);
      if (under(f, t)) ckptFail('STORAGE', t, `cannot move ${f} into itself`);
      const kind = await store.stat(f);
      if (kind === null) ckptFail('FILE_MISSING', f, 'nothing to rename');
      if (kind === 'file') {
        const b = files.get(f)!;
        files.delete(f);
        files.set(t, b);
        addParents(t);
        return;
      }
      for (const p of [...files.keys()]) {
        if (!under(f, p)) continue;
        const b = files.get(p)!;
        files.delete(p);
        const np = t + p.slice(f.length);
        files.set(np, b);
        addParents(np);
      }
      for (const p of [...dirs])
        if (p === f || under(f, p)) {
          dirs.delete(p);
          dirs.add(t + p.slice(f.length));
        }
      addParents(t);
      dirs.add(t);
    },
    async remove(path) {
      const p = normalizePath(path);
      if (p === '') {
        files.clear();
        dirs.clear();
        return;
      }
      files.delete(p);
      for (const k of [...files.keys()]) if (under(p, k)) files.delete(k);
      for (const k of [...dirs]) if (k === p || under(p, k)) dirs.delete(k);
    },
    snapshot(dir = '') {
      const d = normalizePath(dir);
      const out: Record<string, Uint8Array> = {};
      for (const [p, b] of [...files].sort(([a], [b2]) => (a < b2 ? -1 : 1))) {
        if (d === '') out[p] = b.slice();
        else if (under(d, p)) out[p.slice(d.length + 1)] = b.slice();
      }
      return out;
    },
  };
  return store;
}
