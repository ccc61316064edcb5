// Checkpoints on a tiny model (SwiftShader in Node): save -> load is bit-exact for every tensor, the
// RNG, the iteration and the metrics; damaged files fail naming the file; a crash before the switch
// leaves the previous checkpoint; PEFT files are readable; zips round-trip.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testGpu } from '../../../kernels/testing.ts';
import type { Gpu } from '../../gpu/gpu.ts';
import type { Tensor } from '../../gpu/tensor.ts';
import { getLoraSlot } from '../../model/lora-set.ts';
import { readPeftAdapter } from '../../model/peft.ts';
import { readSlotStats } from '../../model/optimizer.ts';
import { parseSafetensors, writeSafetensors } from '../../model/safetensors.ts';
import { tinyConfig } from '../../model/testing.ts';
import { Rng } from '../../common/rng.ts';
import {
  CheckpointError,
  LATEST_FILE,
  OPTIMIZER_FILE,
  VALUE_HEAD_FILE,
  exportCheckpointZip,
  importCheckpointZip,
  listCheckpoints,
  loadCheckpoint,
  saveCheckpoint,
} from './checkpoint.ts';
import { decodeOptimizer, loraNames, valueHeadNames } from './format.ts';
import { type RunConfig, parseRunConfig } from '../../config/run-config.ts';
import { exportAdapters } from '../export/peft.ts';
import { type TrainState, createTrainState, releaseTrainState } from '../state.ts';
import type { IterationMetrics } from '../../config/metrics.ts';
import { nodeStore } from '../../platform/storage/node.ts';
import { type CheckpointStore, listFiles, memoryStore } from '../../platform/storage/store.ts';
import { zipFiles } from '../../platform/zip.ts';

let gpu: Gpu;
const model = tinyConfig();
const states: TrainState[] = [];
const tmpDirs: string[] = [];

beforeAll(async () => {
  gpu = await testGpu();
});
afterAll(async () => {
  for (const s of states) releaseTrainState(gpu, s);
  for (const d of tmpDirs) await rm(d, { recursive: true, force: true });
});

function runConfig(lora: 'per_agent' | 'shared', critic: 'shared' | 'per_agent' = 'shared', targets = ['q_proj', 'v_proj']): RunConfig {
  return parseRunConfig({ seed: 5, lora: { r: 2, alpha: 4, targets, mode: lora }, critic: { mode: critic, hidden: [3] } });
}

const track = (s: TrainState): TrainState => {
  states.push(s);
  return s;
};

/** Every tensor a checkpoint holds, by a readable name. */
function tensorsOf(s: TrainState): Array<[string, Tensor]> {
  return [
    ...loraNames(s.policy).map(({ name, param }) => [name, param] as [string, Tensor]),
    ...valueHeadNames(s.critic).map(({ name, param }) => [`critic.${name}`, param] as [string, Tensor]),
    ...s.policyOptim.groups.flatMap(
      (g, i) =>
        [
          [`policy.m${i}`, g.m],
          [`policy.v${i}`, g.v],
        ] as Array<[string, Tensor]>,
    ),
    ...s.criticOptim.groups.flatMap(
      (g, i) =>
        [
          [`critic.m${i}`, g.m],
          [`critic.v${i}`, g.v],
        ] as Array<[string, Tensor]>,
    ),
    ['policy.stats', s.policyOptim.stats],
    ['critic.stats', s.criticOptim.stats],
  ];
}

/** Every tensor's raw bytes. */
async function snapshot(s: TrainState): Promise<Map<string, Uint8Array>> {
  const out = new Map<string, Uint8Array>();
  for (const [name, t] of tensorsOf(s)) out.set(name, new Uint8Array((await gpu.readF32(t)).buffer.slice(0)));
  return out;
}

