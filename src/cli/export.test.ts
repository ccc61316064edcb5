// Interop in-process (no CLI spawn): a PEFT adapter made by Python's peft starts a lab run in an agent's
// slot (--init-adapter), mismatched adapters are refused; the checkpoint then exports as ONNX per agent
// (run in onnxruntime-web, compared with transformers' logits) and as an AReaL config with its adapters.

import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as ort from 'onnxruntime-web';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { testGpu } from '../../kernels/testing.ts';
import { exportCheckpointZip, saveCheckpoint } from '../marft/checkpoint/checkpoint.ts';
import { parseRunConfig } from '../config/run-config.ts';
import { initAgentAdapters, parseInitAdapters } from '../marft/checkpoint/init-adapter.ts';
import { createTrainState, releaseTrainState } from '../marft/state.ts';
import { nodeStore } from '../platform/storage/node.ts';
import { getLoraSlot } from '../model/lora-set.ts';
import { loadAdapterFiles } from '../model/load.ts';
import { loadModelFiles } from '../model/folder.ts';
import { nodeModelFiles } from '../model/node-files.ts';
import { readPeftAdapter } from '../model/peft.ts';
import { parseSafetensors, tensorToFloat32 } from '../model/safetensors.ts';
import { UsageError } from './args.ts';
import { exportArealToDir, exportCommand, exportOnnxToFile } from './commands/export.ts';

