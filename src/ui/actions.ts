// Module-level actions: everything that talks to the worker. Components call these; worker events land in
// the store through the RunEvents handlers registered here (comlink.proxy).

import * as Comlink from 'comlink';
import { type RunConfig, parseRunConfig } from '../config/run-config.ts';
import { presetGraph } from '../config/presets.ts';
import { PRESET_RUNS, presetRunConfig } from '../config/run-presets.ts';
import type { CreditMethod, InspectedLine, Result, RunEvents, RunPlan, WorkerError } from '../worker/api.ts';
import { getEngine, onEngineGone, pageWarmUp, restartEngine } from '../worker/client.ts';
import { type DatasetEnv, archiveKind, readDataset } from './builder/DatasetPreview.tsx';
import { saveDownload } from './download.ts';
import { PRESET_CHOICES } from './defaults.ts';
import {
  addNotice,
  appendMetrics,
  editDraft,
  freshAgentIds,
  patchInspector,
  patchInternal,
  patchRun,
  resetMetrics,
  selectRunActive,
  setDraft,
  setTab,
  useLab,
} from './store.ts';

const get = useLab.getState;
const set = useLab.setState;

/** The error of a Result as a notice; the value or null. */
function take<T>(r: Result<T>, context: string): T | null {
  if (r.ok) return r.value;
  addNotice(r.error, context);
  return null;
}

export const asError = (e: unknown): WorkerError => ({
  code: 'WORKER',
  message: e instanceof Error ? e.message : String(e),
  hint: 'Reload the page; your runs are kept in the browser storage.',
});

async function call<T>(context: string, f: () => Promise<Result<T>>): Promise<T | null> {
  try {
    return take(await f(), context);
  } catch (e) {
    addNotice(asError(e), context);
    return null;
  }
}

/**
 * Like call, for an action that shows 'loading' before the worker answers: a failure marks the run's status
 * 'error', except a refusal (MODEL_IN_USE: an export is running), which started nothing and puts the status back.
 */
async function callLoading<T>(context: string, f: () => Promise<Result<T>>): Promise<T | null> {
  const { status, message } = get().run;
  let r: Result<T>;
  try {
    r = await f();
  } catch (e) {
    r = { ok: false, error: asError(e) };
  }
  if (!r.ok) patchRun(r.error.code === 'MODEL_IN_USE' ? { status, message } : { status: 'error' });
  return take(r, context);
}

// ---- a run interrupted by a reload ----

// The run in training, kept in this browser while it trains: after a reload or a closed tab the page finds
// it and offers to continue it (its checkpoints are in OPFS; the worker of the old page is gone).
const TRAINING_KEY = 'marft-lab.training';

function markTraining(runId: string | null): void {
  try {
    if (runId) localStorage.setItem(TRAINING_KEY, runId);
    else localStorage.removeItem(TRAINING_KEY);
  } catch {
    /* storage disabled: no offer after a reload */
  }
}

function markedTraining(): string | null {
  try {
    return localStorage.getItem(TRAINING_KEY);
  } catch {
    return null;
  }
}

/** At start-up, with the runs listed: the run that was training when the page went away, if it is still stored. */
function findInterrupted(): void {
  const id = markedTraining();
  if (!id || get().run.runId !== null) return;
  const r = get().runs.find((x) => x.id === id);
  if (!r || !r.checkpoints.length) {
    markTraining(null);
    return;
  }
  const latest = r.checkpoints.find((c) => c.latest) ?? r.checkpoints[r.checkpoints.length - 1];
  set({ interrupted: { runId: id, iteration: latest.iteration } });
}

/** The Train tab's offer: open the interrupted run and continue training it (or leave it paused). */
export async function continueInterrupted(train: boolean): Promise<void> {
  const i = get().interrupted;
  if (!i) return;
  set({ interrupted: null });
  if ((await openRun(i.runId)) && train) await resumeTraining();
}

export function dismissInterrupted(): void {
  set({ interrupted: null });
  markTraining(null);
}

// ---- worker events ----

