// The checkpoint store over a directory on disk (Node only: node:fs/promises; kept out of the browser
// bundle). Files are written to a hidden temp file beside the target, fsynced, and renamed over it, so a
// crash leaves the old file or the new one; folder renames are one rename(2), atomic on POSIX file systems.

import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, readdir, rename, rm, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { errorMessage } from '../../common/errors.ts';
import { ckptFail } from './errors.ts';
import { type CheckpointStore, type StoreEntry, pathParts, toBytes } from './store.ts';

const code = (e: unknown): string | undefined => (e as NodeJS.ErrnoException)?.code;

/** fsync a folder so a rename inside it survives a power cut (best effort: not every platform allows it). */
async function syncDir(dir: string): Promise<void> {
  try {
    const fh = await open(dir, 'r');
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
  } catch {
    /* Windows and some file systems refuse to open or sync folders */
  }
}

/** A store rooted at `root` (created on the first write). */
export function nodeStore(root: string): CheckpointStore {
  const base = resolve(root);
  // temporary names unique to this store's writes: two stores (or processes) on one folder never share one
  const tag = randomBytes(4).toString('hex');
  let written = 0;
  const abs = (path: string): string => join(base, ...pathParts(path));
  const kindOf = async (p: string): Promise<'file' | 'directory' | null> => {
    try {
      const s = await stat(p);
      return s.isDirectory() ? 'directory' : 'file';
    } catch (e) {
      if (code(e) === 'ENOENT' || code(e) === 'ENOTDIR') return null;
      return ckptFail('STORAGE', p, `cannot stat (${errorMessage(e)})`);
    }
  };
  return {
    name: base,
    async list(dir) {
      let entries;
      try {
        entries = await readdir(abs(dir), { withFileTypes: true });
      } catch (e) {
        if (code(e) === 'ENOENT' || code(e) === 'ENOTDIR') return [];
        return ckptFail('STORAGE', abs(dir), `cannot list the folder (${errorMessage(e)})`);
      }
      const out: StoreEntry[] = [];
      for (const e of entries) {
        if (e.name.startsWith('.partial-')) continue; // a write in flight (or one a crash left)
        if (e.isDirectory()) out.push({ name: e.name, kind: 'directory' });
        else if (e.isFile() || e.isSymbolicLink()) out.push({ name: e.name, kind: 'file' });
      }
      return out.sort((a, b) => (a.name < b.name ? -1 : 1));
    },
    async read(path) {
      const p = abs(path);
      try {
        const b = await readFile(p);
        return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
      } catch (e) {
        if (code(e) === 'ENOENT' || code(e) === 'ENOTDIR') return ckptFail('FILE_MISSING', p, 'no such file');
        return ckptFail('STORAGE', p, `cannot read (${errorMessage(e)})`);
      }
    },
    stat: (path) => kindOf(abs(path)),
    async size(path) {
      try {
        const s = await stat(abs(path));
        return s.isFile() ? s.size : 0;
      } catch {
        return 0;
      }
    },
    async write(path, data) {
      const p = abs(path);
      if (p === base) ckptFail('PATH_INVALID', path, 'cannot write the root');
      const tmp = join(dirname(p), `.partial-${process.pid}-${tag}-${++written}-${p.split(/[\\/]/).pop()}`);
      try {
        await mkdir(dirname(p), { recursive: true });
        const fh = await open(tmp, 'w');
        try {
          await fh.writeFile(toBytes(data));
          await fh.sync();
        } finally {
          await fh.close();
        }
        await rename(tmp, p);
      } catch (e) {
        await rm(tmp, { force: true }).catch(() => {});
        return ckptFail('STORAGE', p, `cannot write (${errorMessage(e)})`);
      }
      await syncDir(dirname(p));
    },
    async rename(from, to) {
      const f = abs(from);
      const t = abs(to);
      if ((await kindOf(t)) !== null) ckptFail('STORAGE', t, `cannot rename ${f} here: it already exists`);
      if ((await kindOf(f)) === null) ckptFail('FILE_MISSING', f, 'nothing to rename');
      try {
        await mkdir(dirname(t), { recursive: true });
        await rename(f, t);
      } catch (e) {
        return ckptFail('STORAGE', t, `cannot rename ${f} (${errorMessage(e)})`);
      }
      await syncDir(dirname(t));
    },
    async remove(path) {
      const p = abs(path);
      if (p === base) ckptFail('PATH_INVALID', path, "will not remove the store's root folder");
      try {
        await rm(p, { recursive: true, force: true });
      } catch (e) {
        ckptFail('STORAGE', p, `cannot remove (${errorMessage(e)})`);
      }
    },
  };
}