/** A state that looks mid-run: random tensors (with NaN, -0 and Infinity among them), RNG advanced, metrics. */
function midRunState(config: RunConfig, seed: number, iteration = 12): TrainState {
  const s = track(createTrainState(gpu, model, config));
  const rng = new Rng(seed);
  tensorsOf(s).forEach(([name, t], k) => {
    const n = t.shape.reduce((a, b) => a * b, 1);
    const v = Float32Array.from({ length: n }, () => rng.uniform(-2, 2));
    if (k === 3) {
      v[0] = Number.NaN;
      v[1] = -0;
      v[2] = Infinity;
    }
    if (name === 'policy.stats') v.set([0.25, 0.5, 0, 1, 12, 3]);
    gpu.write(t, v);
  });
  s.iteration = iteration;
  for (let i = 0; i < 7; i++) s.rng.next();
  const metric = (it: number): IterationMetrics => ({
    iteration: it,
    accuracy: 0.5,
    teamReward: 0.25,
    agents: Object.fromEntries(
      config.graph.agents.map((a, i) => [a.role, { reward: i * 0.1, accuracy: a.withAnswer ? 0.5 : Number.NaN, actions: 4, tokens: 31 }]),
    ),
    policyLoss: -0.0123,
    valueLoss: 1e-9,
    entropy: 2.5,
    approxKl: -0,
    klToRef: Infinity,
    clipFraction: 0.1,
    tokensPerSecond: 123.456,
    seconds: { rollout: 1, score: 0.01, advantages: 0.001, update: 2, total: 3.011 },
    skipped: it === 1 ? ['non-finite gradient'] : [],
    trained: config.graph.agents.map((a) => a.role),
  });
  s.metrics = [metric(1), metric(2)];
  return s;
}

async function expectSameState(got: TrainState, want: TrainState, wantTensors: Map<string, Uint8Array>): Promise<void> {
  const gotTensors = await snapshot(got);
  expect([...gotTensors.keys()]).toEqual([...wantTensors.keys()]);
  for (const [name, bytes] of wantTensors) {
    const g = gotTensors.get(name)!;
    const same = g.length === bytes.length && g.every((b, i) => b === bytes[i]);
    expect(same, `${name}: bytes differ after load`).toBe(true);
  }
  expect(got.iteration).toBe(want.iteration);
  expect(got.rng.state).toBe(want.rng.state);
  expect(got.metrics).toEqual(want.metrics);
  expect(got.config).toEqual(want.config);
  expect(got.policy.spec.slots).toBe(want.policy.spec.slots);
  expect(got.critic.heads.length).toBe(want.critic.heads.length);
}

async function errorOf(p: Promise<unknown>): Promise<CheckpointError> {
  try {
    await p;
  } catch (e) {
    if (!(e instanceof CheckpointError)) throw e;
    return e;
  }
  throw new Error('expected a CheckpointError');
}

const BASE = 'tiny-llama';