const events: RunEvents = {
  onStatus(e) {
    const started =
      e.status === 'running'
        ? (get().run.startedAt ?? Date.now())
        : e.status === 'pausing' || e.status === 'stopping'
          ? get().run.startedAt
          : null;
    patchRun({ status: e.status, runId: e.runId, iteration: e.iteration, total: e.total, message: e.message ?? '', startedAt: started });
    if (e.status === 'running') markTraining(e.runId);
    else if (e.status === 'paused' || e.status === 'stopped' || e.status === 'done' || e.status === 'error') markTraining(null);
    if (e.status === 'done' || e.status === 'paused' || e.status === 'stopped' || e.status === 'error') {
      patchRun({ phase: '', detail: '' });
      void refreshRuns();
    }
  },
  onProgress(e) {
    patchRun({ phase: e.phase, detail: e.detail });
  },
  onIteration(e) {
    appendMetrics(e.metrics);
    patchRun({ iteration: e.metrics.iteration + 1, startedAt: Date.now() });
    // the episode in view (or an older iteration picked) stays until the user moves on; otherwise the tab follows the newest iteration
    const ins = get().inspector;
    if (ins.iteration === null || (ins.selected === null && ins.iteration === ins.newest))
      patchInspector({ iteration: e.metrics.iteration, episodes: e.episodes, primary: null, secondary: null, token: null });
    patchInspector({ newest: e.metrics.iteration });
    void refreshKept();
    if (e.notice) addNotice({ code: 'CHECKPOINT', message: e.notice }, `iteration ${e.metrics.iteration}`, 'info');
    if (e.profile) set({ profile: { armed: false, last: e.profile } });
  },
  onCheckpoint(e) {
    if (e.runId !== get().run.runId) return;
    if (e.saving) {
      patchRun({ checkpointSaving: e.iteration });
      return;
    }
    if ('failed' in e) {
      patchRun({ checkpointSaving: null }); // the notice says why
      return;
    }
    patchRun({ checkpoint: e.checkpoint, checkpointIteration: e.iteration, checkpointAt: e.savedAt, checkpointSaving: null });
    if (get().run.status !== 'running') void refreshRuns(); // a halted run's last write lands after it shows paused
  },
  onLoaded(e) {
    set({ interrupted: null });
    resetMetrics(e.history);
    setDraft(e.config, { runConfig: e.config, copyOf: null }); // the builder shows the loaded run's settings, read-only
    patchRun({
      runId: e.runId,
      roles: e.config.graph.agents.map((a) => a.role),
      checkpoint: e.checkpoint,
      checkpointIteration: null,
      checkpointAt: null,
      checkpointSaving: null,
      iteration: e.history.length ? e.history[e.history.length - 1].iteration + 1 : 0,
    });
    patchInspector({ iteration: null, newest: null, kept: [], episodes: [], selected: null, primary: null, secondary: null, token: null });
  },
  onNotice(e) {
    addNotice(e, 'training', e.code === 'DEVICE_LOST' || e.code === 'DEMO_COPY' ? 'info' : 'error');
  },
};

export async function connectEngine(): Promise<void> {
  if (get().internal.engineWired) return;
  patchInternal({ engineWired: true });
  if (!get().internal.engineWatched) {
    patchInternal({ engineWatched: true });
    onEngineGone((reason) => {
      set({ engine: { gone: reason, restarting: false } });
      const training = selectRunActive(get());
      patchInternal({ trainingWhenGone: training });
      if (training) patchRun({ status: 'error', message: 'the engine stopped', phase: '', detail: '' });
    });
  }
  await getEngine().setEvents(Comlink.proxy(events));
  void refreshRuns().then(findInterrupted);
  void refreshLocalModels();
  if (get().model.status === 'idle') void chooseModel(get().draft.model.path);
}

/**
 * A fresh engine after its worker was found gone: the GPU probed again, events rewired, the model reloaded,
 * and the run in view reopened from its last checkpoint (in the browser's storage), training again if it was.
 */
export async function restartEngineAndResume(): Promise<void> {
  const { runId } = get().run;
  set({ engine: { gone: get().engine.gone, restarting: true } });
  restartEngine();
  patchInternal({ engineWired: false });
  try {
    const r = await getEngine().probe();
    if (!r.ok) throw new Error(r.error.message);
    set({ model: { status: 'idle', info: null, error: null } });
    await connectEngine();
    if (runId) {
      patchRun({ status: 'loading', message: `opening ${runId}` });
      const opened = await call('reopening the run after the restart', () => getEngine().openRun(runId));
      if (!opened) patchRun({ status: 'error' });
      else if (get().internal.trainingWhenGone) void resumeTraining();
    }
    patchInternal({ trainingWhenGone: false });
    set({ engine: { gone: null, restarting: false } });
  } catch (e) {
    set({
      engine: {
        gone: `${get().engine.gone ?? ''}; the restart failed too (${e instanceof Error ? e.message : String(e)})`,
        restarting: false,
      },
    });
  }
}

