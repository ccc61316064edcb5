// Test helpers for storage faults (no production file imports this): a store that fails its k-th write
// or rename as a full disk or a full browser quota does, shared by the checkpoint, run-loop and worker
// storage tests.

import type { CheckpointStore } from './store.ts';

/** A store that fails the writes (or renames) for which `fail(op, n)` gives an error, n counting from 1. */
export function faultyStore(
  inner: CheckpointStore,
  fail: (op: 'write' | 'rename', n: number) => Error | null,
): CheckpointStore & { writes: number; renames: number } {
  const s = {
    ...inner,
    name: `faulty(${inner.name})`,
    writes: 0,
    renames: 0,
    async write(path: string, data: Uint8Array | string) {
      const e = fail('write', ++s.writes);
      if (e) throw e;
      return inner.write(path, data);
    },
    async rename(from: string, to: string) {
      const e = fail('rename', ++s.renames);
      if (e) throw e;
      return inner.rename(from, to);
    },
  };
  return s;
}

/** Node's error for a full disk. */
export const enospc = (): Error => Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
/** The browser's error for a full origin quota. */
export const quota = (): Error => Object.assign(new Error('The quota has been exceeded.'), { name: 'QuotaExceededError' });
