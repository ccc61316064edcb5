// Checkpoints: save a TrainState to a store and load it back bit for bit, so a run resumes exactly where
// it stopped (also after a crash). A run folder holds the last K checkpoints and a pointer to the newest:
//
//   <run>/latest                       "ckpt-000012\n" — the commit point, written last
//   <run>/ckpt-000012/config.json      the run config
//                     agents/<role>/adapter_config.json, adapter_model.safetensors   (PEFT, per agent;
//                                      in shared LoRA mode every role holds the shared adapter)
//                     critic/value_head.safetensors    (see checkpoint-format.ts)
//                     critic/<role>/adapter_*          (critic.mode lora: each agent's critic LoRA, PEFT)
//                     optimizer.safetensors            AdamW m, v and stats of both optimisers
//                     state.json       format, version, iteration, RNG state, metric history, the base
//                                      model's dims, and every other file's size and SHA-256; its own
//                                      SHA-256 (over its compact JSON without that field) is its last key.
//
// Saving is two steps, so the run loop can overlap the second with the next iteration: captureCheckpoint
// snapshots the state (one readback of every tensor, issued between iterations) and makes the files in
// memory; writeCheckpoint writes them.
// Writing is crash-safe: every tensor is read back from the GPU first, then the files go into a fresh
// hidden folder <run>/.tmp-*, which is renamed to ckpt-NNNNNN (a new name, never over an existing one),
// and only then is `latest` replaced (one atomic file write). A crash at any point leaves `latest`
// naming the previous, complete checkpoint; leftover .tmp-* folders are removed by the next save.
// Loading verifies every size and checksum before touching the GPU, and names the file that is wrong.

import type { Gpu } from '../../gpu/gpu.ts';
import { LINEAR_MODULES, type LinearModule, type ModelConfig, linearDims } from '../../model/config.ts';
import { type LoraSet, setLoraSlot } from '../../model/lora-set.ts';
import { ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE, loraScale, readPeftAdapter } from '../../model/peft.ts';
import {
  OPTIMIZER_FILE,
  VALUE_HEAD_FILE,
  checkpointTensors,
  decodeOptimizer,
  decodeValueHead,
  encodeOptimizer,
  encodeValueHead,
  parseExact,
  sha256Hex,
  stringifyExact,
} from './format.ts';
import { type TensorReader, prefetch } from '../../gpu/prefetch.ts';
import { type RunConfig, parseRunConfig } from '../../config/run-config.ts';
import { agentAdapterFiles, agentDir, agentSlotMap, criticAdapterFiles, criticDir } from '../export/peft.ts';
import type { IterationMetrics } from '../../config/metrics.ts';
import { type TrainState, createTrainState, releaseTrainState } from '../state.ts';
import { errorMessage, messageWithoutHint } from '../../common/errors.ts';
import { CheckpointError, ckptFail } from '../../platform/storage/errors.ts';
import { type CheckpointStore, joinPath, listFiles, memoryStore, normalizePath, toBytes } from '../../platform/storage/store.ts';
import { type UnzipLimits, unzipFiles, zipFiles } from '../../platform/zip.ts';

export { CheckpointError, type CheckpointErrorCode } from '../../platform/storage/errors.ts';
export { OPTIMIZER_FILE, VALUE_HEAD_FILE } from './format.ts';

export const CHECKPOINT_FORMAT = 'marft-lab-checkpoint';
export const CHECKPOINT_VERSION = 1;
export const CONFIG_FILE = 'config.json';
export const STATE_FILE = 'state.json';
export const LATEST_FILE = 'latest';
const TMP_PREFIX = '.tmp-';
const CKPT_RE = /^ckpt-(\d+)(?:-(\d+))?$/;

export const checkpointName = (iteration: number): string => `ckpt-${String(iteration).padStart(6, '0')}`;

export interface FileRecord {
  path: string;
  bytes: number;
  sha256: string;
}

/** The dims of the base model the adapters and the critic were made for. */
export interface ModelDims {
  numLayers: number;
  hiddenSize: number;
  linear: Partial<Record<LinearModule, [number, number]>>;
}

