// The engine's Web Worker: owns the GPU device, the model and the training loop, so the UI thread never
// blocks on GPU work. Every call answers a Result (errors as catalogue data); progress goes out through
// the RunEvents proxy the UI registers (see runner.ts).

import * as Comlink from 'comlink';
import { embeddingForward } from '../../kernels/embedding/embedding.ts';
import { exportCheckpointZip, readCheckpointFiles } from '../marft/checkpoint/checkpoint.ts';
import { exportAdapters } from '../marft/export/peft.ts';
import { tryModule, useSandbox } from '../marft/env-modules.ts';
import { browserSandbox } from '../platform/sandbox/browser.ts';
import { zipFiles } from '../platform/zip.ts';
import type { Gpu } from '../gpu/gpu.ts';
import { BUILTIN_MODEL, type Download, type EngineApi, type ProbeResult, type Result, toWorkerError } from './api.ts';
import { WorkerFail } from './errors.ts';
import { inspectEpisode } from './inspect.ts';
import { importFolderToOpfs, modelFilesFor, modelsStore } from './model-source.ts';
import { agentAdapter, agentLogits, agentOnnxZip } from './onnx-export.ts';
import * as runner from './runner.ts';
import { deleteRun, importCheckpoint, listRuns, runsStore } from './runs.ts';
import { currentGpu, getGpu, getModel, modelsBase } from './session.ts';

async function kernelCheck(g: Gpu): Promise<ProbeResult['kernelCheck']> {
  const [V, C] = [5, 3];
  const weight = Array.from({ length: V * C }, (_, i) => i * 0.5 - 3);
  const ids = [4, 0, 2];
  const tIds = g.upload(ids, [ids.length], 'i32', 'probe.ids');
  const tW = g.upload(weight, [V, C], 'f32', 'probe.w');
  const out = g.tensor([ids.length, C], 'f32', 'probe.out');
  embeddingForward(g, out, tIds, tW);
  const got = await g.read(out);
  g.release(tIds, tW, out);
  const want = ids.flatMap((v) => weight.slice(v * C, v * C + C));
  const ok = want.every((w, i) => got[i] === w);
  return { ok, detail: ok ? 'embedding gather matches the CPU' : `embedding gather mismatch: got ${Array.from(got)}` };
}

/** Runs `f`, turning any throw into a Result error. */
async function wrap<T>(f: () => Promise<T> | T): Promise<Result<T>> {
  try {
    return { ok: true, value: await f() };
  } catch (e) {
    console.error(e);
    return { ok: false, error: toWorkerError(e) };
  }
}

useSandbox(browserSandbox); // users' environment modules run in Blob-URL Workers of their own

const transferDownload = (d: Download): Result<Download> => Comlink.transfer({ ok: true as const, value: d }, [d.bytes.buffer as ArrayBuffer]);

