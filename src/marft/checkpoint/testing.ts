// Test helpers (no production file imports this): a checkpoint folder in the format saveCheckpoint writes,
// with stand-in tensor bytes, signed as state.json records it: enough for readCheckpointFiles, imports and
// zip tests, without a GPU.

import { tinyRunConfig } from '../../config/testing.ts';
import { toBytes } from '../../platform/storage/store.ts';
import { sha256Hex, stringifyExact } from './format.ts';

/** A checkpoint folder in the format saveCheckpoint writes (the tensors are stand-in bytes: only readCheckpointFiles runs here). */
export async function checkpointFolder(): Promise<Record<string, Uint8Array>> {
  const files: Record<string, Uint8Array> = {
    'config.json': toBytes(JSON.stringify(tinyRunConfig(), null, 2)),
    'agents/planner/adapter_config.json': toBytes('{"peft_type": "LORA", "r": 2}'),
    'agents/planner/adapter_model.safetensors': Uint8Array.from({ length: 200 }, (_, i) => (i * 31) & 255),
    'critic/value_head.safetensors': Uint8Array.from({ length: 120 }, (_, i) => i & 255),
    'optimizer.safetensors': new Uint8Array(64),
  };
  const records = [];
  for (const p of Object.keys(files).sort()) records.push({ path: p, bytes: files[p].length, sha256: await sha256Hex(files[p]) });
  const body = {
    format: 'marft-lab-checkpoint',
    version: 1,
    iteration: 3,
    rng: 12345,
    baseModel: 'tiny',
    savedAt: '2000-01-01T00:00:00.000Z',
    model: { numLayers: 2, hiddenSize: 16, linear: { q_proj: [16, 16] } },
    adapters: { mode: 'per_agent', note: '', roles: { planner: { slot: 0, dir: 'agents/planner' } } },
    metrics: [{ iteration: 0, accuracy: Number.NaN }],
    files: records,
  };
  return { ...files, 'state.json': await signState(body) };
}
/** state.json bytes for `body`, with its own checksum made valid. */
export async function signState(body: Record<string, unknown>): Promise<Uint8Array> {
  const { sha256: _drop, ...rest } = body;
  return toBytes(stringifyExact({ ...rest, sha256: await sha256Hex(toBytes(stringifyExact(rest))) }));
}
