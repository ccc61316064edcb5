// checkpointSource: every command that takes a checkpoint path (train --resume, eval, export) reads a
// checkpoint folder and a checkpoint zip alike (fixtures/resume-v1/token.zip, a lab download).
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { importCheckpointZip, readCheckpointFiles } from '../marft/checkpoint/checkpoint.ts';
import { checkpointSource } from './platform.ts';

const ZIP = new URL('../../fixtures/resume-v1/token.zip', import.meta.url).pathname;
const work = mkdtempSync(join(tmpdir(), 'marft-platform-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('checkpointSource', () => {
  it('reads a checkpoint zip and the same checkpoint as a folder', async () => {
    const fromZip = await readCheckpointFiles(checkpointSource(ZIP).store, checkpointSource(ZIP).dir);
    expect(fromZip.manifest.iteration).toBe(1);
    for (const [p, bytes] of Object.entries(importCheckpointZip(new Uint8Array(readFileSync(ZIP))))) {
      mkdirSync(dirname(join(work, 'ckpt', p)), { recursive: true });
      writeFileSync(join(work, 'ckpt', p), bytes);
    }
    const src = checkpointSource(join(work, 'ckpt'));
    expect(src.dir).toBe('ckpt');
    const fromFolder = await readCheckpointFiles(src.store, src.dir);
    expect(fromFolder.manifest).toEqual(fromZip.manifest);
    expect(Object.keys(fromFolder.files).sort()).toEqual(Object.keys(fromZip.files).sort());
    for (const f of Object.keys(fromZip.files)) expect(fromFolder.files[f], f).toEqual(fromZip.files[f]);
  });
});
