// The UI store (zustand): one store of slices — gpu, builder (the run config being edited and its
// validation issues), run (status and progress from the worker), metrics (append-only series: charts
// subscribe to metricsVersion and redraw without a React render per point), inspector, runs, notices.
// Worker results land here through the module-level actions of actions.ts; selectors live here, outside
// components. Builder edits go through editDraft/setDraft, which keep the agents' stable ids and the
// undo stack, and refuse (with a notice) to change a live run's config: that is read-only until the user
// takes a copy (copyOf), whose edits apply to a new run, never silently to the run itself.

import { create } from 'zustand';
import { type ConfigIssue, type RunConfig, validateConfig } from '../config/run-config.ts';
import { graphIssues } from '../config/graph.ts';
import type { IterationMetrics } from '../config/metrics.ts';
import type {
  CreditMethod,
  EpisodeSummary,
  HubListing,
  HubProgress,
  InspectedEpisode,
  IterationProfile,
  ModelInfo,
  ProbeResult,
  RunStatus,
  RunSummary,
  StorageUsage,
  WorkerError,
} from '../worker/api.ts';
import { defaultRunConfig } from '../config/run-presets.ts';
import { type BuilderSnapshot, type History, emptyHistory, record } from './builder/history.ts';
import type { ColorBy } from './inspector/colors.ts';
import { metricValues } from './live/metric-keys.ts';
import { Series } from './live/series.ts';
import { type TryView, emptyTry } from './try/transcript.ts';

export type GpuState = { status: 'probing' } | { status: 'ready'; probe: ProbeResult } | { status: 'error'; error: WorkerError };

export type Tab = 'build' | 'train' | 'inspect' | 'try' | 'runs';

export interface Notice extends WorkerError {
  id: number;
  /** What the user was doing. */
  context: string;
  level: 'error' | 'info';
}

export interface ModelState {
  status: 'idle' | 'loading' | 'ready' | 'error';
  info: ModelInfo | null;
  error: WorkerError | null;
}

/**
 * The kernel warm-up after a model loads (the worker's prepareKernels): 'preparing' while the pipelines of a
 * first iteration are made; 'ready' once made (or stopped by something that needed the model first).
 */
export interface KernelsState {
  status: 'idle' | 'preparing' | 'ready';
  made: number;
  asked: number;
  seconds: number | null;
}

/** The Hub download panel: a listed repo waits for the user's yes; a paused download resumes from OPFS. */
export interface HubState {
  status: 'idle' | 'listing' | 'listed' | 'downloading' | 'paused' | 'error';
  listing: HubListing | null;
  progress: HubProgress | null;
  error: WorkerError | null;
}

export interface DatasetState {
  name: string;
  records: number;
  /** The first records (DatasetPreview shows them as text). */
  sample: Array<{ problem: string; answer: string }>;
  error: WorkerError | null;
}

export interface RunState {
  status: RunStatus;
  runId: string | null;
  iteration: number;
  total: number;
  message: string;
  phase: string;
  detail: string;
  roles: string[];
  /** The run's newest checkpoint in the store, and (once this page saw it written) its iteration and when. */
  checkpoint: string | null;
  checkpointIteration: number | null;
  checkpointAt: number | null;
  /** The iteration whose checkpoint is being written, null when none is. */
  checkpointSaving: number | null;
  /** Date.now() when the iteration in flight began (the time-left countdown), null when none runs. */
  startedAt: number | null;
}

export interface InspectorState {
  /** The iteration in view (it stays while the user looks at one of its episodes) and the run's newest. */
  iteration: number | null;
  newest: number | null;
  /** The iterations the run keeps (the worker's history), oldest first: the picker's choices. */
  kept: Array<{ iteration: number; episodes: EpisodeSummary[] }>;
  episodes: EpisodeSummary[];
  selected: number | null;
  colorBy: ColorBy;
  compare: CreditMethod | null;
  primary: InspectedEpisode | null;
  secondary: InspectedEpisode | null;
  token: { side: 0 | 1; action: number; token: number } | null;
  loading: boolean;
  /** The credit-assignment sandbox is open (it needs no run). */
  sandbox: boolean;
}

/** The ONNX export in flight or last finished (one at a time: the worker merges on its one thread). */
export interface OnnxExportState {
  runId: string;
  role: string;
  checkpoint: string | null;
  status: 'running' | 'done' | 'error';
  message: string;
}

/** The Profile panel: whether the next iteration is to be profiled, and the last profiled iteration. */
export interface ProfileState {
  armed: boolean;
  last: IterationProfile | null;
}