// ---- builder ----

export function choosePreset(id: string): void {
  const choice = PRESET_CHOICES.find((c) => c.id === id);
  if (!choice) return;
  const graph = presetGraph(choice.preset, { anonymous: choice.anonymous });
  for (const a of graph.agents) a.maxNewTokens = get().draft.graph.agents[0]?.maxNewTokens ?? PRESET_RUNS.lab.maxNewTokens;
  editDraft((d, ids) => {
    d.graph = graph;
    ids.splice(0, ids.length, ...freshAgentIds(graph.agents.length));
  });
  set({ preset: id, selectedAgent: 0, connectFrom: null });
}

/** Puts a preset run config (configs/<name>.json, e.g. classroom) in the builder; the page link /?config=<name> calls it. */
export function loadPresetRun(name: string): boolean {
  const c = presetRunConfig(name);
  if (!c) {
    addNotice(
      {
        code: 'CONFIG_UNKNOWN',
        message: `there is no preset run config "${name}"`,
        hint: `Use one of: ${Object.keys(PRESET_RUNS).join(', ')}.`,
      },
      'opening the page link',
    );
    return false;
  }
  const p = PRESET_RUNS[name];
  setDraft(parseRunConfig(c), { preset: p.anonymous ? `${p.preset}-anon` : p.preset, selectedAgent: 0, connectFrom: null });
  return true;
}

/** A new model request: the latest one wins (an automatic check at start-up must not overwrite a later pick). */
function nextModelRequest(): number {
  const req = get().internal.modelRequest + 1;
  patchInternal({ modelRequest: req });
  set({ kernels: { status: 'idle', made: 0, asked: 0, seconds: null } });
  return req;
}

export async function chooseModel(path: string): Promise<void> {
  const req = nextModelRequest();
  editDraft((d) => {
    d.model.path = path;
  });
  set({ model: { status: 'loading', info: null, error: null } });
  const r = await getEngine()
    .loadModel(path)
    .catch((e) => ({ ok: false as const, error: asError(e) }));
  if (req !== get().internal.modelRequest) return;
  set({ model: r.ok ? { status: 'ready', info: r.value, error: null } : { status: 'error', info: null, error: r.error } });
  if (r.ok) void prepareKernels();
}

/**
 * After a model loads: the engine makes the pipelines of the builder's first iteration (a thrown-away
 * iteration, stopped by anything that needs the model) so that the first Step does not wait for them.
 * Skipped by the engine where the kernel cache prepared them already, and by default on a CPU adapter
 * (?warmup=on|off decides instead). Only a speed-up: a failure is logged.
 */
export async function prepareKernels(): Promise<void> {
  const req = get().internal.modelRequest;
  const current = () => req === get().internal.modelRequest;
  set({ kernels: { status: 'preparing', made: 0, asked: 0, seconds: null } });
  const onMade = Comlink.proxy((made: number, asked: number) => {
    if (current() && get().kernels.status === 'preparing') set({ kernels: { ...get().kernels, made, asked } });
  });
  const r = await getEngine()
    .prepareKernels(get().draft, pageWarmUp(), onMade)
    .catch((e) => ({ ok: false as const, error: asError(e) }));
  if (!current()) return;
  if (!r.ok) console.warn(`the kernels were not prepared ahead: ${r.error.message}`);
  set({
    kernels:
      r.ok && r.value
        ? { status: 'ready', made: r.value.made, asked: r.value.made, seconds: r.value.seconds }
        : { status: 'idle', made: 0, asked: 0, seconds: null },
  });
}

/**
 * The memory plan of `config` on its model and this GPU, or null where the engine cannot make one (no
 * device, a model that does not load): the Build tab then shows the time estimate alone, with no notice.
 */
export async function planConfig(config: RunConfig): Promise<RunPlan | null> {
  try {
    const r = await getEngine().plan(config);
    return r.ok ? r.value : null;
  } catch {
    return null;
  }
}

export async function importModelFolder(files: File[]): Promise<void> {
  const req = nextModelRequest();
  set({ model: { status: 'loading', info: null, error: null } });
  const r = await getEngine()
    .importModelFolder(files)
    .catch((e) => ({ ok: false as const, error: asError(e) }));
  if (req !== get().internal.modelRequest) return;
  if (r.ok) {
    editDraft((d) => {
      d.model.path = r.value.path;
    });
    set({ model: { status: 'ready', info: r.value, error: null } });
    void prepareKernels();
    void refreshLocalModels();
  } else set({ model: { status: 'error', info: null, error: r.error } });
  void refreshStorage();
}