/** state.json. */
export interface CheckpointManifest {
  format: typeof CHECKPOINT_FORMAT;
  version: number;
  iteration: number;
  /** The trainer's Rng state (u32). */
  rng: number;
  baseModel: string;
  savedAt: string;
  model: ModelDims;
  /** Which folder holds which adapter slot; in shared mode every role holds slot 0 (the shared adapter). */
  adapters: { mode: RunConfig['lora']['mode']; note: string; roles: Record<string, { slot: number; dir: string }> };
  metrics: IterationMetrics[];
  files: FileRecord[];
  /** SHA-256 of stringifyExact(this object without sha256). */
  sha256: string;
}

export interface SaveOptions {
  /** base_model_name_or_path of the PEFT adapters (the HF id or folder), also kept in state.json. */
  baseModel: string;
  /** Checkpoints to keep in the run folder, newest by iteration (the one `latest` names is always kept); 0 = all. Default 3. */
  keep?: number;
}

export interface SavedCheckpoint {
  /** The checkpoint folder's name (ckpt-NNNNNN) and its path in the store. */
  name: string;
  path: string;
  manifest: CheckpointManifest;
  /** Older checkpoint folders removed to keep `keep`. */
  removed: string[];
  /** Problems that did not fail the save (an old folder that could not be removed). */
  warnings: string[];
}

export interface CheckpointInfo {
  name: string;
  path: string;
  iteration: number;
  latest: boolean;
}

// ---- helpers ----------------------------------------------------------------------------------------

function modelDims(model: ModelConfig, targets: readonly LinearModule[]): ModelDims {
  const linear: ModelDims['linear'] = {};
  for (const m of targets) {
    const d = linearDims(model, m);
    linear[m] = [d.in, d.out];
  }
  return { numLayers: model.numLayers, hiddenSize: model.hiddenSize, linear };
}