/**
 * The actions' own bookkeeping, never shown: kept in the store so that no UI module holds state of its own
 * (resetting the store resets it too).
 */
export interface ActionState {
  /** The last agent id handed out (freshAgentIds). */
  agentSerial: number;
  /** The last notice id (addNotice). */
  noticeId: number;
  /** While withEditKey runs: the field whose quick edits are one undo step. */
  editKey: string | null;
  /** The engine's events are registered (connectEngine ran since its worker started). */
  engineWired: boolean;
  /** The engine's worker is watched for its end (once per page). */
  engineWatched: boolean;
  /** Whether a run was training when the engine stopped: the restart resumes it. */
  trainingWhenGone: boolean;
  /** The latest model request (chooseModel): an answer to an older one is dropped. */
  modelRequest: number;
  /** The latest try (startTry): a late event of a stopped try must not land in the next one. */
  tryRequest: number;
  /** A Hub download is being paused (pauseHub): its failure is the pause. */
  hubPausing: boolean;
}

export interface LabState {
  tab: Tab;
  gpu: GpuState;
  // builder
  draft: RunConfig;
  /** A stable id per agent of the draft (parallel to draft.graph.agents): keys and edit state follow the agent, not its name. */
  agentIds: string[];
  undo: History;
  issues: ConfigIssue[];
  preset: string;
  /** The config of the loaded run (what Continue and Step train). */
  runConfig: RunConfig | null;
  /** The run whose config the builder holds a copy of, being edited for a new run. */
  copyOf: string | null;
  selectedAgent: number;
  connectFrom: string | null;
  model: ModelState;
  kernels: KernelsState;
  localModels: string[];
  hub: HubState;
  /** The last dataset upload that was refused (the environment keeps the dataset it had); null after a good one. */
  datasetRejected: { name: string; error: WorkerError } | null;
  // run
  run: RunState;
  // metrics
  history: IterationMetrics[];
  series: Map<string, Series>;
  metricsVersion: number;
  // inspector
  inspector: InspectorState;
  profile: ProfileState;
  /** Try the team: the streamed episode in view. */
  tryTeam: TryView;
  /** The engine's worker: why it is gone (null while it answers), and whether a restart is under way. */
  engine: { gone: string | null; restarting: boolean };
  // runs
  runs: RunSummary[];
  runsLoaded: boolean;
  /** Saved runs whose metric history the Train charts draw over the live run (picked in Runs). */
  overlays: RunOverlay[];
  /** The Storage panel's numbers; null until first read. */
  storage: StorageUsage | null;
  onnxExport: OnnxExportState | null;
  /** A run that was training when the page went away (a reload, a closed tab): the Train tab offers to continue it. */
  interrupted: { runId: string; iteration: number | null } | null;
  notices: Notice[];
  internal: ActionState;
}

/** validateConfig plus what only the lab checks (an uploaded dataset for the dataset environment). */
export function configIssues(draft: RunConfig): ConfigIssue[] {
  const { issues } = validateConfig(draft);
  if (issues.length) {
    // validateConfig checks the graph only once the config is well typed; the editor wants it always
    const seen = new Set(issues.map((i) => i.path));
    for (const g of graphIssues(draft.graph))
      if (!seen.has(`graph.${g.path}`)) issues.push({ path: `graph.${g.path}`, message: `graph: ${g.message}` });
  }
  if (draft.env?.name === 'dataset' && !draft.env.options?.data) {
    issues.push({ path: 'env.options.data', message: 'the dataset environment needs a JSON/JSONL file: upload one' });
  }
  return issues;
}

const initialDraft = defaultRunConfig();
const agentIdsFrom = (last: number, n: number): string[] => Array.from({ length: n }, (_, i) => `agent-${last + i + 1}`);

export interface RunOverlay {
  runId: string;
  history: IterationMetrics[];
}