export async function refreshLocalModels(): Promise<void> {
  const r = await getEngine()
    .listLocalModels()
    .catch(() => null);
  if (r?.ok) set({ localModels: r.value });
}

/**
 * Reads an uploaded dataset (or the code env's tasks), checks it here, and puts its text into env.options.
 * A file that is refused changes nothing: the environment keeps the dataset it had, and the panel says why.
 */
export async function uploadDataset(file: File, env: DatasetEnv = 'dataset'): Promise<void> {
  const bytes = new Uint8Array(await file.arrayBuffer());
  const archive = archiveKind(bytes);
  const read = archive
    ? {
        error: {
          code: 'DATASET_ARCHIVE',
          message: `${file.name} is ${archive}, not a JSON / JSONL file`,
          hint: 'Unpack it and upload the .json or .jsonl inside; a checkpoint zip goes to Runs, "Import checkpoint zip…".',
        },
      }
    : readDataset(new TextDecoder().decode(bytes), file.name, env);
  if (read.error) {
    set({ datasetRejected: { name: file.name, error: read.error } });
    return;
  }
  const text = new TextDecoder().decode(bytes);
  editDraft((d) => {
    d.env = { name: env, options: { ...d.env.options, data: text, source: file.name } };
  });
  set({ datasetRejected: null });
}

// ---- training ----

/** A new run from the builder's config (or, when a run is paused or stopped and `fresh` is false, continues it). */
export async function startTraining(paused = false, fresh = false): Promise<void> {
  const { draft, issues, run } = get();
  if (issues.length) {
    addNotice(
      {
        code: 'CONFIG_INVALID',
        message: `the run config has ${issues.length} problem${issues.length > 1 ? 's' : ''}: ${issues[0].message}`,
        hint: 'Fix the fields marked in the builder.',
      },
      'starting a run',
    );
    setTab('build');
    return;
  }
  if ((run.status === 'paused' || (run.status === 'stopped' && run.runId !== null)) && !fresh) {
    await (paused ? stepTraining() : resumeTraining());
    return;
  }
  patchRun({ status: 'loading', message: 'loading the model', roles: draft.graph.agents.map((a) => a.role) });
  setTab('train');
  await callLoading('starting a run', () => getEngine().start(draft, { paused }));
}

/** Says so when the builder holds an edited copy: Continue and Step train the run with its own config. */
function noticeCopyNotApplied(what: string): void {
  const { copyOf, draft, runConfig, run } = get();
  if (copyOf === null || copyOf !== run.runId || runConfig === null || JSON.stringify(draft) === JSON.stringify(runConfig)) return;
  addNotice(
    {
      code: 'CONFIG_COPY',
      message: `${what} trains run ${copyOf} with its own config; the builder's edited copy is not applied to it`,
      hint: 'Use "New run" to train the edited copy, or "Back to the run\'s config" above the builder.',
    },
    what.toLowerCase(),
    'info',
  );
}

export function resumeTraining(until?: number): Promise<unknown> {
  noticeCopyNotApplied('Continue');
  return call('continuing the run', () => getEngine().resume(until));
}
/** Pause and Stop show at once; the worker's status events confirm (the run acts within seconds). */
export function pauseTraining(): Promise<void> {
  if (get().run.status === 'running') patchRun({ status: 'pausing', message: 'pausing…' });
  return getEngine().pause();
}

export function stopTraining(): Promise<void> {
  if (['running', 'pausing', 'recovering'].includes(get().run.status)) patchRun({ status: 'stopping', message: 'stopping…' });
  return getEngine().stop();
}

/** Arms (or disarms) profiling of the next iteration to start (Step, or the next one of a running run). */
export async function profileNextIteration(on: boolean): Promise<void> {
  set({ profile: { ...get().profile, armed: on } }); // at once, as a checkbox should; the worker confirms
  const r = await call('arming the profiler', () => getEngine().profileNext(on));
  set({ profile: { ...get().profile, armed: r ? r.armed : !on } });
}

export async function stepTraining(): Promise<void> {
  const s = get().run.status;
  if (s === 'idle' || s === 'error' || (s !== 'paused' && !get().run.runId)) {
    await startTraining(true);
    return;
  }
  noticeCopyNotApplied('Step');
  await call('stepping', () => getEngine().step());
}

