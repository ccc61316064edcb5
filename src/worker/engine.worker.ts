// The engine's Web Worker: owns the session (GPU device and model) and the loaded run, so the UI thread
// never blocks on GPU work. A thin adapter over src/marft: every call answers a Result (errors as catalogue
// data), and the run's events go out through the RunEvents proxy the UI registers.

import * as Comlink from 'comlink';
import { exportCheckpointZip, readCheckpointFiles } from '../marft/checkpoint/checkpoint.ts';
import { MarftError } from '../marft/errors.ts';
import { agentAdapter, agentOnnxZip } from '../marft/export/agent.ts';
import { sessionAgentLogits } from '../marft/export/session-logits.ts';
import { inspectEpisode } from '../marft/inspect.ts';
import { episodesToJsonl } from '../marft/inspect-jsonl.ts';
import { type RunEvents, Run } from '../marft/run.ts';
import { Session } from '../marft/session.ts';
import { tryModule, useSandbox } from '../marft/env-modules.ts';
import { browserSandbox } from '../platform/sandbox/browser.ts';
import { zipFiles } from '../platform/zip.ts';
import { type Download, type EngineApi, type ModelInfo, type Result, toWorkerError } from './api.ts';
import { WorkerFail } from './errors.ts';
import { importFolderToOpfs, isHiddenFolder, modelFilesFor, modelsStore, weightBytes } from './model-source.ts';
import { deleteLocalModel, storageUsage } from './storage.ts';
import { browserPlatform, modelsBase } from './platform.ts';
import { deleteRun, importCheckpoint, listRuns, newRunId, runMetaFile, runsStore } from './run-folders.ts';

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

/** The UI's RunEvents once it registers them; until then events go nowhere. */
let ui: RunEvents | null = null;
const forward: RunEvents = {
  onStatus: (e) => ui?.onStatus(e),
  onProgress: (e) => ui?.onProgress(e),
  onIteration: (e) => ui?.onIteration(e),
  onLoaded: (e) => ui?.onLoaded(e),
  // a paused run continues from the Train button: once space is freed, or to retry a failed environment module
  onNotice: (e) => ui?.onNotice(e.code !== 'RUN_PAUSED' ? e : {
    ...e, message: `${e.message} ${e.pauseReason === 'environment' ? 'Press Train to retry from it; a fixed module starts a new run from the Build tab.' : 'Free some space (Runs tab, Storage panel) and press Train to continue.'}`,
  }),
};

const session = new Session(browserPlatform);
const run = new Run(session, runsStore, forward);

async function modelInfo(path: string): Promise<ModelInfo> {
  const m = await session.load(path);
  return { ...m.summary, path, bytes: await weightBytes(m.source.files) };
}

const api: EngineApi = {
  probe: () => wrap(() => session.probe()),
  async setEvents(events) {
    ui = events;
  },
  loadModel: (path) => wrap(() => modelInfo(path)),
  importModelFolder: (files) => wrap(async () => {
    const path = await importFolderToOpfs(files);
    try {
      return await modelInfo(path);
    } catch (e) {
      await modelsStore().remove(path.split('/').pop()!).catch(() => {}); // do not keep a folder that does not load
      throw e;
    }
  }),
  listLocalModels: () => wrap(async () => {
    const s = modelsStore();
    return (await s.list('')).filter((e) => e.kind === 'directory' && !isHiddenFolder(e.name)).map((e) => `opfs:models/${e.name}`);
  }),
  start: (config, options) => wrap(async () => {
    if (run.busy) throw new MarftError('BUSY', 'a run is training');
    const id = newRunId();
    return { runId: await run.start(config, { id, paused: options?.paused ?? false, files: runMetaFile({ id, createdAt: new Date().toISOString(), source: 'new' }) }) };
  }),
  openRun: (runId, checkpoint) => wrap(async () => ({ runId, iteration: await run.open(runId, checkpoint) })),
  resume: (until) => wrap(() => run.train(until)),
  async pause() { run.pause(); },
  step: () => wrap(() => run.step()),
  tryEnvModule: (t) => wrap(() => tryModule(t)),
  profileNext: (on) => wrap(() => ({ armed: run.profileNext(on) })),
  async stop() { run.stop(); },
  listRuns: () => wrap(listRuns),
  deleteRun: (id) => wrap(async () => {
    if (run.id === id && run.busy) throw new MarftError('BUSY', 'this run is training');
    await deleteRun(id);
  }),
  storageUsage: () => wrap(() => storageUsage(runsStore, modelsStore())),
  deleteLocalModel: (path) => wrap(async () => {
    if (run.busy) throw new MarftError('BUSY', 'a run is training: delete models once it is paused');
    await deleteLocalModel(modelsStore(), path);
  }),
  inspect: (episode, method) => wrap(() => {
    const last = run.last;
    const m = run.model;
    if (!last || !m) throw new WorkerFail('NO_EPISODES', 'no iteration has run since this run was loaded');
    return inspectEpisode({ ...last, decode: (ids) => m.tokenizer.decode(ids, { skipSpecialTokens: false }) }, episode, method);
  }),
  async exportEpisodes() {
    const r = await wrap(async (): Promise<Download> => {
      const last = run.last;
      if (!last) throw new WorkerFail('NO_EPISODES', 'no iteration has run since this run was loaded');
      return { name: `marft-episodes-${run.id}-it${last.iteration}.jsonl`, bytes: new TextEncoder().encode(episodesToJsonl(last.config, last.episodes, last.scores)) };
    });
    return r.ok ? transferDownload(r.value) : r;
  },
  async exportAdapters() {
    const r = await wrap(async (): Promise<Download> => {
      const { files, iteration } = await run.adapterFiles();
      return { name: `marft-adapters-${run.id}-it${iteration}.zip`, bytes: zipFiles(files) };
    });
    return r.ok ? transferDownload(r.value) : r;
  },
  async exportCheckpoint(runId, checkpoint) {
    const r = await wrap(async (): Promise<Download> => {
      const dir = checkpoint ? `${runId}/${checkpoint}` : runId;
      const bytes = await exportCheckpointZip(runsStore, dir);
      return { name: `marft-checkpoint-${runId}${checkpoint ? `-${checkpoint}` : ''}.zip`, bytes };
    });
    return r.ok ? transferDownload(r.value) : r;
  },
  async exportOnnx(runId, role, checkpoint) {
    const r = await wrap(async (): Promise<Download> => {
      const ck = await readCheckpointFiles(runsStore, checkpoint ? `${runId}/${checkpoint}` : runId);
      const { config } = agentAdapter(ck, role);
      return agentOnnxZip(ck, role, await modelFilesFor(config.model.path, modelsBase()), runId);
    });
    return r.ok ? transferDownload(r.value) : r;
  },
  agentLogits: (runId, role, ids, checkpoint) => wrap(async () => {
    if (run.busy) throw new MarftError('BUSY', 'the lab is training: its decoder is in use');
    const ck = await readCheckpointFiles(runsStore, checkpoint ? `${runId}/${checkpoint}` : runId);
    return sessionAgentLogits(session, ck, role, ids);
  }),
  importCheckpoint: (bytes, fileName) => wrap(() => importCheckpoint(bytes, fileName)),
  async debugLoseDevice() {
    session.currentDevice?.device.destroy();
  },
};

Comlink.expose(api);