export const useLab = create<LabState>(() => ({
  tab: 'build',
  gpu: { status: 'probing' },
  draft: initialDraft,
  agentIds: agentIdsFrom(0, initialDraft.graph.agents.length),
  undo: emptyHistory(),
  issues: configIssues(initialDraft),
  preset: 'duo',
  runConfig: null,
  copyOf: null,
  selectedAgent: 0,
  connectFrom: null,
  model: { status: 'idle', info: null, error: null },
  kernels: { status: 'idle', made: 0, asked: 0, seconds: null },
  localModels: [],
  hub: { status: 'idle', listing: null, progress: null, error: null },
  datasetRejected: null,
  run: {
    status: 'idle',
    runId: null,
    iteration: 0,
    total: 0,
    message: '',
    phase: '',
    detail: '',
    roles: [],
    checkpoint: null,
    checkpointIteration: null,
    checkpointAt: null,
    checkpointSaving: null,
    startedAt: null,
  },
  history: [],
  series: new Map(),
  metricsVersion: 0,
  inspector: {
    iteration: null,
    newest: null,
    kept: [],
    sandbox: false,
    episodes: [],
    selected: null,
    colorBy: 'advantage',
    compare: null,
    primary: null,
    secondary: null,
    token: null,
    loading: false,
  },
  profile: { armed: false, last: null },
  tryTeam: emptyTry(),
  engine: { gone: null, restarting: false },
  runs: [],
  runsLoaded: false,
  overlays: [],
  storage: null,
  onnxExport: null,
  interrupted: null,
  notices: [],
  internal: {
    agentSerial: initialDraft.graph.agents.length,
    noticeId: 0,
    editKey: null,
    engineWired: false,
    engineWatched: false,
    trainingWhenGone: false,
    modelRequest: 0,
    tryRequest: 0,
    hubPausing: false,
  },
}));

const set = useLab.setState;
const get = useLab.getState;

/** Updates the actions' bookkeeping. */
export const patchInternal = (p: Partial<ActionState>): void => set({ internal: { ...get().internal, ...p } });

/** Fresh stable ids for `n` agents. */
export function freshAgentIds(n: number): string[] {
  const last = get().internal.agentSerial;
  patchInternal({ agentSerial: last + n });
  return agentIdsFrom(last, n);
}

// ---- simple actions (no worker) ----

export const setGpuState = (gpu: GpuState): void => set({ gpu });
export const setTab = (tab: Tab): void => set({ tab });

const LIVE_RUN: readonly RunStatus[] = ['loading', 'running', 'pausing', 'stopping', 'recovering', 'paused'];
/** Whether the builder shows a live run's own config (read-only: "edit a copy" unlocks it). */
export const selectBuilderLocked = (s: LabState): boolean =>
  s.run.runId !== null && LIVE_RUN.includes(s.run.status) && s.copyOf !== s.run.runId;

const snapshot = (s: LabState): BuilderSnapshot => ({ draft: s.draft, agentIds: s.agentIds, preset: s.preset });

/** Refuses an edit of a live run's config, saying so (the builder is disabled then; this guards the rest). */
function refuseLocked(): boolean {
  if (!selectBuilderLocked(get())) return false;
  addNotice(
    {
      code: 'CONFIG_COPY',
      message: `the builder shows run ${get().run.runId}'s own config, which is read-only`,
      hint: 'Click "Edit a copy" above the builder to change the settings for a new run.',
    },
    'editing the config',
    'info',
  );
  return true;
}

/** Runs `f` with its editDraft calls keyed by `key` (a field's path): quick edits of one field are one undo step. */
export function withEditKey(key: string, f: () => void): void {
  patchInternal({ editKey: key });
  try {
    f();
  } finally {
    patchInternal({ editKey: null });
  }
}

/**
 * Replaces the draft with `f(copy, ids)` (ids: the agents' stable ids, to keep parallel) and revalidates;
 * undoable (an edit that changes nothing is no step). Edits with the same `key` (a field's path) in quick succession are one undo step.
 */
export function editDraft(f: (d: RunConfig, ids: string[]) => void, key: string | null = get().internal.editKey): void {
  if (refuseLocked()) return;
  const s = get();
  const d = structuredClone(s.draft);
  const ids = [...s.agentIds];
  f(d, ids);
  if (ids.join() === s.agentIds.join() && JSON.stringify(d) === JSON.stringify(s.draft)) return; // no change, no undo step
  set({ draft: d, agentIds: ids, issues: configIssues(d), undo: record(s.undo, snapshot(s), key, Date.now()) });
}

/** Puts a whole config in the builder (a preset, an import, a link, a loaded run); undoable. */
export function setDraft(d: RunConfig, extra: Partial<LabState> = {}): void {
  const s = get();
  set({
    draft: d,
    agentIds: freshAgentIds(d.graph.agents.length),
    issues: configIssues(d),
    undo: record(s.undo, snapshot(s), null, Date.now()),
    ...extra,
  });
}

