// The engine's Web Worker: owns the session (GPU device and model) and the loaded run, so the UI thread
// never blocks on GPU work. A thin adapter over src/marft: every call answers a Result (errors as catalogue
// data), and the run's events go out through the RunEvents proxy the UI registers.

import * as Comlink from 'comlink';
import { exportCheckpointZip, readCheckpointFiles } from '../marft/checkpoint/checkpoint.ts';
import { MarftError } from '../marft/errors.ts';
import { agentAdapter, agentOnnxZip } from '../marft/export/agent.ts';
import { sessionAgentLogits } from '../marft/export/session-logits.ts';
import { checkpointAdaptersZip, modelFolderZip } from '../marft/export/downloads.ts';
import {
  DEMO_CHECKPOINT_FILE,
  DEMO_EPISODES_FILE,
  DEMO_RUN_ID,
  type DemoEpisodes,
  demoEpisodesJsonl,
  demoInspect,
  parseDemoEpisodes,
} from '../marft/demo-run.ts';
import { inspectEpisode } from '../marft/inspect.ts';
import { planOnModel } from '../marft/plan.ts';
import { episodesToJsonl, inspectRecorded, parseRecordedEpisodes } from '../marft/inspect-jsonl.ts';
import { Run } from '../marft/run.ts';
import { type RunEvents, summarize } from '../marft/run-events.ts';
import { parseModelConfig, Session } from '../marft/session.ts';
import { tryModule } from '../marft/env-modules.ts';
import { zipFiles } from '../platform/zip.ts';
import { type Download, type EngineApi, type ModelInfo, type Result, toWorkerError } from './api.ts';
import { WorkerFail, notKept } from './errors.ts';
import { ExportGate } from './export-gate.ts';
import { type HookPoint, TestHooks } from './test-hooks.ts';
import { BuiltinModels, importFolderToOpfs, isHiddenFolder, modelFilesFor, modelsStore, tryFetch, weightBytes } from './model-source.ts';
import { deleteLocalModel, storageUsage } from './storage.ts';
import { cancelHubDownload, downloadHubModel, hubOrigin, listHubModel } from './hub.ts';
import { browserPlatform, modelsBase } from './platform.ts';
import { TeamTrial } from './try.ts';
import { KernelWarmUp } from './warm-up.ts';
import { deleteRun, importCheckpoint, listRuns, newRunId, runHistory, runMetaFile, runsStore } from './run-folders.ts';
import { parseMetricsLog } from './metrics-log.ts';
import type { LimitsMode } from '../gpu/device.ts';

/** Runs `f`, turning any throw into a Result error. */
async function wrap<T>(f: () => Promise<T> | T): Promise<Result<T>> {
  try {
    return { ok: true, value: await f() };
  } catch (e) {
    console.error(e);
    return { ok: false, error: toWorkerError(e) };
  }
}

const transferDownload = (d: Download): Result<Download> =>
  Comlink.transfer({ ok: true as const, value: d }, [d.bytes.buffer as ArrayBuffer]);

/** Everything this worker holds, in one object: made once as the worker starts (engineState) and passed down. */
interface EngineState {
  readonly session: Session;
  readonly run: Run;
  /** One export at a time; training, opening and deleting wait for it (refused with a message naming it). */
  readonly gate: ExportGate;
  /** Try the team; what needs the model for something else stops a try in flight first (trial.makeWay). */
  readonly trial: TeamTrial;
  /** The kernel warm-up after a model loads; it too makes way (stops) for what needs the model. */
  readonly warm: KernelWarmUp;
  /** The built-in model's files, fetched once for the worker. */
  readonly builtins: BuiltinModels;
  /**
   * debugCrash / debugHold: an uncaught error reaches the page's Worker as an 'error' event; then the worker
   * ends mid-phase. Only in a build with test hooks (__TEST_HOOKS__): a production build leaves TestHooks out.
   */
  readonly hooks: TestHooks | null;
  /** The UI's RunEvents once it registers them; until then events go nowhere. */
  ui: RunEvents | null;
  /** The demo's recorded episodes, fetched once (demoRecord). */
  demoEpisodes: Promise<DemoEpisodes> | null;
  /** The Hub download in flight (one at a time): pausing aborts it; cancelling waits for it to stop, then removes its files. */
  hubRun: { ctl: AbortController; done: Promise<unknown> } | null;
  /** The limits of the devices the session opens (EngineApi.setDeviceLimits). */
  limits: LimitsMode;
}

