// Export files written whole or not at all: the bytes go to a hidden temporary file beside the target, which
// is renamed over it (one rename(2), atomic on POSIX file systems), so a `marft export` killed or failing
// mid-write leaves the previous file (or none), never a truncated one that peft or onnxruntime would reject
// later. A failure removes the temporary file.

import { closeSync, mkdirSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

export function writeFileAtomic(path: string, data: string | Uint8Array | Iterable<Uint8Array>): void {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = join(dirname(path), `.${basename(path)}.partial-${process.pid}`);
  try {
    const fd = openSync(tmp, 'w');
    try {
      for (const chunk of typeof data === 'string' ? [new TextEncoder().encode(data)] : data instanceof Uint8Array ? [data] : data) {
        for (let at = 0; at < chunk.byteLength;) at += writeSync(fd, chunk, at);
      }
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, path);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
}
