// checkpointSource: every command that takes a checkpoint path (train --resume, eval, export) reads a
// checkpoint folder and a checkpoint zip alike (fixtures/resume-v1/token.zip, a lab download); runModelDir:
// the folder a run config's model.path names.
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { importCheckpointZip, readCheckpointFiles } from '../marft/checkpoint/checkpoint.ts';
import { checkpointSource, runModelDir } from './platform.ts';
import { builtinModelName, parseRunConfig } from '../config/run-config.ts';

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

describe('runModelDir', () => {
  it("finds a built-in model by '' or builtin:<name>, and any other path as a folder", () => {
    const dir = (path: string) => runModelDir(parseRunConfig({ model: { path } }));
    expect(dir('')).toMatch(/public\/models\/marft-tiny$/);
    expect(dir('builtin:marft-tiny')).toBe(dir(''));
    expect(dir('some/folder')).toBe(resolve('some/folder'));
    expect(() => dir('builtin:no-such-model')).toThrow(
      /the built-in model "no-such-model" is not in public\/models\/.*marft pretrain --out public\/models\/no-such-model/,
    );
    expect(builtinModelName('builtin:../x')).toBeNull();
    expect(builtinModelName('builtin:marft-tiny-plan')).toBe('marft-tiny-plan');
  });
});