describe('checkpoint round trip', () => {
  it('per-agent LoRA: every tensor, the RNG, iteration and metrics come back bit for bit', async () => {
    const s = midRunState(runConfig('per_agent'), 1);
    const before = await snapshot(s);
    const store = memoryStore();
    const saved = await saveCheckpoint(gpu, s, store, 'runs/a', { baseModel: BASE });
    expect(saved.name).toBe('ckpt-000012');
    expect(await listFiles(store, 'runs/a')).toEqual([
      'ckpt-000012/agents/planner/adapter_config.json',
      'ckpt-000012/agents/planner/adapter_model.safetensors',
      'ckpt-000012/agents/solver/adapter_config.json',
      'ckpt-000012/agents/solver/adapter_model.safetensors',
      'ckpt-000012/config.json',
      'ckpt-000012/critic/value_head.safetensors',
      'ckpt-000012/optimizer.safetensors',
      'ckpt-000012/state.json',
      'latest',
    ]);
    const loaded = track(await loadCheckpoint(gpu, store, 'runs/a', model));
    await expectSameState(loaded, s, before);
    // The loaded RNG continues the same stream.
    expect(loaded.rng.next()).toBe(s.rng.next());
  });

  it('names optimizer tensors by group index and parameter, stats included', async () => {
    const s = midRunState(runConfig('per_agent'), 2);
    const store = memoryStore();
    const { path } = await saveCheckpoint(gpu, s, store, 'r', { baseModel: BASE });
    const opt = parseSafetensors(await store.read(`${path}/${OPTIMIZER_FILE}`), OPTIMIZER_FILE);
    const names = [...opt.tensors.keys()];
    expect(names).toContain('policy.0000.layers.0.q_proj.lora_A.adam_m');
    expect(names).toContain('policy.0007.layers.1.v_proj.lora_B.adam_v');
    expect(names).toContain('critic.0003.heads.0.layers.1.bias.adam_m');
    expect(names).toContain('policy.stats');
    expect(names).toContain('critic.stats');
    expect(names.length).toBe(2 * (8 + 4) + 2);
    const head = parseSafetensors(await store.read(`${path}/${VALUE_HEAD_FILE}`), VALUE_HEAD_FILE);
    expect([...head.tensors.keys()].sort()).toEqual([
      'heads.0.layers.0.bias',
      'heads.0.layers.0.weight',
      'heads.0.layers.1.bias',
      'heads.0.layers.1.weight',
    ]);
    expect(head.tensors.get('heads.0.layers.0.weight')!.shape).toEqual([3, 16]);
    expect(head.metadata).toMatchObject({ input_size: '16', hidden: '[3]', heads: '1' });
  });

  it('shared LoRA with per-agent critic heads: every role holds the shared adapter', async () => {
    const s = midRunState(runConfig('shared', 'per_agent'), 3, 4);
    expect(s.policy.spec.slots).toBe(1);
    expect(s.critic.heads.length).toBe(2);
    const before = await snapshot(s);
    const store = memoryStore();
    const { path } = await saveCheckpoint(gpu, s, store, 'runs/shared', { baseModel: BASE });
    for (const f of ['adapter_config.json', 'adapter_model.safetensors']) {
      expect(await store.read(`${path}/agents/solver/${f}`)).toEqual(await store.read(`${path}/agents/planner/${f}`));
    }
    const state = JSON.parse(new TextDecoder().decode(await store.read(`${path}/state.json`)));
    expect(state.adapters.mode).toBe('shared');
    expect(state.adapters.note).toContain('shared');
    expect(state.adapters.roles).toEqual({ planner: { slot: 0, dir: 'agents/planner' }, solver: { slot: 0, dir: 'agents/solver' } });
    const loaded = track(await loadCheckpoint(gpu, store, 'runs/shared', model));
    await expectSameState(loaded, s, before);
  });

  it('writes PEFT folders that readPeftAdapter reads back equal to getLoraSlot', async () => {
    const s = midRunState(runConfig('per_agent'), 4);
    const store = memoryStore();
    const { path } = await saveCheckpoint(gpu, s, store, 'peft', { baseModel: BASE });
    for (const [slot, role] of ['planner', 'solver'].entries()) {
      const a = readPeftAdapter(
        {
          'adapter_config.json': await store.read(`${path}/agents/${role}/adapter_config.json`),
          'adapter_model.safetensors': await store.read(`${path}/agents/${role}/adapter_model.safetensors`),
        },
        model,
      );
      const want = await getLoraSlot(gpu, s.policy, slot, BASE);
      expect(a.config).toEqual(want.config);
      expect(a.config.baseModelNameOrPath).toBe(BASE);
      expect(a.layers).toEqual(want.layers);
    }
  });

  it('loads through the Node directory store', async () => {
    const d = await mkdtemp(join(tmpdir(), 'marft-ckpt-'));
    tmpDirs.push(d);
    const s = midRunState(runConfig('per_agent'), 5);
    const before = await snapshot(s);
    await saveCheckpoint(gpu, s, nodeStore(d), 'run', { baseModel: BASE });
    const loaded = track(await loadCheckpoint(gpu, nodeStore(d), 'run', model));
    await expectSameState(loaded, s, before);
  });
});

