// The store contract, run on every backend that works in Node (memory, a directory); OPFS shares the
// contract and is exercised by the browser e2e.
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CheckpointError, isStorageFull } from './errors.ts';
import { nodeStore } from './node.ts';
import { opfsStore } from './opfs.ts';
import { type CheckpointStore, folderBytes, listFiles, memoryStore, pathParts, readFolder } from './store.ts';
import { enospc, quota } from './testing.ts';

const text = (b: Uint8Array): string => new TextDecoder().decode(b);

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(CheckpointError);
    return (e as CheckpointError).code;
  }
  return 'no error';
}

// A small in-memory imitation of the File System Access API's handles (the parts opfs.ts uses), so the
// OPFS store's path and rename logic runs here too; `move` toggles FileSystemHandle.move().
function fakeOpfs(withMove: boolean, quotaLeft: number | null = null): FileSystemDirectoryHandle {
  const notFound = (n: string) => new DOMException(`${n} not found`, 'NotFoundError');
  const mismatch = (n: string) => new DOMException(`${n} is of the other kind`, 'TypeMismatchError');
  type Node = FakeFile | FakeDir;
  class FakeFile {
    readonly kind = 'file';
    data = new Uint8Array(0);
    constructor(
      public name: string,
      public parent: FakeDir,
    ) {}
    async getFile() {
      const d = this.data.slice();
      return { size: d.length, arrayBuffer: async () => d.buffer };
    }
    async createWritable() {
      const chunks: Uint8Array[] = [];
      return {
        write: async (b: Uint8Array) => {
          if (quotaLeft !== null && (quotaLeft -= b.length) < 0)
            throw new DOMException('The quota has been exceeded.', 'QuotaExceededError');
          chunks.push(b.slice());
        },
        close: async () => {
          this.data = new Uint8Array(Buffer.concat(chunks));
        },
        abort: async () => {},
      };
    }
    async move(dir: FakeDir, name: string) {
      move(this, dir, name);
    }
  }
  class FakeDir {
    readonly kind = 'directory';
    children = new Map<string, Node>();
    constructor(
      public name: string,
      public parent: FakeDir | null,
    ) {}
    async getDirectoryHandle(n: string, o?: { create?: boolean }) {
      const c = this.children.get(n);
      if (c) {
        if (c.kind !== 'directory') throw mismatch(n);
        return c;
      }
      if (!o?.create) throw notFound(n);
      const d = new FakeDir(n, this);
      this.children.set(n, d);
      return d;
    }
    async getFileHandle(n: string, o?: { create?: boolean }) {
      const c = this.children.get(n);
      if (c) {
        if (c.kind !== 'file') throw mismatch(n);
        return c;
      }
      if (!o?.create) throw notFound(n);
      const f = new FakeFile(n, this);
      this.children.set(n, f);
      return f;
    }
    async removeEntry(n: string, o?: { recursive?: boolean }) {
      const c = this.children.get(n);
      if (!c) throw notFound(n);
      if (c.kind === 'directory' && c.children.size && !o?.recursive) throw new DOMException('not empty', 'InvalidModificationError');
      this.children.delete(n);
    }
    async *entries(): AsyncIterableIterator<[string, Node]> {
      for (const e of [...this.children]) yield e;
    }
    async move(dir: FakeDir, name: string) {
      move(this, dir, name);
    }
  }
  function move(h: Node, dir: FakeDir, name: string) {
    h.parent!.children.delete(h.name);
    h.name = name;
    h.parent = dir;
    dir.children.set(name, h);
  }
  if (!withMove) {
    delete (FakeFile.prototype as { move?: unknown }).move;
    delete (FakeDir.prototype as { move?: unknown }).move;
  }
  return new FakeDir('root', null) as unknown as FileSystemDirectoryHandle;
}

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

const backends: Array<[string, () => Promise<CheckpointStore>]> = [
  ['memory', async () => memoryStore()],
  [
    'node',
    async () => {
      const d = await mkdtemp(join(tmpdir(), 'marft-store-'));
      dirs.push(d);
      return nodeStore(d);
    },
  ],
  ['opfs (imitation, with move)', async () => opfsStore(fakeOpfs(true))],
  ['opfs (imitation, copy instead of move)', async () => opfsStore(fakeOpfs(false))],
];

