// The GPU-free downloads of the Runs tab: a stored checkpoint's adapters (agents/ folders and the run config,
// nothing of the critic or optimiser) and a model folder zipped under its name.

import { describe, expect, it } from 'vitest';
import { readCheckpointFiles } from '../checkpoint/checkpoint.ts';
import { checkpointFolder } from '../checkpoint/testing.ts';
import { memoryFiles } from '../../model/folder.ts';
import { memoryStore } from '../../platform/storage/store.ts';
import { unzipFiles } from '../../platform/zip.ts';
import { checkpointAdaptersZip, modelFolderZip } from './downloads.ts';

describe('checkpointAdaptersZip', () => {
  it("holds the agents' PEFT folders and the run config, byte for byte, named after the run and iteration", async () => {
    const folder = await checkpointFolder();
    const store = memoryStore();
    for (const [p, b] of Object.entries(folder)) await store.write(`run-a/ckpt-000003/${p}`, b);
    await store.write('run-a/latest', 'ckpt-000003\n');
    const ck = await readCheckpointFiles(store, 'run-a');
    const d = checkpointAdaptersZip(ck, 'run-a');
    expect(d.name).toBe('marft-adapters-run-a-it3.zip');
    const files = unzipFiles(d.bytes);
    expect(Object.keys(files).sort()).toEqual([
      'agents/planner/adapter_config.json',
      'agents/planner/adapter_model.safetensors',
      'config.json',
    ]);
    for (const p of Object.keys(files)) expect(files[p]).toEqual(folder[p]);
  });
});

describe('modelFolderZip', () => {
  it('puts every file under the folder name, so the zip unpacks to the folder from_pretrained reads', async () => {
    const d = await modelFolderZip(memoryFiles('marft-tiny', { 'config.json': '{"a":1}', 'model.safetensors': new Uint8Array([1, 2, 3]) }));
    expect(d.name).toBe('marft-tiny.zip');
    const files = unzipFiles(d.bytes);
    expect(Object.keys(files).sort()).toEqual(['marft-tiny/config.json', 'marft-tiny/model.safetensors']);
    expect(new TextDecoder().decode(files['marft-tiny/config.json'])).toBe('{"a":1}');
    expect(files['marft-tiny/model.safetensors']).toEqual(new Uint8Array([1, 2, 3]));
  });
});
