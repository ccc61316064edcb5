// The typed API between the UI thread and the training worker (comlink). Errors cross the boundary as
// plain data (code, message, hint) so the UI can show the catalogue's hint. Progress flows the other way
// through RunEvents, a comlink.proxy the UI registers once: status changes, phases inside an iteration,
// and one event per finished iteration (its metrics and a summary of its episodes).
//
// Two entry points change training state (as TF Playground): start a run / continue it, and step; pause
// and stop ask the loop to halt within seconds (the iteration in flight abandoned, the run back at its last
// completed iteration). The run's events and their types are
// the engine's (src/marft/run.ts), forwarded as they are.

import type { RunConfig } from '../config/run-config.ts';
import type { LimitsMode } from '../gpu/device.ts';
import type { IterationMetrics } from '../config/metrics.ts';
import type { CreditMethod } from '../marft/credit.ts';
import type { InspectedEpisode } from '../marft/inspect.ts';
import type { InspectedLine } from '../marft/inspect-jsonl.ts';
import type { EpisodeSummary, Notice, RunEvents } from '../marft/run-events.ts';
import type { DeviceProbe, ModelSummary } from '../marft/session.ts';
import type { Download } from '../marft/export/agent.ts';
import type { ModuleReport, ModuleTry } from '../marft/env-modules.ts';
import type { TryEvent, TryRequest, TryResult } from '../marft/try-team.ts';
import type { RunPlan } from '../marft/plan.ts';
import type { WarmUpResult } from '../marft/warm-up.ts';
import type { WarmUpMode } from './page-params.ts';

export type { Advice, PlanItem, PlanPhase, RunPlan } from '../marft/plan.ts';

export type { TryEvent, TryProblem, TryRequest, TryResult } from '../marft/try-team.ts';

export type { ModuleReport, ModuleTry };
export { MODULE_TEMPLATE } from '../marft/env-modules.ts';

export type { AnyErrorCode } from './errors.ts';

export type {
  EpisodeSummary,
  IterationEvent,
  IterationProfile,
  LoadedEvent,
  ProgressEvent,
  ProgressPhase,
  RunEvents,
  RunStatus,
  StatusEvent,
} from '../marft/run-events.ts';
export type { Download } from '../marft/export/agent.ts';
export { errorNotice as toWorkerError } from '../marft/run-events.ts';

export type WorkerError = Notice;

export type Result<T> = { ok: true; value: T } | { ok: false; error: WorkerError };

export type ProbeResult = DeviceProbe;

import type { HookPoint } from './test-hooks.ts';
export type { HookPoint };

/** config.model.path: '' = the built-in model (BUILTIN_MODEL); 'builtin:<name>' = another model of public/models/; 'opfs:models/<name>' = a local folder copied into OPFS. */
export const OPFS_MODEL_PREFIX = 'opfs:models/';

/** A Hub model repo's files (hub.ts lists and downloads them). */
export interface HubFile {
  path: string;
  size: number;
  /** The sha256 (hex) the Hub lists for an LFS file. */
  sha256?: string;
}

export interface HubListing {
  repo: string;
  revision: string;
  /** The folder name in the models store, and the config.model.path the model will have. */
  name: string;
  path: string;
  files: HubFile[];
  bytes: number;
}

export interface HubProgress {
  file: string;
  /** Bytes stored so far of all files (chunks in flight included), and of all files together. */
  done: number;
  total: number;
}

export interface ModelInfo extends ModelSummary {
  /** The config.model.path that names it. */
  path: string;
  /** Bytes of the weight files. */
  bytes: number;
}

export interface CheckpointSummary {
  name: string;
  iteration: number;
  latest: boolean;
}

export interface RunSummary {
  id: string;
  createdAt: string;
  /** Agents in order, the environment, the model. */
  roles: string[];
  env: string;
  model: string;
  checkpoints: CheckpointSummary[];
  /** Team accuracy of the last recorded iteration, when any. */
  lastAccuracy: number | null;
  /** LoRA mode of the latest checkpoint (shared: one adapter for every role). */
  loraMode?: 'shared' | 'per_agent';
  /** The bundled demo run: read-only (continuing it trains a copy). */
  demo?: boolean;
  /** Why the run's folder could not be read, when it could not. */
  problem?: string;
}

/** Bytes one run folder or one local model takes in the browser's storage. */
export interface FolderUsage {
  /** The run id, or the model's config.model.path (opfs:models/<name>). */
  name: string;
  bytes: number;
}

/** What the Storage panel shows: the origin's usage and quota (navigator.storage.estimate) and the folders. */
export interface StorageUsage {
  /** Bytes this site uses in all, and the most the browser grants it (null where the browser does not say). */
  usage: number | null;
  quota: number | null;
  runs: FolderUsage[];
  models: FolderUsage[];
}