describe('checkpoint integrity', () => {
  let store: ReturnType<typeof memoryStore>;
  let path: string;
  beforeAll(async () => {
    const s = midRunState(runConfig('per_agent'), 6);
    store = memoryStore();
    ({ path } = await saveCheckpoint(gpu, s, store, 'run', { baseModel: BASE }));
  });
  /** A copy of the store with one file changed. */
  const damaged = (file: string, f: (b: Uint8Array) => Uint8Array | null): CheckpointStore => {
    const copy = memoryStore(store.snapshot());
    const p = `${path}/${file}`;
    const b = f(copy.files.get(p)!.slice());
    if (b) copy.files.set(p, b);
    else copy.files.delete(p);
    return copy;
  };

  it('a flipped byte fails with CHECKSUM naming the file', async () => {
    const e = await errorOf(
      loadCheckpoint(
        gpu,
        damaged(OPTIMIZER_FILE, (b) => {
          b[b.length - 5] ^= 0x10;
          return b;
        }),
        'run',
        model,
      ),
    );
    expect(e.code).toBe('CHECKSUM');
    expect(e.file).toBe(`run/ckpt-000012/${OPTIMIZER_FILE}`);
    expect(e.message).toContain('optimizer.safetensors');
    expect(e.message).toContain('hint:');
  });

  it('a truncated file fails with FILE_TRUNCATED naming the file', async () => {
    const f = 'agents/solver/adapter_model.safetensors';
    const e = await errorOf(
      loadCheckpoint(
        gpu,
        damaged(f, (b) => b.subarray(0, b.length - 100)),
        'run',
        model,
      ),
    );
    expect(e.code).toBe('FILE_TRUNCATED');
    expect(e.message).toContain(f);
    expect(e.message).toMatch(/truncated/);
  });

  it('a missing file and a damaged state.json fail clearly', async () => {
    const e1 = await errorOf(
      loadCheckpoint(
        gpu,
        damaged(VALUE_HEAD_FILE, () => null),
        'run',
        model,
      ),
    );
    expect(e1.code).toBe('FILE_MISSING');
    expect(e1.message).toContain(VALUE_HEAD_FILE);
    // An edit that keeps valid JSON (iteration 12 -> 13) is caught by state.json's own checksum.
    const e2 = await errorOf(
      loadCheckpoint(
        gpu,
        damaged('state.json', (b) => new TextEncoder().encode(new TextDecoder().decode(b).replace('"iteration": 12', '"iteration": 13'))),
        'run',
        model,
      ),
    );
    expect(e2.code).toBe('STATE_INVALID');
    expect(e2.message).toContain('state.json');
    const e3 = await errorOf(
      loadCheckpoint(
        gpu,
        damaged('state.json', (b) => b.subarray(0, 50)),
        'run',
        model,
      ),
    );
    expect(e3.code).toBe('STATE_INVALID');
  });

  it("saves and restores the policy optimiser's step count per adapter slot", async () => {
    const s = midRunState(runConfig('per_agent'), 4);
    gpu.write(s.policyOptim.stats, Float32Array.from([0, 0.5, 0, 1, 12, 3, 0, 0, 0, 0.25, 0, 1, 5, 0, 0, 0])); // planner 12 steps, solver 5
    const store = memoryStore();
    const { path } = await saveCheckpoint(gpu, s, store, 'r', { baseModel: BASE });
    const opt = parseSafetensors(await store.read(`${path}/${OPTIMIZER_FILE}`), OPTIMIZER_FILE);
    expect(opt.tensors.get('policy.stats')!.shape).toEqual([2, 8]);
    expect(opt.tensors.get('critic.stats')!.shape).toEqual([8]);
    const loaded = track(await loadCheckpoint(gpu, store, 'r', model));
    expect((await readSlotStats(gpu, loaded.policyOptim)).map((x) => [x.steps, x.skippedSteps])).toEqual([
      [12, 3],
      [5, 0],
    ]);
  });

  it('a checkpoint from before per-slot state (one policy.stats row) gives every slot its step count', async () => {
    const s = midRunState(runConfig('per_agent'), 6);
    const store = memoryStore();
    const { path } = await saveCheckpoint(gpu, s, store, 'r', { baseModel: BASE });
    const opt = parseSafetensors(await store.read(`${path}/${OPTIMIZER_FILE}`), OPTIMIZER_FILE);
    const row = [0.25, 0.5, 0, 1, 9, 2, 0, 0];
    const legacy = writeSafetensors(
      [...opt.tensors].map(([name, t]) =>
        name === 'policy.stats'
          ? { name, dtype: 'F32' as const, shape: [8], data: Float32Array.from(row) }
          : { name, dtype: 'F32' as const, shape: t.shape, data: new Float32Array(t.data.slice().buffer) },
      ),
      opt.metadata ?? undefined,
    );
    const fresh = track(createTrainState(gpu, model, runConfig('per_agent')));
    decodeOptimizer(gpu, fresh, legacy);
    expect(Array.from(await gpu.readF32(fresh.policyOptim.stats))).toEqual([...row, ...row].map((x) => Math.fround(x)));
    for (const [k, g] of fresh.policyOptim.groups.entries())
      expect(await gpu.readF32(g.m)).toEqual(await gpu.readF32(s.policyOptim.groups[k].m));
    // a stats tensor of any other shape is still refused
    const bad = writeSafetensors(
      [...opt.tensors].map(([name, t]) => ({
        name,
        dtype: 'F32' as const,
        shape: name === 'policy.stats' ? [3, 8] : t.shape,
        data: name === 'policy.stats' ? new Float32Array(24) : new Float32Array(t.data.slice().buffer),
      })),
      opt.metadata ?? undefined,
    );
    expect(() => decodeOptimizer(gpu, fresh, bad)).toThrow(/tensor "policy\.stats" has shape \[3, 8\], the run needs \[2, 8\]/);
  });

  it('a base model of other dimensions fails with MODEL_MISMATCH', async () => {
    const e = await errorOf(loadCheckpoint(gpu, store, 'run', tinyConfig({ hidden_size: 24, num_attention_heads: 4 })));
    expect(e.code).toBe('MODEL_MISMATCH');
    expect(e.message).toContain('hidden size 16');
  });

  it('tensors that do not fit the run config fail with TENSOR_MISMATCH naming the tensor', async () => {
    const other = track(createTrainState(gpu, model, runConfig('per_agent', 'shared', ['q_proj'])));
    expect(() => decodeOptimizer(gpu, other, store.files.get(`${path}/${OPTIMIZER_FILE}`)!)).toThrow(
      /unexpected tensors "policy\.0001\.layers\.0\.v_proj\.lora_A\.adam_m"|"policy\.0002/,
    );
    const e = (() => {
      try {
        decodeOptimizer(gpu, other, store.files.get(`${path}/${OPTIMIZER_FILE}`)!);
      } catch (x) {
        return x as CheckpointError;
      }
    })()!;
    expect(e.code).toBe('TENSOR_MISMATCH');
  });

  it('points at nothing: NO_CHECKPOINT and a dangling latest', async () => {
    expect((await errorOf(loadCheckpoint(gpu, memoryStore(), 'empty', model))).code).toBe('NO_CHECKPOINT');
    const copy = memoryStore(store.snapshot());
    await copy.write(`run/${LATEST_FILE}`, 'ckpt-000099\n');
    expect((await errorOf(loadCheckpoint(gpu, copy, 'run', model))).code).toBe('POINTER_INVALID');
  });
});

