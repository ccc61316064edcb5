// The checkpoint store over the browser's origin-private file system (navigator.storage.getDirectory()).
// Kept thin: it cannot run in Node, the browser e2e exercises it.
//   write   createWritable() writes into a swap file that replaces the target on close(), so a crash keeps
//           the old file (in a worker without createWritable — older Safari — a sync access handle
//           truncates and writes in place, which is not atomic; the checksums in state.json catch it).
//   rename  FileSystemHandle.move(parent, name) where the browser has it (Chrome 110+ in OPFS), else a
//           recursive copy then remove; either way the checkpoint's commit is the `latest` pointer.

import { errorMessage } from '../../common/errors.ts';
import { ckptFail } from './errors.ts';
import { type CheckpointStore, type StoreEntry, pathParts, toBytes } from './store.ts';

// Members the TypeScript DOM lib lacks (or keeps in lib.dom.asynciterable / lib.webworker).
interface DirWithEntries {
  entries(): AsyncIterableIterator<[string, FileSystemHandle]>;
}
interface Movable {
  move?(parent: FileSystemDirectoryHandle, name: string): Promise<void>;
}
interface SyncHandle {
  truncate(n: number): void;
  write(b: Uint8Array, o: { at: number }): number;
  flush(): void;
  close(): void;
}
interface FileWithSync {
  createSyncAccessHandle?(): Promise<SyncHandle>;
}

const isNotFound = (e: unknown): boolean =>
  (e as DOMException)?.name === 'NotFoundError' || (e as DOMException)?.name === 'TypeMismatchError';

/**
 * A store under the OPFS root, or under `base` (a "/"-separated folder inside it, created on demand), or
 * under a directory handle the caller already holds.
 */
