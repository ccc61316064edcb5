// The worker's writes into browser storage under faults: a model folder copied into the models store
// and a checkpoint zip imported as a run, with the store throwing QuotaExceededError / ENOSPC at the k-th
// write or rename (as src/marft/run-loop.test.ts does for checkpoints). After every failure: a
// STORAGE_FULL error that says what to do, no partial folder, and what was there before intact.
// Also the Storage panel's numbers (per folder sizes) and the deletes it offers.

import { afterAll, describe, expect, it } from 'vitest';
import { type ReliabilityRow, recordReliability } from '../../scripts/reliability.ts';
import { checkpointFolder } from '../marft/checkpoint/testing.ts';
import { CheckpointError } from '../platform/storage/errors.ts';
import { type CheckpointStore, memoryStore } from '../platform/storage/store.ts';
import { enospc, faultyStore, quota } from '../platform/storage/testing.ts';
import { zipFiles } from '../platform/zip.ts';
import { WorkerFail } from './errors.ts';
import { type PickedFile, importFolder } from './model-source.ts';
import { deleteRun, importCheckpoint, runHistory } from './run-folders.ts';
import { deleteLocalModel, storageUsage } from './storage.ts';

const TEST = 'src/worker/storage.test.ts';
const rows: ReliabilityRow[] = [];
afterAll(() => recordReliability('worker-storage', rows));

const enc = (s: string) => new TextEncoder().encode(s);
/** A picked folder "tiny/" as the browser's directory picker gives it. */
function picked(version: string): PickedFile[] {
  const files: Record<string, Uint8Array> = {
    'config.json': enc(`{"version": "${version}"}`),
    'model.safetensors': new Uint8Array(100).fill(version.length),
    'tokenizer.json': enc('{}'),
    'sub/extra.json': enc('[]'),
  };
  return Object.entries(files).map(([p, b]) => ({
    name: p.split('/').pop()!,
    size: b.length,
    webkitRelativePath: `tiny/${p}`,
    arrayBuffer: async () => b.slice().buffer,
  }));
}
const errorOf = async (p: Promise<unknown>): Promise<unknown> =>
  p.then(
    () => {
      throw new Error('expected a failure');
    },
    (e) => e,
  );
const hidden = (s: ReturnType<typeof memoryStore>) => [...s.files.keys()].filter((p) => p.startsWith('.'));

describe('model folder copied into storage', () => {
  it('lands at <name>/ through a hidden partial folder, replacing an earlier copy', async () => {
    const s = memoryStore();
    expect(await importFolder(s, picked('v1'), null)).toBe('opfs:models/tiny');
    expect(await importFolder(s, picked('v22'), 1 << 20)).toBe('opfs:models/tiny');
    expect([...s.files.keys()].sort()).toEqual([
      'tiny/config.json',
      'tiny/model.safetensors',
      'tiny/sub/extra.json',
      'tiny/tokenizer.json',
    ]);
    expect(new TextDecoder().decode(s.files.get('tiny/config.json'))).toBe('{"version": "v22"}');
  });

  it('refuses a folder larger than the quota allows before writing anything', async () => {
    const s = faultyStore(memoryStore(), () => null);
    const e = await errorOf(importFolder(s, picked('v1'), 50));
    expect(e).toBeInstanceOf(WorkerFail);
    expect((e as WorkerFail).code).toBe('STORAGE_FULL');
    expect((e as Error).message).toMatch(/"tiny" needs 0 MiB but the browser grants this site 0 MiB more/);
    expect(s.writes).toBe(0);
  });

  it('a full quota or disk at the k-th write or rename leaves no partial folder and keeps the earlier copy', async () => {
    const probe = faultyStore(memoryStore(), () => null);
    await importFolder(probe, picked('v1'), null); // first copy: 4 writes, 1 rename
    await importFolder(probe, picked('v22'), null); // replacing: 4 writes, 2 renames (old aside, partial in place)
    const writes = probe.writes - 4;
    const renames = probe.renames - 1;
    expect([writes, renames]).toEqual([4, 2]);
    let cases = 0;
    for (const [op, count] of [
      ['write', writes],
      ['rename', renames],
    ] as const) {
      for (let k = 1; k <= count; k++) {
        const inner = memoryStore();
        await importFolder(inner, picked('v1'), null);
        const before = inner.snapshot();
        const s = faultyStore(inner, (o, n) => (o === op && n === k ? (k % 2 ? quota() : enospc()) : null));
        const e = await errorOf(importFolder(s, picked('v22'), null));
        expect((e as WorkerFail).code, `${op} ${k}`).toBe('STORAGE_FULL');
        expect((e as Error).message, `${op} ${k}`).toMatch(
          /copying the model "tiny" into the browser's storage: the browser's storage for this site is full \(.*(quota|ENOSPC).*\); nothing was kept/,
        );
        expect((e as WorkerFail).hint).toMatch(/Storage panel/);
        expect(hidden(inner), `${op} ${k}`).toEqual([]);
        expect(inner.snapshot(), `${op} ${k}`).toEqual(before);
        cases++;
      }
    }
    rows.push({
      area: 'model copy into storage',
      fault: `store throwing QuotaExceededError / ENOSPC at the k-th write or rename of a model folder copy replacing an earlier one, k = 1..${writes} writes and 1..${renames} renames`,
      cases,
      outcome: `${cases} copies failed with WorkerFail STORAGE_FULL (names the cause, hint points to the Storage panel); after each no partial folder, the earlier copy byte-identical`,
      verdict: 'pass',
      test: TEST,
    });
  });
});