describe('crash safety and retention', () => {
  it('a crash between writing the files and the switch leaves the previous checkpoint and latest', async () => {
    const s = midRunState(runConfig('per_agent'), 7, 12);
    const before = await snapshot(s);
    const store = memoryStore();
    await saveCheckpoint(gpu, s, store, 'run', { baseModel: BASE });
    const latest = await store.read(`run/${LATEST_FILE}`);

    const s2 = midRunState(runConfig('per_agent'), 8, 13);
    const crashAt = (op: 'rename' | 'write', n: number): CheckpointStore => {
      let calls = 0;
      const crash = async (): Promise<never> => {
        throw new Error('simulated crash');
      };
      return {
        ...store,
        rename: (a, b) => (op === 'rename' && ++calls >= n ? crash() : store.rename(a, b)),
        write: (p, d) => (op === 'write' && ++calls >= n ? crash() : store.write(p, d)),
      };
    };
    await expect(saveCheckpoint(gpu, s2, crashAt('rename', 1), 'run', { baseModel: BASE })).rejects.toThrow('simulated crash');
    await expect(saveCheckpoint(gpu, s2, crashAt('write', 4), 'run', { baseModel: BASE })).rejects.toThrow('simulated crash');
    expect(await store.read(`run/${LATEST_FILE}`)).toEqual(latest);
    expect((await store.list('run')).some((e) => e.name.startsWith('.tmp-'))).toBe(true); // the crash's leftovers
    const loaded = track(await loadCheckpoint(gpu, store, 'run', model));
    await expectSameState(loaded, s, before);

    // The next save cleans up and commits.
    const saved = await saveCheckpoint(gpu, s2, store, 'run', { baseModel: BASE });
    expect(saved.name).toBe('ckpt-000013');
    expect((await store.list('run')).map((e) => e.name)).toEqual(['ckpt-000012', 'ckpt-000013', 'latest']);
    expect(track(await loadCheckpoint(gpu, store, 'run', model)).iteration).toBe(13);
  });

  it('keeps the last K checkpoints and never reuses a folder name', async () => {
    const s = midRunState(runConfig('shared'), 9, 1);
    const store = memoryStore();
    for (const it of [1, 2, 3, 4]) {
      s.iteration = it;
      const saved = await saveCheckpoint(gpu, s, store, 'run', { baseModel: BASE, keep: 2 });
      if (it === 3) expect(saved.removed).toEqual(['ckpt-000001']);
    }
    const again = await saveCheckpoint(gpu, s, store, 'run', { baseModel: BASE, keep: 2 });
    expect(again.name).toBe('ckpt-000004-1');
    const list = await listCheckpoints(store, 'run');
    expect(list.map((c) => [c.name, c.latest])).toEqual([
      ['ckpt-000004', false],
      ['ckpt-000004-1', true],
    ]);
  });
});

