// A session: one GPU device and the base model on it, for the lab's worker and the CLI alike. The front
// end injects its platform: how to get a device (browser or Node), where a config.model.path's files are
// (the built-in model, a folder on disk or in OPFS), how its catalogue names a model it cannot use, and
// the sandbox users' environment modules and code run in. The session's environments (Envs: the registry,
// the module sandboxes, the code runner) are its own, on that sandbox.
// One model at a time: loading another releases the old one's weights (a run on it closes first, see
// onUnload); after a device loss, reopen() gets a new device and the same model on it. A SessionModel is
// what the run loop trains with (it is the run loop's RunSession).

import { GpuError } from '../gpu/errors.ts';
import type { AdapterSummary, Gpu } from '../gpu/gpu.ts';
import { type DeviceSpeed, deviceCheck, deviceSpeed } from '../model/device-check.ts';
import type { ModelFiles } from '../model/folder.ts';
import { loadDecoder } from '../model/load.ts';
import { releaseWeights } from '../model/weights.ts';
import type { SandboxSpawner } from '../common/sandbox.ts';
import { Envs } from '../envs/registry.ts';
import type { RunSession } from './run-loop.ts';
import { MarftError } from './errors.ts';
import { kernelScope, keepKernels, prepareKernels } from './kernel-cache.ts';
import type { CheckpointStore } from '../platform/storage/store.ts';

/** What a platform implements for model folders (fetched or in-memory folders use memoryFiles). */
export { type ModelFiles, memoryFiles } from '../model/folder.ts';
/** The model config parser (the worker checks a Hub repo's config.json before fetching its weights). */
export { parseModelConfig } from '../model/config.ts';

/** A base model's files as the platform found them. */
export interface ModelSource {
  files: ModelFiles;
  /** For messages: the folder (Node) or its name (browser). */
  name: string;
  /** base_model_name_or_path of the adapters a run on it saves. */
  baseModel: string;
}

export interface Platform {
  /** A GPU device; `fresh` after a loss, when the old one is gone. */
  device(fresh: boolean): Promise<Gpu>;
  /** The files config.model.path names ('' = the built-in model). */
  model(path: string): Promise<ModelSource>;
  /** The front end's error (its catalogue) for a model it cannot use; `cause` is the error behind it. */
  refuse(code: 'NO_TOKENIZER' | 'MODEL_TOO_LARGE', message: string, cause?: unknown): unknown;
  /** Where users' environment modules and code candidates run (src/platform/sandbox/); null: nowhere. */
  sandbox: SandboxSpawner | null;
  /** Where the kernel cache is kept between sessions (kernel-cache.ts); absent: pipelines are made at first use. */
  kernels?: CheckpointStore;
}

/** A few lines about the loaded model, for the UI. */
export interface ModelSummary {
  name: string;
  modelType: string;
  numLayers: number;
  hiddenSize: number;
  vocabSize: number;
  maxPositions: number;
  hasChatTemplate: boolean;
  /** Pipelines the kernel cache started making while the model loaded (0 without a cache). */
  kernelsPrepared: number;
}

export interface SessionModel extends RunSession {
  /** The config.model.path it was loaded for. */
  path: string;
  source: ModelSource;
  summary: ModelSummary;
}

export interface DeviceProbe {
  adapter: AdapterSummary;
  limits: { maxStorageBufferBindingSize: number; maxBufferSize: number; maxComputeWorkgroupStorageSize: number };
  /** A tiny kernel run on the device and compared with the CPU: proves compute works end to end. */
  kernelCheck: { ok: boolean; detail: string };
  /** Whether the device has the timestamp-query feature (per-kernel GPU times). */
  timestampQuery: boolean;
  /** A short speed probe: the lab estimates an iteration's time from it before a run. */
  speed: DeviceSpeed;
}

export class Session {
  private gpu: Gpu | null = null;
  private current: SessionModel | null = null;
  /** Loads one after the other: a switch releases the weights the previous load made. */
  private queue: Promise<unknown> = Promise.resolve();
  private readonly unloadHooks = new Set<(m: SessionModel) => void>();
  /** The device, scope and pipeline count of the last keepKernels (the cache holds those already). */
  private keptKernels: { gpu: Gpu; scope: string; made: number } | null = null;
  /** The job holding the model (a training loop, an export's forward), or null. */
  private user: string | null = null;

  /** The session's environments, on the platform's sandbox. */
  readonly envs: Envs;

  constructor(private readonly platform: Platform) {
    this.envs = new Envs(platform.sandbox);
  }

  /** The device, a new one once the current is lost. */
  async device(): Promise<Gpu> {
    const lost = this.gpu !== null && this.gpu.lostReason !== null;
    if (lost) this.drop();
    this.gpu ??= await this.platform.device(lost);
    return this.gpu;
  }

  /** The device in use, if any (a test hook destroys it). */
  get currentDevice(): Gpu | null {
    return this.gpu;
  }

