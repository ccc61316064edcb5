// ModelFiles over a directory on disk (Node only: node:fs/promises). The listing is taken once, recursively
// (hidden entries such as .git and .cache skipped); reads are limited to listed files.

import { readdir, readFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { fail } from './errors.ts';
import { normalizePath, type ModelFiles } from './folder.ts';

export async function nodeModelFiles(dir: string, maxDepth = 4): Promise<ModelFiles> {
  const paths: string[] = [];
  const walk = async (rel: string, depth: number): Promise<void> => {
    let entries;
    try {
      entries = await readdir(join(dir, rel), { withFileTypes: true });
    } catch (e) {
      return fail('FILE_READ', join(dir, rel), `cannot list the folder (${(e as Error).message})`);
    }
    for (const e of entries) {
      if (e.name.startsWith('.')) continue;
      const p = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) {
        if (depth < maxDepth) await walk(p, depth + 1);
      } else if (e.isFile() || e.isSymbolicLink()) paths.push(p); // HF cache snapshots are symlinks
    }
  };
  await walk('', 0);
  const listed = new Set(paths);
  const name = basename(dir);
  const read = async (path: string): Promise<Uint8Array> => {
    const p = normalizePath(path);
    if (!listed.has(p)) fail('FILE_MISSING', join(dir, p), 'no such file in the folder');
    try {
      const b = await readFile(join(dir, p));
      return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
    } catch (e) {
      return fail('FILE_READ', join(dir, p), `cannot read (${(e as Error).message})`);
    }
  };
  return {
    name,
    list: () => [...paths],
    read,
    readText: async (path) => new TextDecoder().decode(await read(path)),
  };
}