/** The inspector's data (src/marft/inspect.ts formats it), as the UI receives it. */
export type { CreditMethod, InspectedEpisode, InspectedLine };
export type { GaeNext, InspectAction, InspectToken } from '../marft/inspect.ts';

export interface AgentLogits {
  /** (T, V) row-major. */
  logits: Float32Array;
  vocabSize: number;
}

export interface EngineApi {
  probe(): Promise<Result<ProbeResult>>;
  setEvents(events: RunEvents): Promise<void>;
  /** Loads (and caches) the model config.model.path names; its summary. */
  loadModel(path: string): Promise<Result<ModelInfo>>;
  /** Copies a picked Hugging Face folder into OPFS (models/<name>/) and loads it. */
  importModelFolder(files: File[]): Promise<Result<ModelInfo>>;
  /**
   * The files of a Hugging Face Hub model repo the lab would download, with sizes (config.json is fetched
   * and checked). `hub`: the page's ?hub= test setting (honoured only for a loopback origin); `token`
   * is sent to the Hub and kept nowhere.
   */
  hubList(repo: string, hub: string | null, token?: string): Promise<Result<HubListing>>;
  /** Downloads a listed repo into OPFS models/<org--name>/ (resuming an earlier attempt) and loads it. */
  hubDownload(listing: HubListing, hub: string | null, progress: (p: HubProgress) => void, token?: string): Promise<Result<ModelInfo>>;
  /** Stops the download in flight, keeping what arrived (hubDownload resumes it). */
  hubPause(): Promise<void>;
  /** Stops the download of `repo` and removes what arrived. */
  hubCancel(repo: string): Promise<Result<void>>;
  /** Local models kept in OPFS, as config.model.path values. */
  listLocalModels(): Promise<Result<string[]>>;
  /**
   * The memory plan of one iteration of `config` on its model (loaded if it is not) and this device's limits
   * (src/marft/plan.ts): the expected peak by what holds it, and with `budget` (bytes) or a tensor over a
   * buffer limit, which setting to change.
   */
  plan(config: RunConfig, budget?: number): Promise<Result<RunPlan>>;
  /** A new run from `config`; trains until config.iterations (or one iteration then pauses when paused). */
  start(config: RunConfig, options?: { paused?: boolean }): Promise<Result<{ runId: string }>>;
  /** Loads a run's checkpoint (latest when not named) and leaves it paused. */
  openRun(runId: string, checkpoint?: string): Promise<Result<{ runId: string; iteration: number }>>;
  /**
   * Opens the bundled demo run (public/demo/, copied into OPFS once as DEMO_RUN_ID) paused, like openRun, with
   * its recorded last iteration's episodes for Inspect.
   */
  openDemo(): Promise<Result<{ runId: string; iteration: number; inspectIteration: number; episodes: EpisodeSummary[] }>>;
  /** Continues the loaded run until iteration `until` (default: its config.iterations); the demo run continues in a copy (a DEMO_COPY notice names it). */
  resume(until?: number): Promise<Result<void>>;
  pause(): Promise<void>;
  step(): Promise<Result<void>>;
  /** Arms (or disarms) profiling of the next iteration to start; its IterationEvent carries the profile. */
  profileNext(on: boolean): Promise<Result<{ armed: boolean }>>;
  stop(): Promise<void>;
  listRuns(): Promise<Result<RunSummary[]>>;
  /** The metric history of a run's latest checkpoint (the Train charts overlay it). */
  runHistory(runId: string): Promise<Result<IterationMetrics[]>>;
  deleteRun(runId: string): Promise<Result<void>>;
  /** Storage used by runs and local models, with the browser's quota. */
  storageUsage(): Promise<Result<StorageUsage>>;
  /** Deletes a local model (config.model.path opfs:models/<name>) from the browser's storage. */
  deleteLocalModel(path: string): Promise<Result<void>>;
  /** Per-token data of an episode of a kept iteration (default: the last), under `method` (default: the run's credit). */
  inspect(episode: number, method?: CreditMethod, iteration?: number): Promise<Result<InspectedEpisode>>;
  /** A kept iteration's episodes (default: the last) in the recorded-episodes format (JSONL, what `marft inspect` reads). */
  exportEpisodes(iteration?: number): Promise<Result<Download>>;
  /** The kept iterations (the last KEPT_ITERATIONS of the run since it was loaded), oldest first, with their episodes. */
  keptIterations(): Promise<Result<Array<{ iteration: number; episodes: EpisodeSummary[] }>>>;
  /**
   * The credit-assignment sandbox: the targets `marft inspect` gives recorded episodes (JSONL) under
   * `config`, through the trainer's code (computeTargets). Pure CPU work: it needs no GPU, model or run.
   */
  creditSandbox(config: RunConfig, episodesJsonl: string): Promise<Result<InspectedLine[]>>;
  /**
   * PEFT adapters as a zip: of the loaded run with no runId; else of a stored run's checkpoint (latest when
   * not named), read from OPFS without loading it (refused with MODEL_IN_USE while a run trains).
   */
  exportAdapters(runId?: string, checkpoint?: string): Promise<Result<Download>>;
  /** A base model folder (a config.model.path; '' = the built-in model) as a zip of <name>/ with its config, tokenizer and weights. */
  exportBaseModel(path: string): Promise<Result<Download>>;
  /** A checkpoint (latest when not named) of a run as a zip. */
  exportCheckpoint(runId: string, checkpoint?: string): Promise<Result<Download>>;
  /**
   * One agent of a checkpoint (latest when not named) as ONNX: the base model with the agent's adapter
   * merged (the shared adapter in shared LoRA mode), zipped as <role>.onnx (+ .onnx.data), tokenizer files, README.md.
   */
  exportOnnx(runId: string, role: string, checkpoint?: string): Promise<Result<Download>>;
  /** The logits the lab's decoder gives `ids` with that agent's adapter (what an ONNX export is checked against). Refused while training. */
  agentLogits(runId: string, role: string, ids: number[], checkpoint?: string): Promise<Result<AgentLogits>>;
  /** A checkpoint zip becomes a new run in OPFS. */
  importCheckpoint(bytes: Uint8Array, fileName: string): Promise<Result<RunSummary>>;
  /** The metric history in a training log (`marft train --json` lines, or a state.json), for a chart overlay. */
  readMetricsLog(bytes: Uint8Array, fileName: string): Promise<Result<IterationMetrics[]>>;
  /**
   * Tries a user's environment module in its sandbox, with no model: reset on each seed and one step with
   * the typed answer, each replayed for determinism. Module problems come back in the report's error.
   */
  tryEnvModule(t: ModuleTry): Promise<Result<ModuleReport>>;
  /**
   * Try the team: one episode of the loaded run's team (its adapters as they stand), or with no run loaded
   * of the base model under `config`, on a typed problem or a held-out task. `onEvent` (a comlink.proxy)
   * gets the task, each agent's text as it streams and each turn's judgement. Refused while a run trains.
   */
  tryTeam(config: RunConfig, request: TryRequest, onEvent: (e: TryEvent) => void): Promise<Result<TryResult>>;
  /**
   * Makes the pipelines a first iteration of `config` needs, by one thrown-away iteration on scratch
   * adapters (src/marft/warm-up.ts), so that the first Step does not wait for them; null when skipped (a
   * run training, kernels already prepared from the cache, a user's module, a CPU adapter unless `mode` is
   * 'on': the page's ?warmup=). `onMade` (a comlink.proxy) gets the pipelines made and asked for. Anything
   * that needs the model stops it within a decode step; a new request replaces the one in flight.
   */
  prepareKernels(config: RunConfig, mode: WarmUpMode, onMade: (made: number, asked: number) => void): Promise<Result<WarmUpResult | null>>;
  /** Stops the try in flight within a decode step (its result says stopped). */
  tryStop(): Promise<void>;
  /** The held-out task `seed` draws (the loaded run's environment, or `config`'s), with its gold answer. */
  tryTask(config: RunConfig, seed: number): Promise<Result<{ task: string; gold: string | null }>>;
  /** Test hook: destroys the GPU device, as a driver reset would. */
  debugLoseDevice(): Promise<void>;
  /** Answers at once: the page's liveness check (client.ts WorkerWatch). */
  ping(): Promise<number>;
  /**
   * The limits of the devices this worker opens from now on (the page's ?limits=default: page-params.ts);
   * the page sends it before any other call, so the first device has them.
   */
  setDeviceLimits(limits: LimitsMode): Promise<void>;
  /**
   * Test hook: the worker closes itself, answering nothing more (as when the browser kills it); with a
   * point, it does so at the run's next progress event of that phase (or as the next export starts), after
   * an uncaught error.
   */
  debugCrash(point?: HookPoint): Promise<void>;
  /**
   * Test hook: at the point (a run phase, of `iteration` when given, or an export starting) the worker calls
   * `onHeld` (a comlink.proxy) and waits there: a checkpoint write mid-way and an export until debugRelease,
   * the other phases until the page goes away (src/worker/test-hooks.ts).
   */
  debugHold(point: HookPoint, iteration: number | undefined, onHeld: () => void): Promise<void>;
  debugRelease(): Promise<void>;
  // debugCrash, debugHold and debugRelease work only in a build with test hooks (vite --mode e2e): a
  // production worker rejects them.
}