ort.env.wasm.numThreads = 1;
const FIX = new URL('../../fixtures/parity/qwen2-tiny', import.meta.url).pathname;
const work = mkdtempSync(join(tmpdir(), 'marft-interop-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const ALL = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];
const runConfig = (lora: Record<string, unknown>) =>
  parseRunConfig({
    seed: 1,
    model: { path: FIX },
    critic: { hidden: [4] },
    graph: {
      agents: [
        { role: 'planner', systemPrompt: 'Plan.' },
        { role: 'solver', systemPrompt: 'Solve.', withAnswer: true },
      ],
      edges: [{ from: 'planner', to: 'solver' }],
    },
    lora: { r: 4, alpha: 8, targets: ALL, mode: 'per_agent', ...lora },
  });

function reference() {
  const st = parseSafetensors(new Uint8Array(readFileSync(`${FIX}/reference.safetensors`)), 'reference.safetensors');
  const get = (k: string) => tensorToFloat32(st.tensors.get(k)!);
  return { ids: get('input_ids'), mask: get('attention_mask'), logits: get('logits'), logitsLora: get('logits_lora'), B: 2, T: 11, V: 96 };
}

async function onnxErr(file: string, want: 'logits' | 'logitsLora'): Promise<number> {
  const ref = reference();
  const s = await ort.InferenceSession.create(new Uint8Array(readFileSync(file)), { executionProviders: ['wasm'] });
  const i64 = (a: Float32Array) =>
    new ort.Tensor(
      'int64',
      BigInt64Array.from(a, (v) => BigInt(v)),
      [ref.B, ref.T],
    );
  const got = (await s.run({ input_ids: i64(ref.ids), attention_mask: i64(ref.mask) })).logits.data as Float32Array;
  await s.release();
  let worst = 0;
  for (let n = 0; n < ref.B * ref.T; n++) {
    if (!ref.mask[n]) continue;
    for (let v = 0; v < ref.V; v++) worst = Math.max(worst, Math.abs(got[n * ref.V + v] - ref[want][n * ref.V + v]));
  }
  return worst;
}

describe('interop: init adapters, ONNX and AReaL export', () => {
  it('a PEFT adapter starts a run, the checkpoint exports to ONNX and AReaL', async () => {
    const gpu = await testGpu();
    const model = (await loadModelFiles(await nodeModelFiles(FIX))).config;
    const peft = await loadAdapterFiles(await nodeModelFiles(`${FIX}/adapter`), model);

    // --init-adapter: parsing, a mismatch refused clearly, then the solver's slot holds the adapter exactly.
    expect(parseInitAdapters(['solver=/x/y'])).toEqual([{ role: 'solver', dir: '/x/y' }]);
    expect(() => parseInitAdapters(['solver'])).toThrow(/ROLE=DIR/);
    const bad = createTrainState(gpu, model, runConfig({ r: 2, targets: ['q_proj', 'v_proj'] }));
    expect(() => initAgentAdapters(gpu, bad, model, [{ role: 'solver', adapter: peft, where: 'adapter' }])).toThrow(
      /r 4 \(run: 2\).*target_modules/,
    );
    expect(() => initAgentAdapters(gpu, bad, model, [{ role: 'critic', adapter: peft, where: 'adapter' }])).toThrow(/not a role/);
    releaseTrainState(gpu, bad);
    const state = createTrainState(gpu, model, runConfig({}));
    initAgentAdapters(gpu, state, model, [{ role: 'solver', adapter: peft, where: 'adapter' }]);
    const slot = await getLoraSlot(gpu, state.policy, 1);
    for (const m of ALL) {
      expect(slot.layers[1][m as 'q_proj']!.A).toEqual(peft.layers[1][m as 'q_proj']!.A);
      expect(slot.layers[0][m as 'q_proj']!.B).toEqual(peft.layers[0][m as 'q_proj']!.B);
    }
    await saveCheckpoint(gpu, state, nodeStore(work), 'run', { baseModel: FIX });
    releaseTrainState(gpu, state);
    const ckpt = join(work, 'run');

    // ONNX per agent: the solver carries the merged adapter, the planner a fresh one (B = 0).
    const solverOnnx = join(work, 'onnx/solver.onnx');
    console.log(await exportOnnxToFile({ checkpoint: ckpt, agent: 'solver', out: solverOnnx }));
    const errSolver = await onnxErr(solverOnnx, 'logitsLora');
    const plannerOnnx = join(work, 'onnx/planner.onnx');
    await exportOnnxToFile({ checkpoint: ckpt, agent: 'planner', out: plannerOnnx });
    const errPlanner = await onnxErr(plannerOnnx, 'logits');
    console.log(
      `checkpoint -> ONNX, max abs logit error vs transformers: solver (merged) ${errSolver.toExponential(2)}, planner ${errPlanner.toExponential(2)}`,
    );
    expect(errSolver).toBeLessThanOrEqual(1e-4);
    expect(errPlanner).toBeLessThanOrEqual(1e-4);
    await expect(exportOnnxToFile({ checkpoint: ckpt, agent: 'judge', out: plannerOnnx })).rejects.toThrow(UsageError);
    await expect(exportOnnxToFile({ checkpoint: ckpt, out: plannerOnnx })).rejects.toThrow(/--agent is required/);

    // --model DIR --adapter DIR, tokenizer files copied, external data on request.
    const modelCopy = join(work, 'model');
    cpSync(FIX, modelCopy, { recursive: true });
    writeFileSync(join(modelCopy, 'tokenizer.json'), '{"model": {}}');
    writeFileSync(join(modelCopy, 'tokenizer_config.json'), '{}');
    const direct = join(work, 'direct/m.onnx');
    await exportOnnxToFile({ model: modelCopy, adapter: `${FIX}/adapter`, out: direct, externalData: true });
    expect(existsSync(`${direct}.data`)).toBe(true);
    expect(readFileSync(join(work, 'direct/tokenizer.json'), 'utf8')).toBe('{"model": {}}');
    expect(existsSync(join(work, 'direct/tokenizer_config.json'))).toBe(true);
    const s = await ort.InferenceSession.create(direct, {
      executionProviders: ['wasm'],
      externalData: [{ path: 'm.onnx.data', data: new Uint8Array(readFileSync(`${direct}.data`)) }],
    });
    const ref = reference();
    const out = await s.run({
      input_ids: new ort.Tensor(
        'int64',
        BigInt64Array.from(ref.ids.slice(0, 11), (v) => BigInt(v)),
        [1, 11],
      ),
      attention_mask: new ort.Tensor('int64', new BigInt64Array(11).fill(1n), [1, 11]),
    });
    const got = out.logits.data as Float32Array;
    expect(Math.max(...Array.from(got, (v, i) => Math.abs(v - ref.logitsLora[i])))).toBeLessThanOrEqual(1e-4);
    await s.release();

    // AReaL: config.yaml parses and names the adapters, which are the checkpoint's.
    console.log(await exportArealToDir(ckpt, join(work, 'areal'), 'Qwen/Qwen2.5-0.5B-Instruct'));
    const y = parse(readFileSync(join(work, 'areal/config.yaml'), 'utf8'));
    expect(y).toMatchObject({
      actor: { path: 'Qwen/Qwen2.5-0.5B-Instruct', lora_rank: 4, lora_alpha: 8, target_modules: ALL },
      multi_agent: { shared_lora: false, role_names: ['planner', 'solver'] },
    });
    expect(JSON.parse(readFileSync(join(work, 'areal/lab_settings.json'), 'utf8')).lora.mode).toBe('per_agent');
    expect(JSON.parse(readFileSync(join(work, 'areal/agents.json'), 'utf8')).map((p: { agent_name: string }) => p.agent_name)).toEqual([
      'planner',
      'solver',
    ]);
    const exported = readPeftAdapter(
      {
        'adapter_config.json': readFileSync(join(work, 'areal/adapters/solver/adapter_config.json'), 'utf8'),
        'adapter_model.safetensors': new Uint8Array(readFileSync(join(work, 'areal/adapters/solver/adapter_model.safetensors'))),
      },
      model,
    );
    expect(exported.layers[1].down_proj!.B).toEqual(peft.layers[1].down_proj!.B);
    expect(existsSync(join(work, 'areal/adapters/planner/adapter_model.safetensors'))).toBe(true);

    // A checkpoint zip (the browser lab's download) exports the same way.
    const zip = join(work, 'ckpt.zip');
    writeFileSync(zip, await exportCheckpointZip(nodeStore(work), 'run'));
    await exportArealToDir(zip, join(work, 'areal-zip'), 'base');
    expect(readFileSync(join(work, 'areal-zip/adapters/solver/adapter_model.safetensors'))).toEqual(
      readFileSync(join(work, 'areal/adapters/solver/adapter_model.safetensors')),
    );
    await exportOnnxToFile({ checkpoint: zip, agent: 'solver', out: join(work, 'zip/solver.onnx') });
    expect(await onnxErr(join(work, 'zip/solver.onnx'), 'logitsLora')).toBeLessThanOrEqual(1e-4);

    await expect(exportCommand(['--format', 'bogus', '--out', 'x'])).rejects.toThrow(/--format must be zip, onnx or areal/);
  });
});
