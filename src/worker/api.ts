// The typed API between the UI thread and the training worker (comlink). Errors cross the boundary as
// plain data (code, message, hint) so the UI can show the catalogue's hint. Progress flows the other way
// through RunEvents, a comlink.proxy the UI registers once: status changes, phases inside an iteration,
// and one event per finished iteration (its metrics and a summary of its episodes).
//
// Two entry points change training state (as TF Playground): start a run / continue it, and step; pause
// and stop only ask the loop to halt at the next iteration boundary.

import type { AdapterSummary } from '../gpu/gpu.ts';
import type { KernelTime } from '../gpu/profiler.ts';
import type { RunConfig } from '../config/run-config.ts';
import type { IterationMetrics } from '../config/metrics.ts';
import type { ModuleReport, ModuleTry } from '../marft/env-modules.ts';

export type { ModuleReport, ModuleTry };
export { MODULE_TEMPLATE } from '../marft/env-modules.ts';

export interface WorkerError {
  code: string;
  message: string;
  hint?: string;
}

export type Result<T> = { ok: true; value: T } | { ok: false; error: WorkerError };

export interface ProbeResult {
  adapter: AdapterSummary;
  limits: { maxStorageBufferBindingSize: number; maxBufferSize: number; maxComputeWorkgroupStorageSize: number };
  /** A tiny kernel run on the device and compared with the CPU: proves compute works end to end. */
  kernelCheck: { ok: boolean; detail: string };
  /** Whether the device has the timestamp-query feature (per-kernel GPU times in the Profile panel). */
  timestampQuery: boolean;
}

/** config.model.path: '' = the built-in model; 'opfs:models/<name>' = a local folder copied into OPFS. */
export const BUILTIN_MODEL = 'marft-tiny';
export const OPFS_MODEL_PREFIX = 'opfs:models/';

export interface ModelInfo {
  /** The config.model.path that names it. */
  path: string;
  name: string;
  modelType: string;
  numLayers: number;
  hiddenSize: number;
  vocabSize: number;
  maxPositions: number;
  /** Bytes of the weight files. */
  bytes: number;
  hasChatTemplate: boolean;
}

export type RunStatus = 'idle' | 'loading' | 'running' | 'paused' | 'stopping' | 'stopped' | 'done' | 'recovering' | 'error';

export interface StatusEvent {
  status: RunStatus;
  runId: string | null;
  /** Iterations completed, and the iteration the run trains up to. */
  iteration: number;
  total: number;
  message?: string;
}

export type ProgressPhase = 'load' | 'rollout' | 'score' | 'advantages' | 'update' | 'checkpoint';

export interface ProgressEvent {
  iteration: number;
  phase: ProgressPhase;
  detail: string;
}

export interface EpisodeSummary {
  index: number;
  task: string;
  correct: boolean;
  teamReward: number;
  actions: number;
  /** The team's last answer, when one was given. */
  answer: string | null;
}

/** A profiled iteration (EngineApi.profileNext): its phase wall times and, where the device can, per-kernel GPU time. */
export interface IterationProfile {
  iteration: number;
  /** Wall seconds per phase, as in the metrics (the profiled iteration runs slower: one pass per dispatch). */
  seconds: IterationMetrics['seconds'];
  /** GPU milliseconds per kernel (`<program key>/<entry point>`), largest first; null without timestamp-query. */
  kernels: KernelTime[] | null;
  /** Why kernels is null, when it is. */
  unavailable?: string;
  /** The adapter that ran it. */
  adapter: string;
}

export interface IterationEvent {
  metrics: IterationMetrics;
  /** Present when this iteration was profiled. */
  profile?: IterationProfile;
  episodes: EpisodeSummary[];
  /** The checkpoint saved after it (null when the save failed; see notice). */
  checkpoint: string | null;
  notice?: string;
}

export interface RunEvents {
  onStatus(e: StatusEvent): void;
  onProgress(e: ProgressEvent): void;
  onIteration(e: IterationEvent): void;
  /** A run was (re)loaded: its config and its whole metric history (charts reset to it). */
  onLoaded(e: { runId: string; config: RunConfig; history: IterationMetrics[]; checkpoint: string | null }): void;
  /** Something the user should know that did not stop the run (a recovery, a failed save). */
  onNotice(e: WorkerError): void;
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
  /** Why the run's folder could not be read, when it could not. */
  problem?: string;
}