// ---- inspector ----

export async function inspect(episode: number): Promise<void> {
  patchInspector({ selected: episode, loading: true, token: null });
  const eng = getEngine();
  const { compare, iteration } = get().inspector;
  const it = iteration ?? undefined;
  const [a, b] = await Promise.all([
    eng.inspect(episode, undefined, it),
    compare ? eng.inspect(episode, compare, it) : Promise.resolve(null),
  ]);
  patchInspector({ loading: false, primary: take(a, 'inspecting an episode'), secondary: b ? take(b, 'inspecting an episode') : null });
}

/** The iterations the run keeps, for the picker. */
export async function refreshKept(): Promise<void> {
  const kept = await call('reading the kept iterations', () => getEngine().keptIterations());
  if (kept) patchInspector({ kept });
}

/** Moves the Inspect tab to a kept iteration (the user's choice: the view stays there until the next one). */
export function pickIteration(iteration: number): void {
  const k = get().inspector.kept.find((x) => x.iteration === iteration);
  if (k) patchInspector({ iteration, episodes: k.episodes, selected: null, primary: null, secondary: null, token: null });
}

/** The iteration in view's episodes as recorded-episodes JSONL (the input of `marft inspect`). */
export async function downloadEpisodes(): Promise<void> {
  const d = await call('exporting the episodes', () => getEngine().exportEpisodes(get().inspector.iteration ?? undefined));
  if (d) saveDownload(d);
}

/** The iteration in view's episodes as recorded-episodes JSONL lines (the sandbox loads one of them). */
export async function recordedEpisodeLines(): Promise<string[] | null> {
  const d = await call('reading the recorded episodes', () => getEngine().exportEpisodes(get().inspector.iteration ?? undefined));
  return d
    ? new TextDecoder()
        .decode(d.bytes)
        .split('\n')
        .filter((l) => l.trim())
    : null;
}

/** The sandbox's numbers: the worker runs `marft inspect`'s code (computeTargets) on the episode. */
export async function creditSandbox(config: RunConfig, jsonl: string): Promise<Result<InspectedLine[]>> {
  try {
    return await getEngine().creditSandbox(config, jsonl);
  } catch (e) {
    return { ok: false, error: asError(e) };
  }
}

export async function setCompare(method: CreditMethod | null): Promise<void> {
  patchInspector({ compare: method });
  const sel = get().inspector.selected;
  if (sel !== null) await inspect(sel);
}

// ---- runs, downloads ----

export async function refreshRuns(): Promise<void> {
  void refreshStorage();
  const r = await getEngine()
    .listRuns()
    .catch((e) => ({ ok: false as const, error: asError(e) }));
  if (r.ok) set({ runs: r.value, runsLoaded: true });
  else {
    set({ runsLoaded: true });
    addNotice(r.error, 'listing saved runs');
  }
}

/** Opens a stored run paused, on the Train tab; whether it opened. */
export async function openRun(runId: string, checkpoint?: string): Promise<boolean> {
  const r = await callLoading('resuming a run', () => {
    patchRun({ status: 'loading', message: `opening ${runId}` });
    return getEngine().openRun(runId, checkpoint);
  });
  if (r) setTab('train');
  return r !== null;
}

/** The bundled demo run, opened paused: its curves in Train, its last iteration's episodes in Inspect; the tab stays where it was opened. */
export async function openDemo(): Promise<void> {
  patchRun({ status: 'loading', message: 'opening the demo run' });
  const r = await call('opening the demo run', () => getEngine().openDemo());
  if (!r) {
    patchRun({ status: 'error' });
    return;
  }
  patchInspector({ iteration: r.inspectIteration, episodes: r.episodes, selected: null, primary: null, secondary: null, token: null });
  await refreshRuns();
}

/** Adds a saved run's metric history to the Train charts as an overlay, or takes it off again. */
export async function toggleOverlay(runId: string): Promise<void> {
  if (get().overlays.some((o) => o.runId === runId)) {
    set({ overlays: get().overlays.filter((o) => o.runId !== runId) });
    return;
  }
  // The box shows checked at once (an empty overlay) while the history loads; a failed read takes it off again.
  set({ overlays: [...get().overlays, { runId, history: [] }] });
  const history = await call(`reading the metrics of ${runId}`, () => getEngine().runHistory(runId));
  if (!get().overlays.some((o) => o.runId === runId)) return; // unticked while loading
  set({
    overlays: history
      ? get().overlays.map((o) => (o.runId === runId ? { runId, history } : o))
      : get().overlays.filter((o) => o.runId !== runId),
  });
}