const noHooks = (): Error => new Error('this build has no test hooks (build with `vite build --mode e2e`)');

/** The worker's state on the browser's platform (users' environment modules run in Blob-URL Workers of their own). */
function engineState(): EngineState {
  const hooks = __TEST_HOOKS__
    ? new TestHooks((why) => {
        reportError(new Error(why));
        self.close();
      })
    : null;
  const forward: RunEvents = {
    onStatus: (e) => w.ui?.onStatus(e),
    onProgress: (e) => {
      w.ui?.onProgress(e); // first: a hold below keeps this thread busy, and the page shows the phase it holds in
      hooks?.onProgress(e);
    },
    onIteration: (e) => w.ui?.onIteration(e),
    onCheckpoint: (e) => w.ui?.onCheckpoint(e),
    onLoaded: (e) => w.ui?.onLoaded(e),
    // a paused run continues from the Train button: once space is freed, or to retry a failed environment module
    onNotice: (e) =>
      w.ui?.onNotice(
        e.code !== 'RUN_PAUSED'
          ? e
          : {
              ...e,
              message: `${e.message} ${e.pauseReason === 'environment' ? 'Press Train to retry from it; a fixed module starts a new run from the Build tab.' : 'Free some space (Runs tab, Storage panel) and press Train to continue.'}`,
            },
      ),
  };
  const builtins = new BuiltinModels();
  const session = new Session(browserPlatform(builtins, () => w.limits));
  const run = new Run(session, hooks ? hooks.store(runsStore) : runsStore, forward);
  const w: EngineState = {
    session,
    run,
    gate: new ExportGate(),
    trial: new TeamTrial(session, run),
    warm: new KernelWarmUp(session, run),
    builtins,
    hooks,
    ui: null,
    demoEpisodes: null,
    hubRun: null,
    limits: 'adapter',
  };
  return w;
}

/** What needs the model for something else stops a try or a kernel warm-up in flight first, and waits for it. */
async function makeWay(w: EngineState): Promise<void> {
  await w.trial.makeWay();
  await w.warm.makeWay();
}

const exportJob = <T>(w: EngineState, what: string, f: () => Promise<T>): Promise<T> =>
  w.gate.run(what, async () => {
    await w.warm.makeWay();
    await w.hooks?.onExport();
    return f();
  });

/** A kept iteration of the loaded run (the last when `iteration` is undefined), or NO_EPISODES. */
function kept(w: EngineState, iteration?: number) {
  const data = w.run.model ? w.run.iterationData(iteration) : null;
  if (!data) {
    if (iteration === undefined) throw new WorkerFail('NO_EPISODES', 'no iteration has run since this run was loaded');
    throw notKept(iteration, w.run.keptIterations);
  }
  return data;
}

/** The demo run opened and not trained since: Inspect shows its recorded iteration. */
const showsDemoRecord = (w: EngineState): boolean => !w.run.last && w.run.id === DEMO_RUN_ID;

/** Exports of stored runs read OPFS and merge on the CPU beside the loop: refused while a run trains, so training keeps its pace. */
function refuseWhileTraining(w: EngineState, what: string): void {
  if (w.run.busy)
    throw new MarftError(
      'MODEL_IN_USE',
      `${what} cannot start now: a run is training. Pause or stop it first (the control bar's Download adapters exports the training run's own).`,
    );
}

// ---- the bundled demo run (public/demo/, see src/marft/demo-run.ts) ----

const demoBase = (): string => new URL(`${import.meta.env.BASE_URL}demo/`, self.location.origin).href;

async function demoFile(name: string): Promise<Uint8Array> {
  const b = await tryFetch(`${demoBase()}${name}`).catch(() => null);
  if (!b) throw new MarftError('DEMO_INVALID', `the demo run's ${name} is not at ${demoBase()}`);
  return b;
}