export type CreditMethod = 'equal' | 'step_discount' | 'per_step';

/** Where the GAE recursion of a token (or action) takes its next value from. */
export interface GaeNext {
  kind: 'token' | 'agent' | 'turn' | 'end';
  /** Role of the next step (agent/turn), its value V_next and advantage A_next (0 at the end). */
  role?: string;
  value: number;
  advantage: number;
}

export interface InspectToken {
  id: number;
  text: string;
  /** Credited reward placed on this token (non-zero only on an action's last token at token level). */
  reward: number;
  advantage: number;
  /** V at this step (the action's value at action level), null for GRPO. */
  value: number | null;
  ret: number | null;
  /** delta = r + gamma * V_next - V (null for GRPO). */
  delta: number | null;
  next: GaeNext | null;
  oldLogp: number;
  behaviourLogp: number;
  /** exp(oldLogp - behaviourLogp): the scoring policy over the sampling distribution. */
  ratio: number;
  /** oldLogp - refLogp (k1) when reference log-probs were computed (klCoef > 0), else null. */
  kl: number | null;
  entropy: number;
}

export interface InspectAction {
  agent: number;
  role: string;
  turn: number;
  text: string;
  reward: number;
  tokens: InspectToken[];
}

export interface InspectedEpisode {
  iteration: number;
  index: number;
  task: string;
  correct: boolean;
  teamRewards: number[];
  feedback: string[];
  method: CreditMethod;
  level: 'action' | 'token';
  algo: 'ppo' | 'grpo';
  gamma: number;
  lambda: number;
  actions: InspectAction[];
}

export interface Download {
  name: string;
  bytes: Uint8Array;
  /** One line on what it holds, when there is more to say than the name. */
  summary?: string;
}

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
  /** Local models kept in OPFS, as config.model.path values. */
  listLocalModels(): Promise<Result<string[]>>;
  /** A new run from `config`; trains until config.iterations (or one iteration then pauses when paused). */
  start(config: RunConfig, options?: { paused?: boolean }): Promise<Result<{ runId: string }>>;
  /** Loads a run's checkpoint (latest when not named) and leaves it paused. */
  openRun(runId: string, checkpoint?: string): Promise<Result<{ runId: string; iteration: number }>>;
  /** Continues the loaded run until iteration `until` (default: its config.iterations). */
  resume(until?: number): Promise<Result<void>>;
  pause(): Promise<void>;
  step(): Promise<Result<void>>;
  /** Arms (or disarms) profiling of the next iteration to start; its IterationEvent carries the profile. */
  profileNext(on: boolean): Promise<Result<{ armed: boolean }>>;
  stop(): Promise<void>;
  listRuns(): Promise<Result<RunSummary[]>>;
  deleteRun(runId: string): Promise<Result<void>>;
  /** Per-token data of an episode of the last iteration, under `method` (default: the run's credit). */
  inspect(episode: number, method?: CreditMethod): Promise<Result<InspectedEpisode>>;
  /** PEFT adapters of the loaded run as a zip. */
  exportAdapters(): Promise<Result<Download>>;
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
  /**
   * Tries a user's environment module in its sandbox, with no model: reset on each seed and one step with
   * the typed answer, each replayed for determinism. Module problems come back in the report's error.
   */
  tryEnvModule(t: ModuleTry): Promise<Result<ModuleReport>>;
  /** Test hook: destroys the GPU device, as a driver reset would. */
  debugLoseDevice(): Promise<void>;
}

export function toWorkerError(e: unknown): WorkerError {
  if (e && typeof e === 'object' && 'code' in e && 'message' in e) {
    const g = e as { code: string; message: string; hint?: string };
    return { code: String(g.code), message: g.message.split('\n  hint:')[0], hint: g.hint };
  }
  return { code: 'INTERNAL', message: e instanceof Error ? e.message : String(e) };
}
