// The per-agent ONNX export of a saved checkpoint (tiny Qwen2, bf16, SwiftShader in Node): the zip holds
// <role>.onnx, the tokenizer files and a README; onnxruntime-web (wasm) gives the logits the lab's decoder
// gives with that agent's adapter; per-agent mode exports each agent's own adapter, shared mode the one
// adapter for every role; a checkpoint of another base model and an unknown role fail with clear errors.

import * as ort from 'onnxruntime-web';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testGpu } from '../../../kernels/testing.ts';
import type { Gpu } from '../../gpu/gpu.ts';
import { type VerifiedCheckpoint, readCheckpointFiles, saveCheckpoint } from '../checkpoint/checkpoint.ts';
import type { RunConfig } from '../../config/run-config.ts';
import { type TrainState, createTrainState, releaseTrainState } from '../state.ts';
import { memoryStore } from '../../platform/storage/store.ts';
import { tinyRunConfig } from '../../config/testing.ts';
import { unzipFiles } from '../../platform/zip.ts';
import type { ModelConfig } from '../../model/config.ts';
import type { Decoder } from '../../model/decoder.ts';
import { seededValues, tinyModelFolder } from '../../model/file-fixtures.ts';
import { type ModelFiles, memoryFiles } from '../../model/folder.ts';
import { loadDecoder } from '../../model/load.ts';
import { sequenceLogits } from '../../model/logits.ts';
import { tinyConfig } from '../../model/testing.ts';
import { agentLogits, agentOnnxZip } from './agent.ts';

ort.env.wasm.numThreads = 1;

let gpu: Gpu;
let files: ModelFiles;
let decoder: Decoder;
const states: TrainState[] = [];
const IDS = [5, 17, 42, 99, 3, 250, 7, 64];

beforeAll(async () => {
  gpu = await testGpu();
  files = memoryFiles('tiny-qwen2', tinyModelFolder('BF16'));
  decoder = (await loadDecoder(gpu, files)).decoder;
});
afterAll(() => {
  for (const s of states) releaseTrainState(gpu, s);
});

/** A saved checkpoint of a 2-agent run whose adapters are random (B too, so each one moves the logits). */
async function checkpoint(model: ModelConfig, mode: 'per_agent' | 'shared'): Promise<VerifiedCheckpoint> {
  const config: RunConfig = tinyRunConfig({ lora: { r: 2, alpha: 4, mode, targets: ['q_proj', 'v_proj', 'o_proj', 'down_proj'] } });
  const state = createTrainState(gpu, model, config);
  states.push(state);
  let seed = 1;
  for (const layer of state.policy.layers)
    for (const p of Object.values(layer))
      gpu.write(
        p.B,
        seededValues(
          p.B.shape.reduce((a, b) => a * b, 1),
          seed++,
        ).map((v) => 0.5 * v),
      );
  const store = memoryStore();
  await saveCheckpoint(gpu, state, store, 'run-x', { baseModel: files.name });
  return readCheckpointFiles(store, 'run-x');
}

async function runOnnx(zip: Record<string, Uint8Array>, file: string, ids: number[]): Promise<Float32Array> {
  const session = await ort.InferenceSession.create(zip[file], { executionProviders: ['wasm'] });
  const t = (v: number[]) =>
    new ort.Tensor(
      'int64',
      BigInt64Array.from(v, (x) => BigInt(x)),
      [1, v.length],
    );
  const out = await session.run({ input_ids: t(ids), attention_mask: t(ids.map(() => 1)) });
  await session.release();
  return out.logits.data as Float32Array;
}

const maxAbs = (a: Float32Array, b: Float32Array): number => a.reduce((m, v, i) => Math.max(m, Math.abs(v - b[i])), 0);

describe('per-agent ONNX export of a checkpoint', () => {
  it("per-agent LoRA: each agent's zip runs in onnxruntime-web with the lab's logits for that agent", async () => {
    const ck = await checkpoint(decoder.config, 'per_agent');
    const base = await sequenceLogits(decoder, IDS, null);
    const got: Record<string, Float32Array> = {};
    for (const role of ['planner', 'solver']) {
      const d = await agentOnnxZip(ck, role, files, 'run-x');
      expect(d.name).toBe(`marft-onnx-run-x-${role}-it0.zip`);
      expect(d.summary).toContain('adapter merged');
      const zip = unzipFiles(d.bytes);
      expect(Object.keys(zip).sort()).toEqual(['README.md', `${role}.onnx`, 'tokenizer.json', 'tokenizer_config.json']);
      expect(new TextDecoder().decode(zip['README.md'])).toContain(`agent "${role}" of run-x/ckpt-000000`);
      got[role] = await runOnnx(zip, `${role}.onnx`, IDS);
      const lab = await agentLogits(ck, role, decoder, files.name, IDS);
      expect(lab.length).toBe(IDS.length * decoder.config.vocabSize);
      const err = maxAbs(got[role], lab);
      console.log(`${role}: max |onnx - lab| ${err.toExponential(2)}, adapter moves the logits by up to ${maxAbs(lab, base).toFixed(3)}`);
      expect(err).toBeLessThanOrEqual(1e-4);
      expect(maxAbs(lab, base)).toBeGreaterThan(1e-2);
    }
    expect(maxAbs(got.planner, got.solver)).toBeGreaterThan(1e-2); // two agents, two adapters
  });

  it('shared LoRA: every role exports the one shared adapter', async () => {
    const ck = await checkpoint(decoder.config, 'shared');
    const planner = unzipFiles((await agentOnnxZip(ck, 'planner', files, 'run-s')).bytes);
    const solver = unzipFiles((await agentOnnxZip(ck, 'solver', files, 'run-s')).bytes);
    expect(new TextDecoder().decode(planner['README.md'])).toContain('shared LoRA adapter');
    const [p, s] = [await runOnnx(planner, 'planner.onnx', IDS), await runOnnx(solver, 'solver.onnx', IDS)];
    expect(maxAbs(p, s)).toBe(0);
    expect(maxAbs(s, await agentLogits(ck, 'solver', decoder, files.name, IDS))).toBeLessThanOrEqual(1e-4);
  });

  it('fails naming the problem: an adapter of another base model, a role the run does not have', async () => {
    const other = await checkpoint(tinyConfig({ hidden_size: 32, intermediate_size: 40 }), 'per_agent');
    // (a MarftError's message ends with its hint, which the worker sends apart: toWorkerError)
    await expect(agentOnnxZip(other, 'solver', files, 'run-o')).rejects.toMatchObject({
      code: 'ADAPTER_MISMATCH',
      message: expect.stringMatching(
        /^the adapter of agent "solver" in run-x\/ckpt-000000 does not fit the base model "tiny-qwen2": layer 0 [a-z]+_proj: A has \d+ values and B \d+; the model needs \[2, \d+\] and \[\d+, 2\]\n  hint: The run was trained on another base model/,
      ),
    });
    await expect(agentLogits(other, 'solver', decoder, files.name, IDS)).rejects.toMatchObject({ code: 'ADAPTER_MISMATCH' });
    const ck = await checkpoint(decoder.config, 'per_agent');
    await expect(agentOnnxZip(ck, 'critic', files, 'run-x')).rejects.toMatchObject({
      code: 'NO_AGENT',
      message: expect.stringContaining('its agents: planner, solver'),
    });
  });
});