describe.each(backends)('%s store', (_name, make) => {
  it('sizes files without reading them, and whole folders (folderBytes)', async () => {
    const s = await make();
    await s.write('run/a/x.txt', 'hello');
    await s.write('run/b.bin', new Uint8Array(1000));
    expect(await s.size!('run/a/x.txt')).toBe(5);
    expect(await s.size!('run/missing')).toBe(0);
    expect(await s.size!('run/a')).toBe(0);
    expect(await folderBytes(s, 'run')).toBe(1005);
    expect(await folderBytes(s, 'run/a')).toBe(5);
    expect(await folderBytes(s, 'nope')).toBe(0);
  });

  it('writes, reads, lists and stats files and folders', async () => {
    const s = await make();
    await s.write('run/a/x.txt', 'hello');
    await s.write('run/a/b/y.bin', new Uint8Array([1, 2, 3]));
    await s.write('run/z', 'top');
    expect(text(await s.read('run/a/x.txt'))).toBe('hello');
    expect([...(await s.read('run/a/b/y.bin'))]).toEqual([1, 2, 3]);
    expect(await s.list('run')).toEqual([
      { name: 'a', kind: 'directory' },
      { name: 'z', kind: 'file' },
    ]);
    expect(await s.list('nope')).toEqual([]);
    expect(await s.stat('run/a')).toBe('directory');
    expect(await s.stat('run/a/x.txt')).toBe('file');
    expect(await s.stat('run/q')).toBe(null);
    expect(await listFiles(s, 'run')).toEqual(['a/b/y.bin', 'a/x.txt', 'z']);
    expect(Object.keys(await readFolder(s, 'run/a'))).toEqual(['b/y.bin', 'x.txt']);
    expect(await codeOf(s.read('run/missing'))).toBe('FILE_MISSING');
  });

  it('replaces a file on write', async () => {
    const s = await make();
    await s.write('f', 'one');
    await s.write('f', 'two!');
    expect(text(await s.read('f'))).toBe('two!');
    expect(await s.list('')).toEqual([{ name: 'f', kind: 'file' }]); // no temp files left behind
  });

  it('renames files and whole folders, never over an existing path', async () => {
    const s = await make();
    await s.write('t/.tmp-1/a.txt', 'A');
    await s.write('t/.tmp-1/sub/b.txt', 'B');
    await s.rename('t/.tmp-1', 't/ckpt-1');
    expect(await s.stat('t/.tmp-1')).toBe(null);
    expect(await listFiles(s, 't/ckpt-1')).toEqual(['a.txt', 'sub/b.txt']);
    expect(text(await s.read('t/ckpt-1/sub/b.txt'))).toBe('B');
    await s.write('t/other/c.txt', 'C');
    expect(await codeOf(s.rename('t/other', 't/ckpt-1'))).toBe('STORAGE');
    expect(await codeOf(s.rename('t/none', 't/x'))).toBe('FILE_MISSING');
    await s.rename('t/other/c.txt', 't/c2.txt');
    expect(text(await s.read('t/c2.txt'))).toBe('C');
  });

  it('removes files and folders recursively, absent paths quietly', async () => {
    const s = await make();
    await s.write('r/a/1', '1');
    await s.write('r/a/2/3', '3');
    await s.write('r/b', 'b');
    await s.remove('r/a');
    await s.remove('r/never');
    expect(await listFiles(s, 'r')).toEqual(['b']);
  });

  it('rejects unsafe paths', async () => {
    const s = await make();
    for (const p of ['../evil', 'a/../../b', 'a/./b', 'a//b', 'a\\b', 'C:/x']) {
      expect(await codeOf(s.write(p, 'x')), p).toBe('PATH_INVALID');
    }
    expect(await codeOf(s.read('/etc/passwd'))).toBe('PATH_INVALID');
  });
});

describe('paths', () => {
  it('normalises trailing slashes and keeps names', () => {
    expect(pathParts('run/ckpt-000001/')).toEqual(['run', 'ckpt-000001']);
    expect(pathParts('')).toEqual([]);
  });
});

describe('node store', () => {
  it('leaves no partial files after a write', async () => {
    const d = await mkdtemp(join(tmpdir(), 'marft-store-'));
    dirs.push(d);
    const s = nodeStore(d);
    await s.write('x/y', new Uint8Array(1000));
    expect(await readdir(join(d, 'x'))).toEqual(['y']);
  });
});

describe('a full quota', () => {
  it('is recognised raw and wrapped by a store', async () => {
    expect([quota(), enospc(), Object.assign(new Error('x'), { code: 'EDQUOT' })].map(isStorageFull)).toEqual([true, true, true]);
    expect(
      [new Error('EACCES: permission denied'), null, 'ENOSPC', new CheckpointError('STORAGE', 'f', 'cannot write (EACCES)')].map(
        isStorageFull,
      ),
    ).toEqual([false, false, false, false]);
    const s = opfsStore(fakeOpfs(true, 10));
    await s.write('a', 'small');
    let err: unknown;
    try {
      await s.write('b', 'too large for the rest');
    } catch (e) {
      err = e;
    }
    expect((err as CheckpointError).code).toBe('STORAGE');
    expect((err as Error).message).toMatch(/^b: cannot write \(QuotaExceededError: The quota has been exceeded\.\)/);
    expect(isStorageFull(err)).toBe(true);
    expect(text(await s.read('a'))).toBe('small');
  });
});