export function opfsStore(base: string | FileSystemDirectoryHandle = ''): CheckpointStore {
  let rootP: Promise<FileSystemDirectoryHandle> | null = null;
  const root = (): Promise<FileSystemDirectoryHandle> => {
    rootP ??= (async () => {
      if (typeof base !== 'string') return base;
      if (typeof navigator === 'undefined' || !navigator.storage?.getDirectory) {
        return ckptFail('STORAGE', 'opfs', 'this environment has no origin-private file system (navigator.storage.getDirectory)');
      }
      let d = await navigator.storage.getDirectory();
      for (const p of pathParts(base)) d = await d.getDirectoryHandle(p, { create: true });
      return d;
    })();
    return rootP;
  };
  const name = `opfs:${typeof base === 'string' ? base : base.name}`;

  /** The folder at `parts`, or null when absent (create: made on the way). */
  const dirAt = async (parts: string[], create: boolean): Promise<FileSystemDirectoryHandle | null> => {
    let d = await root();
    for (const p of parts) {
      try {
        d = await d.getDirectoryHandle(p, { create });
      } catch (e) {
        if (isNotFound(e)) return null;
        return ckptFail('STORAGE', parts.join('/'), `cannot open the folder (${errorMessage(e)})`);
      }
    }
    return d;
  };
  const split = (path: string): { parent: string[]; leaf: string } => {
    const parts = pathParts(path);
    if (parts.length === 0) ckptFail('PATH_INVALID', path, 'the root has no name');
    return { parent: parts.slice(0, -1), leaf: parts[parts.length - 1] };
  };
  const handleAt = async (path: string): Promise<FileSystemHandle | null> => {
    const { parent, leaf } = split(path);
    const d = await dirAt(parent, false);
    if (!d) return null;
    for (const get of [() => d.getFileHandle(leaf), () => d.getDirectoryHandle(leaf)]) {
      try {
        return await get();
      } catch (e) {
        if (!isNotFound(e)) throw e;
      }
    }
    return null;
  };
  const writeFile = async (dir: FileSystemDirectoryHandle, leaf: string, bytes: Uint8Array): Promise<void> => {
    const fh = await dir.getFileHandle(leaf, { create: true });
    if (typeof fh.createWritable === 'function') {
      const w = await fh.createWritable({ keepExistingData: false });
      try {
        await w.write(bytes as Uint8Array<ArrayBuffer>);
        await w.close();
      } catch (e) {
        await w.abort().catch(() => {});
        throw e;
      }
      return;
    }
    const sync = (fh as unknown as FileWithSync).createSyncAccessHandle;
    if (!sync) ckptFail('STORAGE', leaf, 'this browser can write OPFS files neither with createWritable nor with a sync access handle');
    const h = await sync.call(fh);
    try {
      h.truncate(0);
      h.write(bytes, { at: 0 });
      h.flush();
    } finally {
      h.close();
    }
  };
  const copyInto = async (src: FileSystemHandle, dir: FileSystemDirectoryHandle, leaf: string): Promise<void> => {
    if (src.kind === 'file') {
      const f = await (src as FileSystemFileHandle).getFile();
      await writeFile(dir, leaf, new Uint8Array(await f.arrayBuffer()));
      return;
    }
    const sub = await dir.getDirectoryHandle(leaf, { create: true });
    for await (const [n, h] of (src as unknown as DirWithEntries).entries()) await copyInto(h, sub, n);
  };

  const remove = async (path: string): Promise<void> => {
    const { parent, leaf } = split(path);
    const d = await dirAt(parent, false);
    if (!d) return;
    try {
      await d.removeEntry(leaf, { recursive: true });
    } catch (e) {
      if (!isNotFound(e)) ckptFail('STORAGE', path, `cannot remove (${errorMessage(e)})`);
    }
  };

  return {
    name,
    async list(dir) {
      const d = await dirAt(pathParts(dir), false);
      if (!d) return [];
      const out: StoreEntry[] = [];
      for await (const [n, h] of (d as unknown as DirWithEntries).entries()) {
        if (n.endsWith('.crswap')) continue; // Chrome's swap file of a write in flight
        out.push({ name: n, kind: h.kind === 'directory' ? 'directory' : 'file' });
      }
      return out.sort((a, b) => (a.name < b.name ? -1 : 1));
    },
    async read(path) {
      const { parent, leaf } = split(path);
      const d = await dirAt(parent, false);
      if (!d) return ckptFail('FILE_MISSING', path, 'no such file');
      try {
        const f = await (await d.getFileHandle(leaf)).getFile();
        return new Uint8Array(await f.arrayBuffer());
      } catch (e) {
        if (isNotFound(e)) return ckptFail('FILE_MISSING', path, 'no such file');
        return ckptFail('STORAGE', path, `cannot read (${errorMessage(e)})`);
      }
    },
    async stat(path) {
      if (pathParts(path).length === 0) return 'directory';
      const h = await handleAt(path);
      return h ? (h.kind === 'directory' ? 'directory' : 'file') : null;
    },
    async size(path) {
      const h = await handleAt(path);
      return h?.kind === 'file' ? (await (h as FileSystemFileHandle).getFile()).size : 0;
    },
    async write(path, data) {
      const { parent, leaf } = split(path);
      try {
        await writeFile((await dirAt(parent, true))!, leaf, toBytes(data));
      } catch (e) {
        if ((e as Error).name === 'CheckpointError') throw e;
        ckptFail(
          'STORAGE',
          path,
          `cannot write (${(e as Error)?.name === 'QuotaExceededError' ? 'QuotaExceededError: ' : ''}${errorMessage(e)})`,
        );
      }
    },
    async rename(from, to) {
      const src = await handleAt(from);
      if (!src) return ckptFail('FILE_MISSING', from, 'nothing to rename');
      if (await handleAt(to)) ckptFail('STORAGE', to, `cannot rename ${from} here: it already exists`);
      const { parent, leaf } = split(to);
      const dst = (await dirAt(parent, true))!;
      const move = (src as unknown as Movable).move;
      if (typeof move === 'function') {
        try {
          await move.call(src, dst, leaf);
          return;
        } catch {
          /* no move() for this kind of handle here: copy instead */
        }
      }
      try {
        await copyInto(src, dst, leaf);
      } catch (e) {
        await dst.removeEntry(leaf, { recursive: true }).catch(() => {});
        ckptFail('STORAGE', to, `cannot copy ${from} here (${errorMessage(e)})`);
      }
      await remove(from);
    },
    remove,
  };
}