const nonce = (): string => {
  const b = new Uint8Array(6);
  crypto.getRandomValues(b);
  return [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
};

const sortKey = (name: string): [number, number] => {
  const m = CKPT_RE.exec(name)!;
  return [Number(m[1]), Number(m[2] ?? 0)];
};
const byAge = (a: string, b: string): number => {
  const [ia, sa] = sortKey(a);
  const [ib, sb] = sortKey(b);
  return ia - ib || sa - sb;
};

/** The name `latest` holds, or null when there is no pointer. */
async function readLatest(store: CheckpointStore, runDir: string): Promise<string | null> {
  const path = joinPath(runDir, LATEST_FILE);
  if ((await store.stat(path)) !== 'file') return null;
  const name = new TextDecoder().decode(await store.read(path)).trim();
  if (!CKPT_RE.test(name))
    ckptFail('POINTER_INVALID', path, `holds ${JSON.stringify(name.slice(0, 60))}, not a checkpoint folder name (ckpt-NNNNNN)`);
  return name;
}

/** The checkpoint folders of a run, oldest first. */
export async function listCheckpoints(store: CheckpointStore, dir: string): Promise<CheckpointInfo[]> {
  const runDir = normalizePath(dir);
  const latest = await readLatest(store, runDir).catch(() => null);
  return (await store.list(runDir))
    .filter((e) => e.kind === 'directory' && CKPT_RE.test(e.name))
    .map((e) => e.name)
    .sort(byAge)
    .map((name) => ({ name, path: joinPath(runDir, name), iteration: sortKey(name)[0], latest: name === latest }));
}

// ---- save -------------------------------------------------------------------------------------------

/** What a checkpoint records of the state besides its tensors, taken at capture (the live state moves on). */
interface StateRecord {
  config: RunConfig;
  iteration: number;
  rng: number;
  metrics: IterationMetrics[];
}

/** Every file of the checkpoint but state.json, from tensors the reader holds. */
async function checkpointFiles(reader: TensorReader, state: TrainState, baseModel: string): Promise<Record<string, Uint8Array>> {
  const files: Record<string, Uint8Array | string> = {
    ...(await agentAdapterFiles(reader, state, baseModel)),
    [VALUE_HEAD_FILE]: await encodeValueHead(reader, state.critic),
    ...(await criticAdapterFiles(reader, state, baseModel)),
    [OPTIMIZER_FILE]: await encodeOptimizer(reader, state),
  };
  return Object.fromEntries(Object.entries(files).map(([p, d]) => [p, toBytes(d)]));
}

async function manifestFor(
  rec: StateRecord,
  slots: Record<string, number>,
  model: ModelDims,
  files: Record<string, Uint8Array>,
  baseModel: string,
): Promise<CheckpointManifest> {
  const records: FileRecord[] = [];
  for (const path of Object.keys(files).sort()) records.push({ path, bytes: files[path].length, sha256: await sha256Hex(files[path]) });
  const shared = rec.config.lora.mode === 'shared';
  const body: Omit<CheckpointManifest, 'sha256'> = {
    format: CHECKPOINT_FORMAT,
    version: CHECKPOINT_VERSION,
    iteration: rec.iteration,
    rng: rec.rng,
    baseModel,
    savedAt: new Date().toISOString(),
    model,
    adapters: {
      mode: rec.config.lora.mode,
      note: shared ? 'shared LoRA: every role folder holds the same adapter (slot 0)' : 'per-agent LoRA: one adapter per role',
      roles: Object.fromEntries(Object.entries(slots).map(([role, slot]) => [role, { slot, dir: agentDir(role) }])),
    },
    metrics: rec.metrics,
    files: records,
  };
  return { ...body, sha256: await sha256Hex(toBytes(stringifyExact(body))) };
}

/** The base model's dims as the state's tensors show them (saveCheckpoint has no ModelConfig). */
function dimsFromState(state: TrainState): ModelDims {
  const linear: ModelDims['linear'] = {};
  const layer0 = state.policy.layers[0] ?? {};
  for (const m of LINEAR_MODULES) {
    const p = layer0[m];
    if (p) linear[m] = [p.A.shape[2], p.B.shape[1]];
  }
  return { numLayers: state.policy.layers.length, hiddenSize: state.critic.C, linear };
}

/** A checkpoint in memory: every file, state.json included, ready to write or to load from (memoryStore). */
export interface CheckpointFiles {
  iteration: number;
  manifest: CheckpointManifest;
  files: Record<string, Uint8Array>;
}

/**
 * A snapshot of the state taken between iterations: `read` resolves once its tensors are on the CPU (from
 * then on it survives the device), `ready` once its files are made.
 */
export interface CapturedCheckpoint {
  iteration: number;
  read: Promise<void>;
  ready: Promise<CheckpointFiles>;
}

/**
 * Snapshots `state` for a checkpoint: every tensor's copy is recorded and submitted before this returns
 * (one readback, see gpu/prefetch.ts), and the iteration, RNG, metrics and config are taken now, so the
 * state may change right after. `read` resolves when the readback arrives, `ready` with the files made
 * from it; nothing is written anywhere (writeCheckpoint does that).
 */
export function captureCheckpoint(gpu: Gpu, state: TrainState, baseModel: string): CapturedCheckpoint {
  const reader = prefetch(gpu, checkpointTensors(state));
  const rec: StateRecord = { config: state.config, iteration: state.iteration, rng: state.rng.state >>> 0, metrics: state.metrics.slice() };
  const view: TrainState = { ...state, config: rec.config }; // the tensors of now, through the reader
  const slots = agentSlotMap(view);
  const dims = dimsFromState(view);
  const ready = (async (): Promise<CheckpointFiles> => {
    const files = {
      [CONFIG_FILE]: toBytes(JSON.stringify(rec.config, null, 2) + '\n'),
      ...(await checkpointFiles(reader, view, baseModel)),
    };
    const manifest = await manifestFor(rec, slots, dims, files, baseModel);
    return { iteration: rec.iteration, manifest, files: { ...files, [STATE_FILE]: toBytes(stringifyExact(manifest, 2) + '\n') } };
  })();
  ready.catch(() => {}); // awaited by whoever writes or loads it; a capture nobody uses must not be an unhandled rejection
  return { iteration: rec.iteration, read: reader.arrived, ready };
}

/**
 * Saves `state` as a new checkpoint folder of the run folder `dir` and points `latest` at it; keeps the
 * newest `keep` checkpoints. Every tensor is read from the GPU before the first write.
 */
export async function saveCheckpoint(
  gpu: Gpu,
  state: TrainState,
  store: CheckpointStore,
  dir: string,
  opts: SaveOptions,
): Promise<SavedCheckpoint> {
  const captured = captureCheckpoint(gpu, state, opts.baseModel);
  return writeCheckpoint(await captured.ready, store, dir, opts.keep);
}

/**
 * Writes a captured checkpoint into the run folder `dir` as a new checkpoint folder, then points `latest`
 * at it (the commit, last); keeps the newest `keep` checkpoints (default 3, 0 = all).
 */
export async function writeCheckpoint(ckpt: CheckpointFiles, store: CheckpointStore, dir: string, keep = 3): Promise<SavedCheckpoint> {
  const runDir = normalizePath(dir);
  if (!(Number.isInteger(keep) && keep >= 0)) throw new RangeError(`writeCheckpoint: keep must be an integer >= 0, got ${keep}`);
  const { manifest, files } = ckpt;
  const warnings: string[] = [];

  // Leftovers of an interrupted save.
  for (const e of await store.list(runDir)) {
    if (e.name.startsWith(TMP_PREFIX))
      await store.remove(joinPath(runDir, e.name)).catch((err) => warnings.push(`could not remove ${e.name}: ${errorMessage(err)}`));
  }

  const base = checkpointName(ckpt.iteration);
  const tmp = joinPath(runDir, `${TMP_PREFIX}${base}-${nonce()}`);
  for (const rec of manifest.files) await store.write(joinPath(tmp, rec.path), files[rec.path]);
  await store.write(joinPath(tmp, STATE_FILE), files[STATE_FILE]);

  // A fresh name: saving the same iteration twice (a retry after a crash) never replaces a folder.
  let name = base;
  for (let i = 1; (await store.stat(joinPath(runDir, name))) !== null; i++) name = `${base}-${i}`;
  await store.rename(tmp, joinPath(runDir, name));
  await store.write(joinPath(runDir, LATEST_FILE), `${name}\n`); // the commit

  const removed: string[] = [];
  if (keep > 0) {
    const all = (await listCheckpoints(store, runDir)).map((c) => c.name);
    const kept = new Set([...all.slice(-keep), name]);
    for (const old of all) {
      if (kept.has(old)) continue;
      try {
        await store.remove(joinPath(runDir, old));
        removed.push(old);
      } catch (e) {
        warnings.push(`could not remove ${old}: ${errorMessage(e)}`);
      }
    }
  }
  return { name, path: joinPath(runDir, name), manifest, removed, warnings };
}

// ---- load -------------------------------------------------------------------------------------------

/**
 * The checkpoint folder `dir` means: the one its `latest` names (a run folder), or `dir` itself when it
 * holds state.json (a checkpoint folder, e.g. an imported zip at the store's root).
 */
export async function resolveCheckpoint(store: CheckpointStore, dir: string): Promise<string> {
  const d = normalizePath(dir);
  const latest = await readLatest(store, d);
  if (latest !== null) {
    const path = joinPath(d, latest);
    if ((await store.stat(path)) !== 'directory')
      ckptFail('POINTER_INVALID', joinPath(d, LATEST_FILE), `names ${latest}, which is not in the run folder`);
    return path;
  }
  if ((await store.stat(joinPath(d, STATE_FILE))) === 'file') return d;
  return ckptFail('NO_CHECKPOINT', d || store.name, `no ${LATEST_FILE} pointer and no ${STATE_FILE} here`);
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isUint = (v: unknown, max = Number.MAX_SAFE_INTEGER): v is number =>
  typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= max;

/** Parses state.json and checks its shape and its own checksum. */
export async function parseManifest(bytes: Uint8Array, file = STATE_FILE): Promise<CheckpointManifest> {
  const bad = (msg: string): never => ckptFail('STATE_INVALID', file, msg);
  let m: unknown;
  try {
    m = parseExact(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch (e) {
    return bad(`not valid JSON (${errorMessage(e)})`);
  }
  if (!isObj(m)) return bad('not a JSON object');
  if (m.format !== CHECKPOINT_FORMAT) bad(`"format" is ${JSON.stringify(m.format)}, expected "${CHECKPOINT_FORMAT}"`);
  if (!isUint(m.version) || m.version < 1) bad(`"version" is ${JSON.stringify(m.version)}`);
  if ((m.version as number) > CHECKPOINT_VERSION) {
    throw new CheckpointError(
      'STATE_INVALID',
      file,
      `format version ${m.version} is newer than this lab reads (${CHECKPOINT_VERSION})`,
      'Update the lab to the version that wrote this checkpoint.',
    );
  }
  if (typeof m.sha256 !== 'string') bad('"sha256" (the file\'s own checksum) is missing');
  const { sha256, ...body } = m;
  if ((await sha256Hex(toBytes(stringifyExact(body)))) !== sha256)
    bad('its own SHA-256 does not match its content: the file is corrupted or was edited');
  if (!isUint(m.iteration)) bad(`"iteration" must be an integer >= 0, got ${JSON.stringify(m.iteration)}`);
  if (!isUint(m.rng, 0xffffffff)) bad(`"rng" must be a u32, got ${JSON.stringify(m.rng)}`);
  if (typeof m.baseModel !== 'string') bad('"baseModel" must be a string');
  if (!Array.isArray(m.metrics) || m.metrics.some((x) => !isObj(x))) bad('"metrics" must be a list of objects');
  const dims = m.model;
  if (!isObj(dims) || !isUint(dims.numLayers) || !isUint(dims.hiddenSize) || !isObj(dims.linear))
    bad('"model" must be {numLayers, hiddenSize, linear}');
  const ad = m.adapters;
  if (!isObj(ad) || (ad.mode !== 'shared' && ad.mode !== 'per_agent') || !isObj(ad.roles)) bad('"adapters" must be {mode, roles}');
  if (!Array.isArray(m.files)) bad('"files" must be a list');
  const seen = new Set<string>();
  for (const f of m.files as unknown[]) {
    if (!isObj(f) || typeof f.path !== 'string' || !isUint(f.bytes) || typeof f.sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(f.sha256)) {
      bad(`"files" has an entry that is not {path, bytes, sha256}: ${JSON.stringify(f).slice(0, 100)}`);
    }
    const p = (f as Record<string, unknown>).path as string;
    try {
      if (normalizePath(p) !== p || p === '' || p === STATE_FILE) throw new Error('bad');
    } catch {
      bad(`"files" lists an invalid path ${JSON.stringify(p)}`);
    }
    if (seen.has(p)) bad(`"files" lists ${p} twice`);
    seen.add(p);
  }
  return m as unknown as CheckpointManifest;
}

export interface VerifiedCheckpoint {
  /** The checkpoint folder in the store. */
  path: string;
  manifest: CheckpointManifest;
  /** Every listed file (relative path -> bytes), sizes and checksums verified; state.json included. */
  files: Record<string, Uint8Array>;
}

/** Reads a checkpoint folder and verifies every file against state.json. */
export async function readCheckpointFiles(store: CheckpointStore, dir: string): Promise<VerifiedCheckpoint> {
  const path = await resolveCheckpoint(store, dir);
  const rel = (p: string): string => joinPath(path, p);
  const stateBytes = await store.read(rel(STATE_FILE)).catch((e) => {
    if (e instanceof CheckpointError && e.code === 'FILE_MISSING')
      ckptFail('FILE_MISSING', rel(STATE_FILE), 'the checkpoint has no state.json (an unfinished save?)');
    throw e;
  });
  const manifest = await parseManifest(stateBytes, rel(STATE_FILE));
  const files: Record<string, Uint8Array> = { [STATE_FILE]: stateBytes };
  for (const f of manifest.files) {
    let bytes: Uint8Array;
    try {
      bytes = await store.read(rel(f.path));
    } catch (e) {
      if (e instanceof CheckpointError && e.code === 'FILE_MISSING')
        ckptFail('FILE_MISSING', rel(f.path), 'listed in state.json but not in the checkpoint folder');
      throw e;
    }
    if (bytes.length < f.bytes)
      ckptFail('FILE_TRUNCATED', rel(f.path), `is ${bytes.length} bytes, state.json records ${f.bytes}: the file is truncated`);
    if (bytes.length > f.bytes) ckptFail('FILE_SIZE', rel(f.path), `is ${bytes.length} bytes, state.json records ${f.bytes}`);
    if ((await sha256Hex(bytes)) !== f.sha256)
      ckptFail(
        'CHECKSUM',
        rel(f.path),
        `SHA-256 differs from the one state.json records (${f.sha256.slice(0, 12)}...): the file is corrupted`,
      );
    files[f.path] = bytes;
  }
  return { path, manifest, files };
}

function checkModel(dims: ModelDims, model: ModelConfig, config: RunConfig, file: string): void {
  const want = modelDims(model, config.lora.targets);
  const problems: string[] = [];
  if (dims.numLayers !== want.numLayers) problems.push(`${dims.numLayers} layers (this model has ${want.numLayers})`);
  if (dims.hiddenSize !== want.hiddenSize) problems.push(`hidden size ${dims.hiddenSize} (this model has ${want.hiddenSize})`);
  for (const m of config.lora.targets) {
    const [i, o] = dims.linear[m] ?? [];
    const [wi, wo] = want.linear[m]!;
    if (i !== wi || o !== wo) problems.push(`${m} ${i ?? '?'} -> ${o ?? '?'} (this model has ${wi} -> ${wo})`);
  }
  if (problems.length) ckptFail('MODEL_MISMATCH', file, `the checkpoint was made for a base model with ${problems.join(', ')}`);
}

/** Loads the adapter in folder `dir` into `slot` of `set` (the policy's or the critic's), checking it against the run's LoRA settings. */
function loadAdapter(
  gpu: Gpu,
  set: LoraSet,
  model: ModelConfig,
  config: RunConfig,
  files: Record<string, Uint8Array>,
  root: string,
  dir: string,
  what: string,
  slot: number,
): void {
  const cfgPath = `${dir}/${ADAPTER_CONFIG_FILE}`;
  const wPath = `${dir}/${ADAPTER_WEIGHTS_FILE}`;
  for (const p of [cfgPath, wPath])
    if (!files[p]) ckptFail('FILE_MISSING', joinPath(root, p), `the adapter of ${what} is not in state.json's file list`);
  const { lora } = config;
  try {
    const a = readPeftAdapter({ [ADAPTER_CONFIG_FILE]: files[cfgPath], [ADAPTER_WEIGHTS_FILE]: files[wPath] }, model);
    const c = a.config;
    const targets = [...c.targetModules].sort().join(', ');
    const want = [...lora.targets].sort().join(', ');
    if (c.r !== lora.r || c.loraAlpha !== lora.alpha || c.useRslora || targets !== want || c.layersToTransform) {
      ckptFail(
        'ADAPTER_INVALID',
        joinPath(root, cfgPath),
        `r ${c.r}, alpha ${c.loraAlpha}, targets [${targets}]${c.useRslora ? ', rslora' : ''}${c.layersToTransform ? ', layers_to_transform' : ''}; config.json lora has r ${lora.r}, alpha ${lora.alpha}, targets [${want}]`,
      );
    }
    if (loraScale(c) !== set.scale)
      ckptFail('ADAPTER_INVALID', joinPath(root, cfgPath), `scale ${loraScale(c)} differs from the run's ${set.scale}`);
    setLoraSlot(gpu, set, slot, a);
  } catch (e) {
    if (e instanceof CheckpointError) throw e;
    ckptFail('ADAPTER_INVALID', joinPath(root, dir), `${what}: ${errorMessage(e).split('\n')[0]}`);
  }
}

/**
 * Loads the checkpoint `dir` names (a run folder with `latest`, or a checkpoint folder) for the base model
 * `model`: a new TrainState from its config.json, then every tensor, the RNG, iteration and metrics
 * overwritten from the files. Everything is verified (sizes, SHA-256, names, shapes) and a problem is a
 * CheckpointError naming the file. The caller owns the returned state (releaseTrainState).
 */
export async function loadCheckpoint(gpu: Gpu, store: CheckpointStore, dir: string, model: ModelConfig): Promise<TrainState> {
  const { path, manifest, files } = await readCheckpointFiles(store, dir);
  const rel = (p: string): string => joinPath(path, p);
  for (const p of [CONFIG_FILE, VALUE_HEAD_FILE, OPTIMIZER_FILE])
    if (!files[p]) ckptFail('FILE_MISSING', rel(p), "not in state.json's file list");
  let config: RunConfig;
  try {
    config = parseRunConfig(new TextDecoder().decode(files[CONFIG_FILE]), { checkEnv: false });
  } catch (e) {
    return ckptFail('CONFIG_INVALID', rel(CONFIG_FILE), messageWithoutHint(errorMessage(e)));
  }
  checkModel(manifest.model, model, config, rel(STATE_FILE));
  const roles = config.graph.agents.map((a) => a.role);
  const listed = Object.keys(manifest.adapters.roles);
  if (manifest.adapters.mode !== config.lora.mode || listed.length !== roles.length || roles.some((r) => !listed.includes(r))) {
    ckptFail(
      'STATE_INVALID',
      rel(STATE_FILE),
      `adapters (${manifest.adapters.mode}: ${listed.join(', ')}) do not match config.json (lora.mode ${config.lora.mode}: ${roles.join(', ')})`,
    );
  }
  if (config.lora.mode === 'shared') {
    // Every role holds the shared adapter: the copies must agree.
    const sha = (p: string): string | undefined => manifest.files.find((f) => f.path === p)?.sha256;
    for (const file of [ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE]) {
      const first = sha(`${agentDir(roles[0])}/${file}`);
      for (const r of roles.slice(1)) {
        if (sha(`${agentDir(r)}/${file}`) !== first)
          ckptFail('ADAPTER_INVALID', rel(`${agentDir(r)}/${file}`), `shared LoRA mode, but it differs from ${agentDir(roles[0])}/${file}`);
      }
    }
  }

  const state = createTrainState(gpu, model, config);
  try {
    const slots = agentSlotMap(state);
    const done = new Set<number>();
    for (const role of roles) {
      const slot = slots[role];
      if (manifest.adapters.roles[role].slot !== slot)
        ckptFail(
          'STATE_INVALID',
          rel(STATE_FILE),
          `agent "${role}" is recorded in slot ${manifest.adapters.roles[role].slot}, the config puts it in slot ${slot}`,
        );
      if (done.has(slot)) continue;
      loadAdapter(gpu, state.policy, model, config, files, path, agentDir(role), `agent "${role}"`, slot);
      done.add(slot);
    }
    // critic.mode lora: slot = agent
    if (state.criticLora)
      roles.forEach((role, i) =>
        loadAdapter(gpu, state.criticLora!, model, config, files, path, criticDir(role), `the critic of agent "${role}"`, i),
      );
    decodeValueHead(gpu, state.critic, files[VALUE_HEAD_FILE], rel(VALUE_HEAD_FILE));
    decodeOptimizer(gpu, state, files[OPTIMIZER_FILE], rel(OPTIMIZER_FILE));
    state.iteration = manifest.iteration;
    state.rng.state = manifest.rng >>> 0;
    state.metrics = manifest.metrics;
  } catch (e) {
    releaseTrainState(gpu, state);
    throw e;
  }
  return state;
}

// ---- zips -------------------------------------------------------------------------------------------

/** The checkpoint `dir` names as a zip of its folder (files at the zip's root), after verifying it. */
export async function exportCheckpointZip(store: CheckpointStore, dir: string): Promise<Uint8Array> {
  const { files } = await readCheckpointFiles(store, dir);
  return zipFiles(files);
}

/**
 * The files of a checkpoint zip, keyed relative to the checkpoint folder (a single top folder, as a zip
 * of "ckpt-000012/" has, is stripped). Load them with loadCheckpoint(gpu, memoryStore(files), '', model).
 */
export function importCheckpointZip(bytes: Uint8Array, limits?: UnzipLimits): Record<string, Uint8Array> {
  const files = unzipFiles(bytes, limits);
  if (files[STATE_FILE]) return files;
  const tops = new Set(Object.keys(files).map((p) => p.split('/')[0]));
  const [top] = tops;
  if (tops.size === 1 && files[`${top}/${STATE_FILE}`]) {
    return Object.fromEntries(Object.entries(files).map(([p, b]) => [p.slice(top.length + 1), b]));
  }
  return ckptFail(
    'NO_CHECKPOINT',
    'zip',
    `no ${STATE_FILE} at the zip's root or in its single top folder (entries: ${Object.keys(files).slice(0, 5).join(', ')}${Object.keys(files).length > 5 ? ', ...' : ''})`,
  );
}

/** A memory store holding an imported checkpoint zip at its root. */
export const checkpointZipStore = (bytes: Uint8Array, limits?: UnzipLimits): CheckpointStore =>
  memoryStore(importCheckpointZip(bytes, limits));

/** Every file under a store folder (re-exported for callers listing what a checkpoint holds). */
export { listFiles };