/** The demo's recorded episodes, fetched once (a failed fetch is retried by the next call). */
function demoRecord(w: EngineState): Promise<DemoEpisodes> {
  w.demoEpisodes ??= demoFile(DEMO_EPISODES_FILE).then((b) => parseDemoEpisodes(new TextDecoder().decode(b)));
  w.demoEpisodes.catch(() => {
    w.demoEpisodes = null;
  });
  return w.demoEpisodes;
}

/** The demo run stays as shipped: continuing it first copies its checkpoint to a new run and opens that. */
async function leaveDemo(w: EngineState): Promise<void> {
  if (w.run.id !== DEMO_RUN_ID || w.run.busy) return;
  const copy = await importCheckpoint(await exportCheckpointZip(runsStore, DEMO_RUN_ID), 'the demo run');
  await w.run.open(copy.id);
  w.ui?.onNotice({ code: 'DEMO_COPY', message: `The demo run is read-only: training continues in a copy, run ${copy.id}.` });
}

async function modelInfo(w: EngineState, path: string): Promise<ModelInfo> {
  await makeWay(w);
  const m = await w.session.load(path);
  return { ...m.summary, path, bytes: await weightBytes(m.source.files) };
}

/** Loads a model just copied into OPFS; a folder that does not load is not kept. */
async function loadNewModel(w: EngineState, path: string): Promise<ModelInfo> {
  try {
    return await modelInfo(w, path);
  } catch (e) {
    await modelsStore()
      .remove(path.split('/').pop()!)
      .catch(() => {});
    throw e;
  }
}

const hubOpts = (hub: string | null, token?: string) => ({ base: hubOrigin(hub, self.location.hostname), ...(token ? { token } : {}) });