export async function deleteRun(runId: string): Promise<void> {
  set({ overlays: get().overlays.filter((o) => o.runId !== runId) });
  await call('deleting a run', () => getEngine().deleteRun(runId));
  await refreshRuns();
}

/** Re-reads the Storage panel's numbers (usage, quota, per run and model sizes). */
export async function refreshStorage(): Promise<void> {
  const r = await call('reading the browser storage', () => getEngine().storageUsage());
  if (r) set({ storage: r });
}

/** The Runs tab with fresh storage numbers (from a storage-full message). */
export async function openStorage(): Promise<void> {
  setTab('runs');
  await refreshStorage();
}

export async function deleteLocalModel(path: string): Promise<void> {
  await call('deleting a local model', () => getEngine().deleteLocalModel(path));
  await Promise.all([refreshLocalModels(), refreshStorage()]);
}

/** PEFT adapters of the loaded run, or of a stored run's checkpoint (latest when not named) when runId is given. */
export async function downloadAdapters(runId?: string, checkpoint?: string): Promise<void> {
  const d = await call('exporting the adapters', () => getEngine().exportAdapters(runId, checkpoint));
  if (d) saveDownload(d);
}

/** The base model folder of config.model.path ('' = built in) as a zip, for Python beside the adapters. */
export async function downloadBaseModel(path: string): Promise<void> {
  const d = await call('zipping the base model', () => getEngine().exportBaseModel(path));
  if (d) saveDownload(d);
}

export async function downloadCheckpoint(runId: string, checkpoint?: string): Promise<void> {
  const d = await call('exporting a checkpoint', () => getEngine().exportCheckpoint(runId, checkpoint));
  if (d) saveDownload(d);
}

/** One agent of a run's checkpoint (latest when not named) as an ONNX zip; progress and result in onnxExport. */
export async function downloadOnnx(runId: string, role: string, checkpoint?: string): Promise<void> {
  if (get().onnxExport?.status === 'running') return;
  const what = `${role}.onnx from ${runId}${checkpoint ? `/${checkpoint}` : ''}`;
  set({
    onnxExport: {
      runId,
      role,
      checkpoint: checkpoint ?? null,
      status: 'running',
      message: `exporting ${what}: merging the adapter into the base model…`,
    },
  });
  const d = await call(`exporting agent ${role} as ONNX`, () => getEngine().exportOnnx(runId, role, checkpoint));
  if (d) saveDownload(d);
  set({
    onnxExport: {
      runId,
      role,
      checkpoint: checkpoint ?? null,
      status: d ? 'done' : 'error',
      message: d
        ? `saved ${d.name} (${(d.bytes.length / 2 ** 20).toFixed(1)} MiB; ${d.summary ?? ''})`
        : `exporting ${what} failed: see the message above`,
    },
  });
}

export async function importCheckpoint(file: File): Promise<void> {
  const bytes = new Uint8Array(await file.arrayBuffer());
  const r = await call('importing a checkpoint', () => getEngine().importCheckpoint(Comlink.transfer(bytes, [bytes.buffer]), file.name));
  if (r)
    addNotice(
      { code: 'IMPORTED', message: `imported ${file.name} as run ${r.id} (iteration ${r.checkpoints[0]?.iteration ?? '?'})` },
      'importing a checkpoint',
      'info',
    );
  await refreshRuns();
}

/**
 * A training log (`marft train --json` lines, e.g. a learning-matrix row's <row>-s<seed>.jsonl, or a
 * checkpoint's state.json) overlaid on the Train charts as `log: <file>`, beside the saved runs; unticking
 * it in Runs (toggleOverlay) takes it off again. Loading the same file again replaces its curves.
 */
export async function overlayLog(file: File): Promise<void> {
  const bytes = new Uint8Array(await file.arrayBuffer());
  const history = await call(`reading the training log ${file.name}`, () =>
    getEngine().readMetricsLog(Comlink.transfer(bytes, [bytes.buffer]), file.name),
  );
  if (!history) return;
  const runId = `log: ${file.name}`;
  set({ overlays: [...get().overlays.filter((o) => o.runId !== runId), { runId, history }] });
}

export { setDraft };