  async probe(): Promise<DeviceProbe> {
    const gpu = await this.device();
    const l = gpu.limits;
    return {
      adapter: gpu.adapter,
      limits: {
        maxStorageBufferBindingSize: l.maxStorageBufferBindingSize,
        maxBufferSize: l.maxBufferSize,
        maxComputeWorkgroupStorageSize: l.maxComputeWorkgroupStorageSize,
      },
      kernelCheck: await deviceCheck(gpu),
      timestampQuery: gpu.hasTimestamps,
      speed: await deviceSpeed(gpu),
    };
  }

  /**
   * `hook` runs before a model's weights are released for another one; it may throw to refuse the switch
   * (a run training on it). Returns the unsubscribe.
   */
  onUnload(hook: (m: SessionModel) => void): () => void {
    this.unloadHooks.add(hook);
    return () => this.unloadHooks.delete(hook);
  }

  /**
   * Takes the model for the job `what` until the returned release is called; refused (MarftError
   * MODEL_IN_USE) while another job holds it, so a Step and an export's forward, or two exports, never
   * interleave their GPU work on the same weights.
   */
  claim(what: string): () => void {
    if (this.user !== null) throw new MarftError('MODEL_IN_USE', `${what} cannot start now: the model is in use by ${this.user}.`);
    this.user = what;
    let held = true;
    return () => {
      if (held) {
        held = false;
        this.user = null;
      }
    };
  }

  /** Runs `fn` holding the model for `what` (claim). */
  async exclusive<T>(what: string, fn: () => Promise<T>): Promise<T> {
    const release = this.claim(what);
    try {
      return await fn();
    } finally {
      release();
    }
  }

  /** The model config.model.path names, on the current device (loaded once). */
  load(path: string): Promise<SessionModel> {
    const next = this.queue.catch(() => {}).then(() => this.loadNow(path));
    this.queue = next;
    return next;
  }

  /** After a device loss: a new device and the model in use loaded on it again. */
  async reopen(): Promise<SessionModel> {
    const path = this.current?.path ?? '';
    this.drop();
    this.gpu = await this.platform.device(true);
    return this.load(path);
  }

  /**
   * Keeps the recipes of the pipelines made on the current model in the kernel cache, for the next session;
   * a cache that cannot be written is only a slower start next time, so a failure is logged, not raised.
   */
  async keepKernels(): Promise<void> {
    const m = this.current;
    const store = this.platform.kernels;
    if (!m || !store) return;
    // nothing new made since the last keep on this device: no need to read the cache back to compare
    const made = m.gpu.pipelines.size;
    const scope = kernelScope(m.gpu.adapter, m.model);
    const k = this.keptKernels;
    if (k?.gpu === m.gpu && k.scope === scope && k.made === made) return;
    this.keptKernels = { gpu: m.gpu, scope, made };
    await keepKernels(m.gpu, store, scope).catch((e: unknown) => {
      console.warn(`the kernel cache was not written: ${e instanceof Error ? e.message : String(e)}`);
    });
  }

  /** Releases the model's weights (a run on it closes first). */
  release(): void {
    const m = this.current;
    if (!m) return;
    for (const h of this.unloadHooks) h(m);
    if (m.gpu.lostReason === null) releaseWeights(m.gpu, m.decoder.weights);
    this.current = null;
  }

  /** Forgets the device and the model without touching them (they went with the device). */
  private drop(): void {
    this.gpu = null;
    this.current = null;
  }

  private async loadNow(path: string): Promise<SessionModel> {
    const gpu = await this.device();
    const m = this.current;
    if (m && m.path === path && m.gpu === gpu) return m;
    this.release();
    const source = await this.platform.model(path);
    let loaded;
    try {
      loaded = await loadDecoder(gpu, source.files);
    } catch (e) {
      if (e instanceof GpuError && e.code === 'LIMIT')
        throw this.platform.refuse('MODEL_TOO_LARGE', `${source.name} does not fit this GPU: ${e.message.split('\n')[0]}`, e);
      throw e;
    }
    const tokenizer = loaded.model.tokenizer;
    if (!tokenizer) {
      releaseWeights(gpu, loaded.decoder.weights);
      throw this.platform.refuse('NO_TOKENIZER', `${source.name} has no tokenizer.json: a training run needs the model's tokenizer`);
    }
    const c = loaded.model.config;
    const kernels = this.platform.kernels;
    // the pipelines this model's runs made on this adapter before, made now while nothing waits for them
    const kernelsPrepared = kernels ? await prepareKernels(gpu, kernels, kernelScope(gpu.adapter, c)) : 0;
    this.current = {
      path,
      source,
      gpu,
      envs: this.envs,
      decoder: loaded.decoder,
      tokenizer,
      model: c,
      summary: {
        name: source.files.name,
        modelType: String(loaded.model.rawConfig.model_type ?? '?'),
        numLayers: c.numLayers,
        hiddenSize: c.hiddenSize,
        vocabSize: c.vocabSize,
        maxPositions: c.maxPositionEmbeddings,
        hasChatTemplate: tokenizer.hasChatTemplate,
        kernelsPrepared,
      },
    };
    return this.current;
  }
}