const api: EngineApi = {
  probe: () => wrap(async () => {
    const gpu = await getGpu();
    const l = gpu.limits;
    return {
      adapter: gpu.adapter,
      limits: { maxStorageBufferBindingSize: l.maxStorageBufferBindingSize, maxBufferSize: l.maxBufferSize, maxComputeWorkgroupStorageSize: l.maxComputeWorkgroupStorageSize },
      kernelCheck: await kernelCheck(gpu),
      timestampQuery: gpu.hasTimestamps,
    };
  }),
  async setEvents(events) {
    runner.setEvents(events);
  },
  loadModel: (path) => wrap(async () => (await getModel(path)).info),
  importModelFolder: (files) => wrap(async () => {
    const path = await importFolderToOpfs(files);
    try {
      return (await getModel(path)).info;
    } catch (e) {
      await modelsStore().remove(path.split('/').pop()!).catch(() => {}); // do not keep a folder that does not load
      throw e;
    }
  }),
  listLocalModels: () => wrap(async () => {
    const s = modelsStore();
    return (await s.list('')).filter((e) => e.kind === 'directory').map((e) => `opfs:models/${e.name}`);
  }),
  start: (config, options) => wrap(async () => ({ runId: await runner.startRun(config, options?.paused ?? false) })),
  openRun: (runId, checkpoint) => wrap(async () => ({ runId, iteration: await runner.openRun(runId, checkpoint) })),
  resume: (until) => wrap(() => runner.resume(until)),
  async pause() { runner.pause(); },
  step: () => wrap(() => runner.step()),
  tryEnvModule: (t) => wrap(() => tryModule(t)),
  profileNext: (on) => wrap(() => ({ armed: runner.armProfile(on) })),
  async stop() { runner.stop(); },
  listRuns: () => wrap(listRuns),
  deleteRun: (id) => wrap(async () => {
    if (runner.getActive()?.runId === id && runner.isLooping()) throw new WorkerFail('BUSY', 'this run is training');
    await deleteRun(id);
  }),
  inspect: (episode, method) => wrap(() => {
    const last = runner.getLast();
    const a = runner.getActive();
    if (!last || !a) throw new WorkerFail('NO_EPISODES', 'no iteration has run since this run was loaded');
    const tok = a.model.tokenizer;
    return inspectEpisode({ ...last, decode: (ids) => tok.decode(ids, { skipSpecialTokens: false }) }, episode, method);
  }),
  async exportAdapters() {
    const r = await wrap(async (): Promise<Download> => {
      const a = runner.getActive();
      if (!a) throw new WorkerFail('NO_RUN', 'no run is loaded');
      const base = a.state.config.model.path || BUILTIN_MODEL;
      let files: Record<string, Uint8Array | string>;
      let iteration = a.state.iteration;
      if (runner.isLooping()) {
        // mid-iteration the adapters are being updated: take them from the last checkpoint instead
        const ck = await readCheckpointFiles(runsStore(), a.runId);
        iteration = ck.manifest.iteration;
        files = Object.fromEntries(Object.entries(ck.files).filter(([p]) => p.startsWith('agents/') || p === 'config.json'));
      } else files = await exportAdapters(a.model.gpu, a.state, { baseModel: base });
      return { name: `marft-adapters-${a.runId}-it${iteration}.zip`, bytes: zipFiles(files) };
    });
    return r.ok ? transferDownload(r.value) : r;
  },
  async exportCheckpoint(runId, checkpoint) {
    const r = await wrap(async (): Promise<Download> => {
      const dir = checkpoint ? `${runId}/${checkpoint}` : runId;
      const bytes = await exportCheckpointZip(runsStore(), dir);
      return { name: `marft-checkpoint-${runId}${checkpoint ? `-${checkpoint}` : ''}.zip`, bytes };
    });
    return r.ok ? transferDownload(r.value) : r;
  },
  async exportOnnx(runId, role, checkpoint) {
    const r = await wrap(async (): Promise<Download> => {
      const ck = await readCheckpointFiles(runsStore(), checkpoint ? `${runId}/${checkpoint}` : runId);
      const { config } = agentAdapter(ck, role);
      return agentOnnxZip(ck, role, await modelFilesFor(config.model.path, modelsBase()), runId);
    });
    return r.ok ? transferDownload(r.value) : r;
  },
  agentLogits: (runId, role, ids, checkpoint) => wrap(async () => {
    if (runner.isLooping()) throw new WorkerFail('BUSY', 'the lab is training: its decoder is in use');
    const ck = await readCheckpointFiles(runsStore(), checkpoint ? `${runId}/${checkpoint}` : runId);
    const m = await getModel(agentAdapter(ck, role).config.model.path);
    return { logits: await agentLogits(ck, role, m.decoder, m.info.name, ids), vocabSize: m.config.vocabSize };
  }),
  importCheckpoint: (bytes, fileName) => wrap(() => importCheckpoint(bytes, fileName)),
  async debugLoseDevice() {
    currentGpu()?.device.destroy();
  },
};

Comlink.expose(api);