describe('export and zips', () => {
  it('exports per-agent PEFT folders, the value heads, the run config and a README', async () => {
    const s = midRunState(runConfig('per_agent'), 10);
    const files = await exportAdapters(gpu, s, { baseModel: BASE });
    expect(Object.keys(files).sort()).toEqual([
      'README.md',
      'agents/planner/adapter_config.json',
      'agents/planner/adapter_model.safetensors',
      'agents/solver/adapter_config.json',
      'agents/solver/adapter_model.safetensors',
      'config.json',
      'critic/value_head.safetensors',
    ]);
    expect(JSON.parse(files['config.json'] as string)).toEqual(s.config);
    expect(JSON.parse(files['agents/solver/adapter_config.json'] as string).base_model_name_or_path).toBe(BASE);
    expect(files['README.md']).toContain('per-agent');
    expect(files['agents/planner/adapter_model.safetensors']).not.toEqual(files['agents/solver/adapter_model.safetensors']);
  });

  it('a checkpoint zip imports and loads bit for bit (also with a top folder)', async () => {
    const s = midRunState(runConfig('per_agent', 'per_agent'), 11);
    const before = await snapshot(s);
    const store = memoryStore();
    await saveCheckpoint(gpu, s, store, 'run', { baseModel: BASE });
    const zip = await exportCheckpointZip(store, 'run');
    const files = importCheckpointZip(zip);
    expect(files['state.json']).toBeDefined();
    track(await loadCheckpoint(gpu, memoryStore(files), '', model)); // the zip's root is a checkpoint folder
    const nested = zipFiles(Object.fromEntries(Object.entries(files).map(([p, b]) => [`ckpt-000012/${p}`, b])));
    const loaded = track(await loadCheckpoint(gpu, memoryStore(importCheckpointZip(nested)), '', model));
    await expectSameState(loaded, s, before);
    expect(() => importCheckpointZip(zipFiles({ 'x/config.json': '{}' }))).toThrow(/no state\.json/);
  });
});