/** Shows an undo/redo snapshot (history.ts computed it). */
export function showSnapshot(snap: BuilderSnapshot, undo: History): void {
  if (refuseLocked()) return;
  const selected = Math.min(get().selectedAgent, snap.draft.graph.agents.length - 1);
  set({
    draft: snap.draft,
    agentIds: snap.agentIds,
    preset: snap.preset,
    issues: configIssues(snap.draft),
    undo,
    selectedAgent: Math.max(0, selected),
    connectFrom: null,
  });
}

export function addNotice(e: WorkerError, context: string, level: Notice['level'] = 'error'): void {
  const id = get().internal.noticeId + 1;
  patchInternal({ noticeId: id });
  set({ notices: [...get().notices, { ...e, id, context, level }] });
}
export const dismissNotice = (id: number): void => set({ notices: get().notices.filter((n) => n.id !== id) });

export const patchRun = (p: Partial<RunState>): void => set({ run: { ...get().run, ...p } });
export const patchInspector = (p: Partial<InspectorState>): void => set({ inspector: { ...get().inspector, ...p } });

/** Appends one iteration to every series (append-only; the charts redraw on metricsVersion). */
export function appendMetrics(m: IterationMetrics): void {
  const s = get();
  s.history.push(m);
  for (const [k, v] of Object.entries(metricValues(m))) {
    let series = s.series.get(k);
    if (!series) s.series.set(k, (series = new Series()));
    series.append(m.iteration + 1, v);
  }
  set({ metricsVersion: s.metricsVersion + 1 });
}

/** Clears the series and refills them from a run's history (a new run, a resumed checkpoint). */
export function resetMetrics(history: readonly IterationMetrics[]): void {
  const s = get();
  s.history.length = 0;
  for (const series of s.series.values()) series.reset();
  set({ metricsVersion: s.metricsVersion + 1 });
  for (const m of history) appendMetrics(m);
}

// ---- selectors ----

export const selectGpu = (s: LabState): GpuState => s.gpu;
export const selectTab = (s: LabState): Tab => s.tab;
export const selectDraft = (s: LabState): RunConfig => s.draft;
export const selectIssues = (s: LabState): ConfigIssue[] => s.issues;
export const selectRun = (s: LabState): RunState => s.run;
export const selectModel = (s: LabState): ModelState => s.model;
export const selectHub = (s: LabState): HubState => s.hub;
export const selectDatasetRejected = (s: LabState): LabState['datasetRejected'] => s.datasetRejected;
export const selectInspector = (s: LabState): InspectorState => s.inspector;
export const selectProfile = (s: LabState): ProfileState => s.profile;
export const selectTry = (s: LabState): TryView => s.tryTeam;
/** Whether the device can time kernels (null until the GPU probe answers). */
export const selectTimestampQuery = (s: LabState): boolean | null => (s.gpu.status === 'ready' ? s.gpu.probe.timestampQuery : null);
export const selectRuns = (s: LabState): RunSummary[] => s.runs;
export const selectStorage = (s: LabState): StorageUsage | null => s.storage;
export const selectOnnxExport = (s: LabState): OnnxExportState | null => s.onnxExport;
export const selectNotices = (s: LabState): Notice[] => s.notices;
export const selectLocalModels = (s: LabState): string[] => s.localModels;
export const selectSelectedAgent = (s: LabState): number => s.selectedAgent;
export const selectAgentIds = (s: LabState): string[] => s.agentIds;
export const selectCanUndo = (s: LabState): boolean => s.undo.past.length > 0;
export const selectCanRedo = (s: LabState): boolean => s.undo.future.length > 0;
export const selectCopyOf = (s: LabState): string | null => s.copyOf;
export const selectRunConfig = (s: LabState): RunConfig | null => s.runConfig;
export const selectConnectFrom = (s: LabState): string | null => s.connectFrom;
export const selectPreset = (s: LabState): string => s.preset;
export const selectLastMetrics = (s: LabState): IterationMetrics | null => s.history[s.history.length - 1] ?? null;
export const selectRunActive = (s: LabState): boolean => ['loading', 'running', 'pausing', 'stopping', 'recovering'].includes(s.run.status);

/** The issues whose path is `path` or lies under it. */
export const issuesAt = (issues: readonly ConfigIssue[], path: string): ConfigIssue[] =>
  issues.filter((i) => i.path === path || i.path.startsWith(`${path}.`) || i.path.startsWith(`${path}[`));
export const selectOverlays = (s: LabState): RunOverlay[] => s.overlays;
export const selectEngine = (s: LabState): LabState['engine'] => s.engine;
export const selectInterrupted = (s: LabState): LabState['interrupted'] => s.interrupted;