/** The worker's API over its state `w`. */
function engineApi(w: EngineState): EngineApi {
  return {
    probe: () => wrap(() => w.session.probe()),
    async setEvents(events) {
      w.ui = events;
    },
    loadModel: (path) => wrap(() => modelInfo(w, path)),
    plan: (config, budget) => wrap(async () => planOnModel(await w.session.load(config.model.path), config, { budget })),
    importModelFolder: (files) => wrap(async () => loadNewModel(w, await importFolderToOpfs(files))),
    hubList: (repo, hub, token) =>
      wrap(() =>
        listHubModel(repo, hubOpts(hub, token), (j) => {
          parseModelConfig(j);
        }),
      ),
    hubDownload: (listing, hub, progress, token) =>
      wrap(async () => {
        if (w.hubRun) throw new MarftError('BUSY', 'a Hub download is running: pause or cancel it first');
        const ctl = new AbortController();
        const done = (async () => {
          const est = await navigator.storage?.estimate?.().catch(() => null);
          const free = est?.quota && est.usage !== undefined ? est.quota - est.usage : null;
          return downloadHubModel(modelsStore(), listing, free, { ...hubOpts(hub, token), signal: ctl.signal }, progress);
        })();
        w.hubRun = { ctl, done };
        try {
          return await loadNewModel(w, await done);
        } finally {
          if (w.hubRun?.ctl === ctl) w.hubRun = null;
        }
      }),
    async hubPause() {
      w.hubRun?.ctl.abort();
    },
    hubCancel: (repo) =>
      wrap(async () => {
        const r = w.hubRun;
        r?.ctl.abort();
        await r?.done.catch(() => {});
        await cancelHubDownload(modelsStore(), repo);
      }),
    listLocalModels: () =>
      wrap(async () => {
        const s = modelsStore();
        return (await s.list('')).filter((e) => e.kind === 'directory' && !isHiddenFolder(e.name)).map((e) => `opfs:models/${e.name}`);
      }),
    start: (config, options) =>
      wrap(async () => {
        if (w.run.busy) throw new MarftError('BUSY', 'a run is training');
        w.gate.check('A new run');
        await makeWay(w);
        const id = newRunId();
        return {
          runId: await w.run.start(config, {
            id,
            paused: options?.paused ?? false,
            files: runMetaFile({ id, createdAt: new Date().toISOString(), source: 'new' }),
          }),
        };
      }),
    openRun: (runId, checkpoint) =>
      wrap(async () => {
        w.gate.check(`Opening ${runId}`);
        await makeWay(w);
        return { runId, iteration: await w.run.open(runId, checkpoint) };
      }),
    openDemo: () =>
      wrap(async () => {
        if (w.run.busy) throw new MarftError('BUSY', 'a run is training: pause it to open the demo run');
        w.gate.check('Opening the demo run');
        await makeWay(w);
        const [zip, record] = await Promise.all([demoFile(DEMO_CHECKPOINT_FILE), demoRecord(w)]);
        if ((await runsStore.stat(DEMO_RUN_ID)) === null)
          await importCheckpoint(zip, 'the demo run', runsStore, { id: DEMO_RUN_ID, source: 'demo' });
        const iteration = await w.run.open(DEMO_RUN_ID);
        return { runId: DEMO_RUN_ID, iteration, inspectIteration: record.iteration, episodes: record.episodes };
      }),
    resume: (until) =>
      wrap(async () => {
        w.gate.check('Training');
        await makeWay(w);
        await leaveDemo(w);
        w.run.train(until);
      }),
    async pause() {
      w.run.pause();
    },
    step: () =>
      wrap(async () => {
        w.gate.check('Step');
        await makeWay(w);
        await leaveDemo(w);
        w.run.step();
      }),
    tryEnvModule: (t) => wrap(() => tryModule(w.session.envs, t)),
    profileNext: (on) => wrap(() => ({ armed: w.run.profileNext(on) })),
    async stop() {
      w.run.stop();
    },
    listRuns: () => wrap(listRuns),
    runHistory: (id) => wrap(() => runHistory(id)),
    deleteRun: (id) =>
      wrap(async () => {
        if (w.run.id === id && w.run.busy) throw new MarftError('BUSY', 'this run is training');
        w.gate.check(`Deleting ${id}`);
        if (w.run.id === id) await w.run.settled(); // its last checkpoint may still be being written
        await deleteRun(id);
      }),
    storageUsage: () => wrap(() => storageUsage(runsStore, modelsStore())),
    deleteLocalModel: (path) =>
      wrap(async () => {
        if (w.run.busy) throw new MarftError('BUSY', 'a run is training: delete models once it is paused');
        w.gate.check('Deleting a model');
        await deleteLocalModel(modelsStore(), path);
      }),
    inspect: (episode, method, iteration) =>
      wrap(async () => {
        const m = w.run.model;
        if (showsDemoRecord(w)) return demoInspect(await demoRecord(w), episode, method);
        const data = kept(w, iteration);
        return inspectEpisode({ ...data, decode: (ids) => m!.tokenizer.decode(ids, { skipSpecialTokens: false }) }, episode, method);
      }),
    async exportEpisodes(iteration) {
      const r = await wrap(async (): Promise<Download> => {
        if (showsDemoRecord(w) && w.run.config) {
          const d = await demoRecord(w);
          if (iteration !== undefined && iteration !== d.iteration) throw notKept(iteration, [d.iteration]);
          return {
            name: `marft-episodes-${w.run.id}-it${d.iteration}.jsonl`,
            bytes: new TextEncoder().encode(demoEpisodesJsonl(d, w.run.config)),
          };
        }
        const data = kept(w, iteration);
        return {
          name: `marft-episodes-${w.run.id}-it${data.iteration}.jsonl`,
          bytes: new TextEncoder().encode(episodesToJsonl(data.config, data.episodes, data.scores)),
        };
      });
      return r.ok ? transferDownload(r.value) : r;
    },
    keptIterations: () =>
      wrap(() =>
        w.run.keptIterations.map((iteration) => ({ iteration, episodes: w.run.iterationData(iteration)!.episodes.map(summarize) })),
      ),
    creditSandbox: (config, jsonl) =>
      wrap(() =>
        inspectRecorded(parseRecordedEpisodes(jsonl, config, 'the sandbox episode'), config, config.credit.method, 'the sandbox episode'),
      ),
    async exportAdapters(runId, checkpoint) {
      const r = await wrap(() =>
        exportJob(w, `the adapter export of ${runId ?? 'the loaded run'}`, async (): Promise<Download> => {
          if (runId !== undefined) {
            refuseWhileTraining(w, `exporting the adapters of ${runId}`);
            return checkpointAdaptersZip(await readCheckpointFiles(runsStore, checkpoint ? `${runId}/${checkpoint}` : runId), runId);
          }
          const { files, iteration } = await w.run.adapterFiles();
          return { name: `marft-adapters-${w.run.id}-it${iteration}.zip`, bytes: zipFiles(files) };
        }),
      );
      return r.ok ? transferDownload(r.value) : r;
    },
    async exportCheckpoint(runId, checkpoint) {
      const r = await wrap(() =>
        exportJob(w, `the checkpoint export of ${runId}`, async (): Promise<Download> => {
          const dir = checkpoint ? `${runId}/${checkpoint}` : runId;
          const bytes = await exportCheckpointZip(runsStore, dir);
          return { name: `marft-checkpoint-${runId}${checkpoint ? `-${checkpoint}` : ''}.zip`, bytes };
        }),
      );
      return r.ok ? transferDownload(r.value) : r;
    },
    async exportBaseModel(path) {
      const r = await wrap(() =>
        exportJob(w, 'the base model export', async () => modelFolderZip(await modelFilesFor(path, modelsBase(), w.builtins))),
      );
      return r.ok ? transferDownload(r.value) : r;
    },
    async exportOnnx(runId, role, checkpoint) {
      const r = await wrap(() =>
        exportJob(w, `the export of ${role}.onnx from ${runId}`, async (): Promise<Download> => {
          refuseWhileTraining(w, `exporting ${role} as ONNX`);
          const ck = await readCheckpointFiles(runsStore, checkpoint ? `${runId}/${checkpoint}` : runId);
          const { config } = agentAdapter(ck, role);
          return agentOnnxZip(ck, role, await modelFilesFor(config.model.path, modelsBase(), w.builtins), runId);
        }),
      );
      return r.ok ? transferDownload(r.value) : r;
    },
    agentLogits: (runId, role, ids, checkpoint) =>
      wrap(() =>
        exportJob(w, `computing ${role}'s logits`, async () => {
          if (w.run.busy) throw new MarftError('BUSY', 'the lab is training: its decoder is in use');
          const ck = await readCheckpointFiles(runsStore, checkpoint ? `${runId}/${checkpoint}` : runId);
          return sessionAgentLogits(w.session, ck, role, ids);
        }),
      ),
    importCheckpoint: (bytes, fileName) => wrap(() => importCheckpoint(bytes, fileName)),
    readMetricsLog: (bytes, fileName) => wrap(() => parseMetricsLog(bytes, fileName)),
    tryTeam: (config, request, onEvent) =>
      wrap(async () => {
        await w.warm.makeWay();
        return w.trial.try(config, request, onEvent);
      }),
    prepareKernels: (config, mode, onMade) => wrap(() => w.warm.prepare(config, mode, onMade)),
    async tryStop() {
      w.trial.stop();
    },
    tryTask: (config, seed) => wrap(() => w.trial.task(config, seed)),
    async debugLoseDevice() {
      w.session.currentDevice?.device.destroy();
    },
    async ping() {
      return Date.now();
    },
    async setDeviceLimits(limits) {
      w.limits = limits;
    },
    async debugCrash(point?: HookPoint) {
      if (!w.hooks) throw noHooks();
      if (point) w.hooks.crash(point);
      else setTimeout(() => self.close(), 0);
    },
    async debugHold(point, iteration, onHeld) {
      if (!w.hooks) throw noHooks();
      w.hooks.hold(point, iteration, onHeld);
    },
    async debugRelease() {
      if (!w.hooks) throw noHooks();
      w.hooks.release();
    },
  };
}

Comlink.expose(engineApi(engineState()));