describe('checkpoint zip imported as a run', () => {
  const withOther = async (): Promise<ReturnType<typeof memoryStore>> =>
    memoryStore({ 'run-old/latest': 'ckpt-000001\n', 'run-old/ckpt-000001/x': 'keep' });

  it('lands entirely under a new run folder', async () => {
    const zip = zipFiles(await checkpointFolder());
    const s = await withOther();
    const r = await importCheckpoint(zip, 'hostile.zip', s);
    expect(r.checkpoints.map((c) => c.iteration)).toEqual([3]);
    expect(r.problem).toBeUndefined();
    for (const p of s.files.keys()) expect(p.startsWith(`${r.id}/`) || p.startsWith('run-old/'), p).toBe(true);
  });

  it('the demo run lands under its own id, listed as the read-only demo; a user import is not', async () => {
    const zip = zipFiles(await checkpointFolder());
    const s = await withOther();
    const demo = await importCheckpoint(zip, 'the demo run', s, { id: 'demo-duo', source: 'demo' });
    expect(demo.id).toBe('demo-duo');
    expect(demo.demo).toBe(true);
    expect(demo.checkpoints.map((c) => c.iteration)).toEqual([3]);
    const user = await importCheckpoint(zip, 'c.zip', s);
    expect(user.id).toMatch(/^import-/);
    expect(user.demo).toBeUndefined();
  });

  it("gives the imported run's metric history (a chart overlay), NaN kept; a bad id is refused", async () => {
    const s = await withOther();
    const r = await importCheckpoint(zipFiles(await checkpointFolder()), 'h.zip', s);
    const h = await runHistory(r.id, s);
    expect(h).toHaveLength(1);
    expect(h[0].iteration).toBe(0);
    expect(h[0].accuracy).toBeNaN();
    await expect(runHistory('../run-old', s)).rejects.toThrow(CheckpointError);
  });

  it('a full quota or disk at the k-th write removes the new run folder and touches no other', async () => {
    const zip = zipFiles(await checkpointFolder());
    const probe = faultyStore(await withOther(), () => null);
    await importCheckpoint(zip, 'c.zip', probe);
    const writes = probe.writes;
    expect(writes).toBeGreaterThan(5);
    for (let k = 1; k <= writes; k++) {
      const inner = await withOther();
      const before = inner.snapshot();
      const s: CheckpointStore = faultyStore(inner, (o, n) => (o === 'write' && n === k ? (k % 2 ? quota() : enospc()) : null));
      const e = await errorOf(importCheckpoint(zip, 'c.zip', s));
      expect((e as WorkerFail).code, `write ${k}`).toBe('STORAGE_FULL');
      expect((e as Error).message, `write ${k}`).toMatch(/^importing c\.zip: the browser's storage for this site is full/);
      expect(inner.snapshot(), `write ${k}`).toEqual(before);
    }
    rows.push({
      area: 'checkpoint import',
      fault: `store throwing QuotaExceededError / ENOSPC at the k-th write of a checkpoint zip imported as a run, k = 1..${writes}`,
      cases: writes,
      outcome: `${writes} imports failed with WorkerFail STORAGE_FULL; after each the new run folder was gone and the other runs byte-identical`,
      verdict: 'pass',
      test: TEST,
    });
  });
});

describe('storage panel', () => {
  it("sizes every run and model folder, biggest first, with the browser's estimate", async () => {
    const runs = memoryStore({
      'run-a/ckpt-000001/w': new Uint8Array(300),
      'run-a/latest': 'ckpt-000001\n',
      'run-b/w': new Uint8Array(10),
    });
    const models = memoryStore({
      'tiny/model.safetensors': new Uint8Array(1000),
      'tiny/config.json': '{}',
      '.partial-big/model.safetensors': new Uint8Array(7),
    });
    const u = await storageUsage(runs, models, async () => ({ usage: 5000, quota: 100_000 }));
    expect(u).toEqual({
      usage: 5000,
      quota: 100_000,
      runs: [
        { name: 'run-a', bytes: 312 },
        { name: 'run-b', bytes: 10 },
      ],
      models: [
        { name: 'opfs:models/tiny', bytes: 1002 },
        { name: '.partial-big', bytes: 7 },
      ],
    });
    // a store without size() is sized by reading its files
    const { size: _drop, ...noSize } = runs;
    expect((await storageUsage(noSize as CheckpointStore, memoryStore(), async () => ({ usage: null, quota: null }))).runs).toEqual(u.runs);
  });

  it('deletes a run or a model folder, and nothing else', async () => {
    const runs = memoryStore({ 'run-a/x': '1', 'run-b/x': '2' });
    await deleteRun('run-a', runs);
    expect([...runs.files.keys()]).toEqual(['run-b/x']);
    for (const bad of ['run-b/x', '..', '', '/run-b']) {
      const e = await errorOf(deleteRun(bad, runs));
      expect(e, bad).toBeInstanceOf(CheckpointError);
      expect((e as CheckpointError).code, bad).toBe('PATH_INVALID');
    }
    expect([...runs.files.keys()]).toEqual(['run-b/x']);
    const models = memoryStore({ 'tiny/config.json': '{}', 'other/config.json': '{}', '.partial-x/a': '1' });
    await deleteLocalModel(models, 'opfs:models/tiny');
    await deleteLocalModel(models, '.partial-x');
    expect([...models.files.keys()]).toEqual(['other/config.json']);
    expect(((await errorOf(deleteLocalModel(models, 'opfs:models/other/config.json'))) as CheckpointError).code).toBe('PATH_INVALID');
    expect(((await errorOf(deleteLocalModel(models, 'opfs:models/..'))) as CheckpointError).code).toBe('PATH_INVALID');
  });
});
